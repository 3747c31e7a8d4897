/**
 * createApp(deps) → a node:http request handler. It parses (route, body, client ip, cookies),
 * calls a use-case, and replies. It never listens: only the daemon does.
 */
import { METHODS, type IncomingMessage, type ServerResponse } from 'node:http'
import { randomBytes } from 'node:crypto'
import FindMyWay, { type HTTPMethod } from 'find-my-way'
import type { Config } from '../config/types.js'
import type { AuthService, ClientContext, MfaChallenge, SignedIn } from '../core/auth-service.js'
import type { MfaService } from '../core/mfa-service.js'
import { AppError, errorRegistry, isAppError, isHttpError, type ErrorCode, type HttpErrorCode } from '../errors.js'
import type { Keyring } from '../core/keys.js'
import { readJsonBody } from './body.js'
import { createClientIp, type ClientIp, type ClientIpResolver } from './client-ip.js'
import { createRefreshCookie } from './cookies.js'
import { createOriginPolicy } from './cors.js'
import { createDeviceCookie } from './device-cookie.js'
import type { Metrics } from './metrics.js'
import type { RefusalLog } from '../core/refusal-log.js'

export interface HttpLogger {
  info(obj: object, msg?: string): void
  warn(obj: object, msg?: string): void
  error(obj: object, msg?: string): void
}

export interface AppDeps {
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
   * that builds the line by hand (logger.ts requestLineWriter): through pino, that line was the
   * largest cost of a /me after the signature check (docs/performance.md).
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

/** header lines a request may have: node keeps one more (server.ts), so more than this are seen */
export const MAX_HEADER_LINES = 100

export type Handler = (req: IncomingMessage, res: ServerResponse) => void

export type RequestLog = (reqId: string, method: string, route: string, status: number, ms: number) => void

/**
 * One request in flight, as the route handlers see it. A class rather than an object of
 * closures: nothing is allocated per request beyond this, and the client context (address
 * parsing) is computed only by the handlers that ask for it.
 */
class Exchange {
  private ctx: ClientContext | undefined
  /** the route's parameters (`:id`), as the router decoded them */
  params: Readonly<Record<string, string | undefined>> = NO_PARAMS
  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly id: string,
    readonly route: string,
    /** performance.now() when the request arrived */
    readonly started: number,
    private readonly clientIp: (req: IncomingMessage) => ClientIp,
  ) {}

  client(): ClientContext {
    if (this.ctx === undefined) {
      const c = this.clientIp(this.req)
      const ua = firstHeader(this.req, 'user-agent')
      this.ctx = { ip: c.ip, ipKey: c.key, userAgent: typeof ua === 'string' ? ua : '' }
    }
    return this.ctx
  }
}

const NO_PARAMS: Readonly<Record<string, string | undefined>> = Object.freeze({})

type RouteHandler = (x: Exchange) => Promise<void> | void

