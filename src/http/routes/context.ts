/** What the route handlers share: the app's parts, and the steps several of them take. */
import type { Config } from '../../config/types.js'
import type { Authenticated, AuthService, ClientContext, SignedIn } from '../../core/auth-service.js'
import { AppError } from '../../errors.js'
import type { Keyring } from '../../core/keys.js'
import type { MfaService } from '../../core/mfa-service.js'
import { readJsonBody } from '../body.js'
import type { RefreshCookie } from '../cookies.js'
import type { OriginPolicy } from '../cors.js'
import type { DeviceCookie } from '../device-cookie.js'
import type { Exchange } from '../exchange.js'
import type { Metrics } from '../metrics.js'
import { joinedHeader, soleHeader } from '../raw-headers.js'
import type { Reply } from '../reply.js'

export interface RouteDeps {
  config: Config
  auth: AuthService
  mfa: MfaService
  keyring: Keyring
  metrics: Metrics
  ready: () => boolean | Promise<boolean>
  reply: Reply
  refreshCookie: RefreshCookie
  deviceCookie: DeviceCookie
  origins: OriginPolicy
}

export interface RouteContext extends RouteDeps {
  /** the request's body, read as a JSON object (body.ts) */
  body(x: Exchange): Promise<Record<string, unknown>>
  /** the user the request's access token names; 401 otherwise */
  who(x: Exchange): Promise<Authenticated>
  /** a cookie endpoint refuses a foreign browser origin (403) before touching anything */
  checkOrigin(x: Exchange): void
  /** the client, with the device cookies its request carried (login, register) */
  withDevices(x: Exchange): ClientContext
  /** the answer of a sign-in: the access token, and the refresh (and device) cookie */
  signedIn(x: Exchange, status: number, s: SignedIn): void
}

/** the endpoints that set or read the refresh cookie: a foreign browser origin is refused there */
export const COOKIE_ROUTES: ReadonlySet<string> = new Set(['/api/auth/login', '/api/auth/login/mfa', '/api/auth/register', '/api/auth/refresh', '/api/auth/logout'])

export function createRouteContext(deps: RouteDeps): RouteContext {
  const { auth, reply, refreshCookie, deviceCookie, origins } = deps
  const bodyLimit = deps.config.server.bodyLimit
  return {
    ...deps,
    body: (x) => readJsonBody(x.req, bodyLimit),
    who: (x) => auth.authenticate(soleHeader(x.req, 'authorization')),
    checkOrigin(x) {
      if (!origins.cookieAllowed(joinedHeader(x.req, 'origin'))) throw new AppError('FORBIDDEN_ORIGIN')
    },
    withDevices: (x) => ({ ...x.client(), devices: deviceCookie.read(x.req.headers.cookie) }),
    signedIn(x, status, s) {
      const refresh = refreshCookie.set(s.refreshToken, s.cookieMaxAgeS)
      reply.ok(
        x,
        status,
        { accessToken: s.accessToken, tokenType: 'Bearer', expiresIn: s.expiresIn, user: s.user },
        { 'set-cookie': s.deviceCookie === undefined ? refresh : [refresh, deviceCookie.set(s.deviceCookie)] },
      )
    },
  }
}
