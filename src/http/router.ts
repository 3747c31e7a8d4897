/** The routing table: which handler answers a method and path, and the route template it is counted under. */
import { METHODS } from 'node:http'
import FindMyWay, { type HTTPMethod } from 'find-my-way'
import { AppError } from '../errors.js'
import type { Exchange } from './exchange.js'

export type RouteHandler = (x: Exchange) => Promise<void> | void

/** path (a template: `/api/auth/sessions/:id`) → method → handler */
export type Routes = Record<string, Partial<Record<string, RouteHandler>>>

/** A route found: find-my-way's own answer, so nothing more is allocated per request. */
export interface Found {
  readonly handler: RouteHandler
  /** the route template: the metrics and log label */
  readonly store: string
  /** the parameters of a parametric route (`:id`), as decoded */
  readonly params: Readonly<Record<string, string | undefined>>
}

export type Router = (method: string, path: string) => Found | null

/** the methods a known path answers 405 to when it does not serve them */
const REFUSABLE: ReadonlySet<string> = new Set(METHODS.filter((m) => m !== 'CONNECT'))

/**
 * Every method of a known path is routed: those the route does not serve answer 405 with Allow;
 * HEAD is answered by GET, OPTIONS under /api/auth/ by `preflight`. Static paths find-my-way
 * looks up without walking its tree; `:id` takes any one segment (a session id of any length
 * reaches its handler, which answers for it) but not an empty one, which names nothing.
 *
 * Only the methods a path serves are registered with it; a path asked for with another method
 * is found in a second table of the paths alone, which holds each path's 405. (Registering each of
 * the 34 methods with each path was 4 % of the daemon's start-up, for the 405s of requests that
 * hardly ever come.)
 */
export function createRouter(routes: Routes, preflight: RouteHandler): Router {
  const options = { ignoreTrailingSlash: false, caseSensitive: true, maxParamLength: 16384 }
  const router = FindMyWay(options)
  // path → the 405 of the methods it does not serve, registered under GET
  const refusals = FindMyWay(options)
  for (const [path, methods] of Object.entries(routes)) {
    const api = path.startsWith('/api/auth/')
    const served: Record<string, RouteHandler> = {}
    for (const [method, handler] of Object.entries(methods)) if (handler !== undefined) served[method] = handler
    if (api) served.OPTIONS ??= preflight
    if (methods.GET !== undefined) served.HEAD ??= methods.GET
    const allow = Object.keys(served).join(', ')
    const notAllowed: RouteHandler = (x) => {
      x.res.setHeader('allow', allow)
      throw new AppError('METHOD_NOT_ALLOWED')
    }
    // the path is the route's store: the metrics and log label is always a template
    for (const [method, handler] of Object.entries(served)) router.on(method as HTTPMethod, path, handler as never, path)
    refusals.on('GET', path, notAllowed as never, path)
  }
  return (method, path) => {
    let found: Found | null
    try {
      found = router.find(method as HTTPMethod, path) as Found | null
      // a method of node:http's that this path does not serve: 405. CONNECT never gets here
      // (node:http hands it to its own event) and names no route, nor does a method nobody knows.
      if (found === null && REFUSABLE.has(method)) found = refusals.find('GET', path) as Found | null
    } catch {
      return null
    }
    // a parametric route (`/api/auth/sessions/:id`) with an empty segment names nothing
    if (found !== null && found.store !== path && Object.values(found.params).includes('')) return null
    return found
  }
}

const UNRESERVED = /^[A-Za-z0-9._~-]$/

/**
 * The path a request names, for the router: without the query string or a fragment, and
 * with percent-encoded unreserved characters decoded (`/api/auth/%6De` is `/api/auth/me`, as
 * RFC 3986 6.2.2.2 makes it); any other escape (`%2F`, `%00`, a broken one) stays as it is, so it
 * names no route.
 */
export function routePath(url: string): string {
  let end = url.length
  const q = url.indexOf('?')
  if (q !== -1) end = q
  const h = url.indexOf('#')
  if (h !== -1 && h < end) end = h
  const path = end === url.length ? url : url.slice(0, end)
  if (!path.includes('%')) return path
  return path.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16))
    return UNRESERVED.test(c) ? c : escape
  })
}