export function createApp(deps: AppDeps): Handler {
  const { config, auth, mfa, keyring, metrics, log } = deps
  const requestLog: RequestLog = deps.requestLog ?? ((reqId, method, route, status, ms) => log.info({ reqId, method, route, status, ms }, 'request'))
  const cookie = createRefreshCookie(config)
  const device = createDeviceCookie(config)
  const origins = createOriginPolicy(config)
  const clientIpOf = clientIpMemo(createClientIp(config.server.trustProxy, { unixSocket: config.server.socket !== null }))
  const bodyLimit = config.server.bodyLimit
  const bootId = randomBytes(4).toString('hex')
  let seq = 0

  // The request is counted and logged when its response is handed to the socket, by whichever
  // code wrote it (send, jwks, metrics, preflight): no per-request 'finish' listener.
  const repeats = deps.repeats
  const finished = (x: Exchange, status: number): void => {
    const ms = performance.now() - x.started
    const method = x.req.method ?? ''
    metrics.observe(x.route, method, status, ms / 1000)
    const rounded = Math.round(ms * 100) / 100
    if (repeats !== undefined && (status === 404 || status === 405 || status === 400 || status === 431)) {
      // keyed by the limiter's key (an IPv6 client by its /64): a client cannot get a line per address
      const c = x.client()
      repeats.repeat(`request ${status} ${c.ipKey}`, () => requestLog(x.id, method, x.route, status, rounded), { event: 'request_repeated', ip: c.ip, status }, 'request')
    } else requestLog(x.id, method, x.route, status, rounded)
  }

  const send = (x: Exchange, status: number, body: unknown, extra?: Record<string, string | string[]>): void => {
    const text = JSON.stringify(body)
    sendText(x, status, text, Buffer.byteLength(text), extra)
  }
  /** `text` is JSON, `length` its size in bytes */
  const sendText = (x: Exchange, status: number, text: string, length: number, extra?: Record<string, string | string[]>): void => {
    // an object literal of one fixed shape: a constant spread into a fresh object, with keys
    // added after it, cost 12–20 µs more per response under load (measured, docs/performance.md)
    const headers: Record<string, string | string[] | number> = {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'x-request-id': x.id,
      'content-length': length,
    }
    if (extra !== undefined) for (const k in extra) headers[k] = extra[k]!
    x.res.writeHead(status, headers)
    x.res.end(text)
    finished(x, status)
  }
  const ok = (x: Exchange, status: number, data: object, headers?: Record<string, string | string[]>): void =>
    send(x, status, { success: true, data }, headers)

  const sendError = (x: Exchange, err: unknown): void => {
    if (x.res.headersSent) return
    // the store's database cannot be reached: try again in a second (never a 500); its detail
    // is for logs and authctl, the client gets the registry's sentence
    if (isAppError(err) && err.code === 'STORE_UNAVAILABLE') return fail(x, 'STORE_UNAVAILABLE', 1)
    // an error of the store's or authctl's (no status) is a fault here, like any other
    if (!isHttpError(err)) {
      log.error({ reqId: x.id, err }, 'unexpected error')
      return fail(x, 'INTERNAL')
    }
    fail(x, err.code, err.retryAfterS, err.message)
  }

  /** the error answer for `code`: its status, its message (unless given filled in), its headers */
  const fail = (x: Exchange, code: HttpErrorCode, retryAfterS?: number, message: string = errorRegistry[code].message): void => {
    const headers: Record<string, string | string[]> = {}
    if (retryAfterS !== undefined) headers['retry-after'] = String(retryAfterS)
    if (code === 'UNAUTHORIZED') headers['www-authenticate'] = 'Bearer'
    if (code === 'INVALID_ACCESS_TOKEN') headers['www-authenticate'] = 'Bearer error="invalid_token"'
    if (code === 'INVALID_REFRESH_TOKEN') headers['set-cookie'] = cookie.clear()
    if (code === 'BODY_TOO_LARGE' || code === 'BAD_REQUEST' || code === 'HEADERS_TOO_LARGE') headers.connection = 'close'
    send(x, errorRegistry[code].status, { success: false, message }, headers)
  }

  const signedIn = (x: Exchange, status: number, s: SignedIn): void =>
    ok(
      x,
      status,
      { accessToken: s.accessToken, tokenType: 'Bearer', expiresIn: s.expiresIn, user: s.user },
      { 'set-cookie': s.deviceCookie === undefined ? cookie.set(s.refreshToken) : [cookie.set(s.refreshToken), device.set(s.deviceCookie)] },
    )
  /** a login's answer: signed in, or (a second factor is on) the mfaRequired step, with no cookie at all */
  const loggedIn = (x: Exchange, s: SignedIn | MfaChallenge): void =>
    'mfaRequired' in s ? ok(x, 200, { mfaRequired: true, mfaToken: s.mfaToken, methods: MFA_METHODS, expiresIn: s.expiresIn }) : signedIn(x, 200, s)
  /** the client, with the device cookies its request carried (login, register) */
  const withDevices = (x: Exchange): ClientContext => ({ ...x.client(), devices: device.read(x.req.headers.cookie) })

  /** a login counted by login.per_ip: refused (429), or read and checked */
  const afterAdmit = (x: Exchange, refused: { retryAfterS: number } | undefined): Promise<void> | void => {
    checkOrigin(x)
    if (refused !== undefined) return fail(x, 'TOO_MANY_LOGINS', refused.retryAfterS)
    // the body is read only when the use-case awaits it
    let read: Promise<Record<string, unknown>> | undefined
    const body: PromiseLike<Record<string, unknown>> = { then: (ok, fail) => (read ??= readJsonBody(x.req, bodyLimit)).then(ok, fail) }
    return auth.login(body, withDevices(x), true).then((s) => loggedIn(x, s))
  }

  // cookie endpoints refuse foreign browser origins before touching anything
  const checkOrigin = (x: Exchange): void => {
    const origin = joinedHeader(x.req, 'origin')
    if (!origins.cookieAllowed(origin)) throw new AppError('FORBIDDEN_ORIGIN')
  }

  const routes: Record<string, Partial<Record<string, RouteHandler>>> = {
    '/api/auth/login': {
      POST: (x) => {
        // login.per_ip counts every login request, malformed ones and foreign origins too
        // (README, "Rate limits"), so it is charged before anything else is looked at; a login it
        // refuses is answered here and then (with the in-process limiter, without a promise), and
        // its body is never parsed (node discards it once the 429 is written). A foreign origin is
        // still told 403 first.
        const admitted = auth.admitLogin(x.client())
        return admitted instanceof Promise ? admitted.then((refused) => afterAdmit(x, refused)) : afterAdmit(x, admitted)
      },
    },
    '/api/auth/login/mfa': {
      POST: async (x) => {
        checkOrigin(x)
        const body = await readJsonBody(x.req, bodyLimit)
        signedIn(x, 200, await auth.loginMfa(body, withDevices(x)))
      },
    },
    '/api/auth/mfa/totp/setup': {
      POST: async (x) => {
        const who = await auth.authenticate(firstHeader(x.req, 'authorization'))
        await readJsonBody(x.req, bodyLimit)
        ok(x, 200, await mfa.setup(who))
      },
    },
    '/api/auth/mfa/totp/confirm': {
      POST: async (x) => {
        const who = await auth.authenticate(firstHeader(x.req, 'authorization'))
        ok(x, 200, await mfa.confirm(who, await readJsonBody(x.req, bodyLimit), x.client()))
      },
    },
    '/api/auth/mfa/totp/disable': {
      POST: async (x) => {
        const who = await auth.authenticate(firstHeader(x.req, 'authorization'))
        await mfa.disable(who, await readJsonBody(x.req, bodyLimit), x.client())
        ok(x, 200, {})
      },
    },
    '/api/auth/mfa/recovery-codes': {
      POST: async (x) => {
        const who = await auth.authenticate(firstHeader(x.req, 'authorization'))
        ok(x, 200, await mfa.newRecoveryCodes(who, await readJsonBody(x.req, bodyLimit), x.client()))
      },
    },
    '/api/auth/register': {
      POST: async (x) => {
        checkOrigin(x)
        const body = await readJsonBody(x.req, bodyLimit)
        signedIn(x, 201, await auth.register(body, withDevices(x)))
      },
    },
    '/api/auth/refresh': {
      POST: async (x) => {
        checkOrigin(x)
        await readJsonBody(x.req, bodyLimit)
        const header = x.req.headers.cookie
        if (cookie.ambiguous(header)) {
          // a planted second cookie: nothing is touched and nothing cleared (cookies.ts)
          metrics.events.refresh('invalid')
          return send(x, 401, { success: false, message: errorRegistry.INVALID_REFRESH_TOKEN.message })
        }
        signedIn(x, 200, await auth.refresh(cookie.read(header), x.client()))
      },
    },
    '/api/auth/logout': {
      POST: async (x) => {
        checkOrigin(x)
        const body = await readJsonBody(x.req, bodyLimit)
        const header = x.req.headers.cookie
        // a planted second cookie: nothing is touched and nothing cleared (cookies.ts)
        if (cookie.ambiguous(header)) return ok(x, 200, {})
        await auth.logout(cookie.read(header), body, x.client())
        ok(x, 200, {}, { 'set-cookie': cookie.clear() })
      },
    },
    '/api/auth/me': {
      // the body comes made (core/me-view.ts keeps it with the user it answers)
      GET: (x) => auth.me(firstHeader(x.req, 'authorization')).then((me) => sendText(x, 200, me.body, me.bytes)),
    },
    // a signed-in user's own account (README, "Your own account"): the token is checked before
    // the body is read
    '/api/auth/password': {
      POST: async (x) => {
        const who = await auth.authenticate(firstHeader(x.req, 'authorization'))
        const body = await readJsonBody(x.req, bodyLimit)
        // the device cookie counts as at login: a wrong current password is a failed login
        await auth.account.changePassword(who, body, withDevices(x))
        ok(x, 200, {})
      },
    },
    '/api/auth/sessions': {
      GET: async (x) => ok(x, 200, { sessions: await auth.account.sessions(await auth.authenticate(firstHeader(x.req, 'authorization'))) }),
    },
    '/api/auth/sessions/:id': {
      DELETE: async (x) => {
        const who = await auth.authenticate(firstHeader(x.req, 'authorization'))
        await auth.account.revokeSession(who, x.params.id ?? '', x.client())
        ok(x, 200, {})
      },
    },
    '/.well-known/jwks.json': {
      GET: async (x) => {
        // the keys as the store has them now: one read of its keys version
        await keyring.refresh()
        const text = JSON.stringify(keyring.jwks())
        x.res.writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'cache-control': 'public, max-age=300',
          'x-content-type-options': 'nosniff',
          'x-request-id': x.id,
          'content-length': Buffer.byteLength(text),
        })
        x.res.end(text)
        finished(x, 200)
      },
    },
    '/healthz': { GET: (x) => ok(x, 200, { status: 'ok' }) },
    '/readyz': {
      GET: async (x) => {
        if (!(await deps.ready())) throw new AppError('NOT_READY')
        ok(x, 200, { status: 'ready' })
      },
    },
  }
  if (config.metrics.enabled) {
    routes['/metrics'] = {
      GET: async (x) => {
        const text = await metrics.registry.metrics()
        x.res.writeHead(200, {
          'content-type': metrics.registry.contentType,
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
          'x-request-id': x.id,
        })
        x.res.end(text)
        finished(x, 200)
      },
    }
  }

  // Every method of a known path is routed: those the route does not serve answer 405 with Allow.
  // Static paths find-my-way looks up without walking its tree; `:id` takes any one segment (a
  // session id of any length reaches its handler, which answers for it).
  const router = FindMyWay({ ignoreTrailingSlash: false, caseSensitive: true, maxParamLength: 16384 })
  for (const [path, methods] of Object.entries(routes)) {
    const allowed = Object.keys(methods)
    if (path.startsWith('/api/auth/')) allowed.push('OPTIONS')
    if (allowed.includes('GET')) allowed.push('HEAD')
    const allow = allowed.join(', ')
    for (const method of METHODS) {
      if (method === 'CONNECT') continue
      const handler: RouteHandler =
        methods[method] ??
        (method === 'OPTIONS' && path.startsWith('/api/auth/')
          ? preflight
          : method === 'HEAD' && methods.GET !== undefined
            ? methods.GET
            : (x) => {
                x.res.setHeader('allow', allow)
                throw new AppError('METHOD_NOT_ALLOWED')
              })
      try {
        // the path is the route's store: the metrics and log label is always a template
        router.on(method as HTTPMethod, path, handler as never, path)
      } catch {
        // a method node:http knows and find-my-way does not: such requests answer 404
      }
    }
  }

  function preflight(x: Exchange): void {
    // a preflight of a cookie endpoint is a request like any other there: a foreign origin is
    // refused (no browser would go on without the CORS headers anyway)
    if (COOKIE_ROUTES.has(x.route)) checkOrigin(x)
    // the CORS headers (or their absence) are added for every /api/auth/* response below
    x.res.writeHead(204, {
      'access-control-allow-methods': 'GET, POST, DELETE',
      'access-control-allow-headers': 'Content-Type, Authorization',
      'access-control-max-age': '600',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'x-request-id': x.id,
    })
    x.res.end()
    finished(x, 204)
  }

  return function handle(req, res) {
    const started = performance.now()
    const id = `${bootId}-${(++seq).toString(36)}`
    const url = req.url ?? ''
    // Malformed requests are refused whole, before any route: a target that is not a path
    // (absolute-form `GET http://host/…`, which node hands over as it came and which named
    // routes, and labels, of its own; `*`; `host:port`), more header lines than node keeps (those
    // past them would be dropped unread, an Origin or X-Forwarded-For among them), two Hosts.
    const malformed: ErrorCode | undefined =
      req.rawHeaders.length > 2 * MAX_HEADER_LINES ? 'HEADERS_TOO_LARGE' : url.charCodeAt(0) !== 47 || hostCount(req.rawHeaders) > 1 ? 'BAD_REQUEST' : undefined
    if (malformed !== undefined) return sendError(new Exchange(req, res, id, 'unknown', started, clientIpOf), new AppError(malformed))
    const path = routePath(url)
    let found: { handler: unknown; store: unknown; params: Record<string, string | undefined> } | null = null
    try {
      found = router.find((req.method ?? 'GET') as HTTPMethod, path)
    } catch {
      found = null
    }
    // a parametric route (`/api/auth/sessions/:id`) with an empty segment names nothing
    if (found !== null && found.store !== path && Object.values(found.params).includes('')) found = null
    const handler = found?.handler as RouteHandler | undefined
    const route = handler === undefined ? 'unknown' : (found!.store as string)
    const x = new Exchange(req, res, id, route, started, clientIpOf)
    if (handler !== undefined && found!.store !== path) x.params = found!.params

    // every /api/auth/* answer, a 404 for a path under it too, so a page can read what went wrong
    if (path.startsWith('/api/auth/') && config.cors.origins.length > 0) {
      res.setHeader('vary', 'Origin')
      const origin = joinedHeader(req, 'origin')
      if (origin !== undefined && origins.corsAllowed(origin)) {
        res.setHeader('access-control-allow-origin', origin)
        res.setHeader('access-control-allow-credentials', 'true')
      }
    }


    if (handler === undefined) return sendError(x, new AppError('NOT_FOUND'))
    try {
      const p = handler(x)
      if (p !== undefined) p.catch((err: unknown) => sendError(x, err))
    } catch (err) {
      sendError(x, err)
    }
  }
}

