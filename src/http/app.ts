/**
 * createApp(deps) → a node:http request handler. It refuses malformed requests, routes, and hands
 * the request to a route handler (routes/*.ts), which parses what it needs, calls a use-case and
 * replies (reply.ts). It never listens: only the daemon does.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { randomBytes } from 'node:crypto'
import type { Config } from '../config/types.js'
import type { AuthService } from '../core/auth-service.js'
import type { ErrorCode } from '../errors.js'
import type { Keyring } from '../core/keys.js'
import type { MfaService } from '../core/mfa-service.js'
import type { RefusalLog } from '../core/refusal-log.js'
import { createRequestClientIp } from './client-ip.js'
import { createRefreshCookie } from './cookies.js'
import { createOriginPolicy, PREFLIGHT_HEADERS } from './cors.js'
import { createDeviceCookie } from './device-cookie.js'
import { Exchange } from './exchange.js'
import type { Metrics } from './metrics.js'
import { hostCount } from './raw-headers.js'
import { createReply, type HttpLogger, type RequestLog } from './reply.js'
import { createRouter, routePath, type RouteHandler } from './router.js'
import { accountRoutes } from './routes/account.js'
import { COOKIE_ROUTES, createRouteContext } from './routes/context.js'
import { mfaRoutes } from './routes/mfa.js'
import { publicRoutes } from './routes/public.js'
import { sessionRoutes } from './routes/session.js'
import { signInRoutes } from './routes/sign-in.js'

export interface AppDeps {
  /** validated and final (the daemon knows its port before it builds the app) */
  config: Config
  auth: AuthService
  /** a signed-in user's second factor (the /api/auth/mfa/* endpoints) */
  mfa: MfaService
  keyring: Keyring
  metrics: Metrics
  log: HttpLogger
  /**
   * Writes the one line per finished request (default: `log.info({reqId, method, route, status,
   * ms}, 'request')`). Every value in it is one the server made, so the daemon passes a writer
   * that builds the line by hand (daemon/logger.ts requestLineWriter): through pino, that line was
   * the largest cost of a /me after the signature check (docs/performance.md).
   */
  requestLog?: RequestLog
  /** store and keys loaded, not draining, and the store answers (/readyz) */
  ready: () => boolean | Promise<boolean>
  /**
   * Where the request lines of one client's junk (400, 404, 405, 431) are gathered, so that a
   * client sending thousands of them a second writes one line at once and one `request_repeated`
   * line per period (the rate-limit refusals' mechanism, core/refusal-log.ts). Without it every
   * request line is written.
   */
  repeats?: Pick<RefusalLog, 'repeat'>
}

/** two Host headers, or none in an HTTP/1.1 request (HTTP/1.0 needs none) */
function badHosts(req: IncomingMessage): boolean {
  const n = hostCount(req.rawHeaders)
  return n > 1 || (n === 0 && req.httpVersionMajor === 1 && req.httpVersionMinor === 1)
}

/** header lines a request may have: node keeps one more (server.ts), so more than this are seen */
export const MAX_HEADER_LINES = 100

export type Handler = (req: IncomingMessage, res: ServerResponse) => void

export function createApp(deps: AppDeps): Handler {
  const { config, log } = deps
  const refreshCookie = createRefreshCookie(config)
  const origins = createOriginPolicy(config)
  const clientIpOf = createRequestClientIp(config.server.trustProxy, { unixSocket: config.server.socket !== null })
  const reply = createReply({
    metrics: deps.metrics,
    log,
    requestLog: deps.requestLog ?? ((reqId, method, route, status, ms) => log.info({ reqId, method, route, status, ms }, 'request')),
    repeats: deps.repeats,
    refreshCookie,
  })
  const c = createRouteContext({ ...deps, reply, refreshCookie, deviceCookie: createDeviceCookie(config), origins })

  // a preflight of a cookie endpoint is a request like any other there: a foreign origin is
  // refused (no browser would go on without the CORS headers anyway); the CORS headers (or their
  // absence) are added for every /api/auth/* answer by `handle`
  const preflight: RouteHandler = (x) => {
    if (COOKIE_ROUTES.has(x.route)) c.checkOrigin(x)
    reply.empty(x, PREFLIGHT_HEADERS)
  }
  const route = createRouter({ ...signInRoutes(c), ...sessionRoutes(c), ...accountRoutes(c), ...mfaRoutes(c), ...publicRoutes(c) }, preflight)

  const bootId = randomBytes(4).toString('hex')
  let seq = 0
  return function handle(req, res) {
    const started = performance.now()
    const id = `${bootId}-${(++seq).toString(36)}`
    const url = req.url ?? ''
    // Malformed requests are refused whole, before any route: a target that is not a path
    // (absolute-form `GET http://host/…`, which node hands over as it came and which named
    // routes, and labels, of its own; `*`; `host:port`), more header lines than node keeps (those
    // past them would be dropped unread, an Origin or X-Forwarded-For among them), two Hosts, or
    // none in HTTP/1.1 (which requires one; node leaves that check to the app: server.ts).
    const malformed: ErrorCode | undefined =
      req.rawHeaders.length > 2 * MAX_HEADER_LINES ? 'HEADERS_TOO_LARGE' : url.charCodeAt(0) !== 47 || badHosts(req) ? 'BAD_REQUEST' : undefined
    if (malformed !== undefined) return reply.fail(new Exchange(req, res, id, 'unknown', started, clientIpOf), malformed)
    const path = routePath(url)
    let found = route(req.method ?? 'GET', path)
    // an escape left in a path is one of a reserved character (unreserved ones are decoded by
    // routePath), and names no route: not a parameter's value (`/sessions/%2F` is no session id)
    if (found !== null && found.store !== path && path.includes('%')) found = null
    const x = new Exchange(req, res, id, found === null ? 'unknown' : found.store, started, clientIpOf)
    if (found !== null && found.store !== path) x.params = found.params

    if (path.startsWith('/api/auth/')) origins.addHeaders(req, res)

    if (found === null) return reply.fail(x, 'NOT_FOUND')
    try {
      const p = found.handler(x)
      if (p !== undefined) p.catch((err: unknown) => reply.error(x, err))
    } catch (err) {
      reply.error(x, err)
    }
  }
}