/** the endpoints that set or read the refresh cookie: a foreign browser origin is refused there */
const COOKIE_ROUTES: ReadonlySet<string> = new Set(['/api/auth/login', '/api/auth/login/mfa', '/api/auth/register', '/api/auth/refresh', '/api/auth/logout'])

/** the second-factor methods a login answered with mfaRequired offers */
const MFA_METHODS = Object.freeze(['totp', 'recovery_code'])

/** how many Host headers a request has (node keeps the first in `req.headers`, silently) */
function hostCount(raw: string[]): number {
  let n = 0
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!
    if (k.length === 4 && (k === 'Host' || k === 'host' || k.toLowerCase() === 'host')) n++
  }
  return n
}

/**
 * The value of header `name` (lower-case) as node's `req.headers` gives it for a header it keeps
 * only once (authorization among them): the first one sent. Read from the raw list, because the
 * first read of `req.headers` builds an object of every header the client sent, which /me, the
 * hottest path, has no use for.
 */
export function firstHeader(req: IncomingMessage, name: string): string | undefined {
  const raw = req.rawHeaders
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!
    if (k.length === name.length && (k === name || k.toLowerCase() === name)) return raw[i + 1]
  }
  return undefined
}

/**
 * The value of header `name` (lower-case) as node's `req.headers` gives it for a header it joins
 * when sent more than once (Origin, X-Forwarded-For: the values in order, `, ` between them), read
 * from the raw list like firstHeader: a refused login (the 429 path) never builds `req.headers`.
 */
export function joinedHeader(req: IncomingMessage, name: string): string | undefined {
  const raw = req.rawHeaders
  let value: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!
    if (k.length === name.length && (k === name || k.toLowerCase() === name)) value = value === undefined ? raw[i + 1] : `${value}, ${raw[i + 1]}`
  }
  return value
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

/**
 * The client address of a request. Without an X-Forwarded-For header it depends on the socket
 * address alone, so that parse is remembered per address (a keep-alive client sends many
 * requests); with one, it is worked out every time.
 */
function clientIpMemo(resolve: ClientIpResolver): (req: IncomingMessage) => ClientIp {
  const byAddress = new Map<string, ClientIp>()
  return (req) => {
    const forwarded = joinedHeader(req, 'x-forwarded-for')
    const address = req.socket.remoteAddress
    if (forwarded !== undefined || address === undefined) return resolve(address, forwarded)
    let c = byAddress.get(address)
    if (c === undefined) {
      c = resolve(address, undefined)
      if (byAddress.size >= 4096) byAddress.clear()
      byAddress.set(address, c)
    }
    return c
  }
}
