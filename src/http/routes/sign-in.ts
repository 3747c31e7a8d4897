/** Signing in: login (and its second step, when a second factor is on) and register. */
import type { MfaChallenge, SignedIn } from '../../core/auth-service.js'
import type { Exchange } from '../exchange.js'
import type { Routes } from '../router.js'
import type { RouteContext } from './context.js'

/** the second-factor methods a login answered with mfaRequired offers */
const MFA_METHODS = Object.freeze(['totp', 'recovery_code'])

export function signInRoutes(c: RouteContext): Routes {
  const { auth, reply, metrics } = c

  /** a login's answer: signed in, or (a second factor is on) the mfaRequired step, with no cookie at all */
  const loggedIn = (x: Exchange, s: SignedIn | MfaChallenge): void =>
    'mfaRequired' in s ? reply.ok(x, 200, { mfaRequired: true, mfaToken: s.mfaToken, methods: MFA_METHODS, expiresIn: s.expiresIn }) : c.signedIn(x, 200, s)

  /** a login counted by login.per_ip: refused (429, its body never read), or read and checked */
  const afterAdmit = (x: Exchange, refused: { retryAfterS: number } | undefined): Promise<void> | void => {
    c.checkOrigin(x)
    if (refused !== undefined) return reply.fail(x, 'TOO_MANY_LOGINS', refused.retryAfterS)
    return c.body(x).then(
      (body) => auth.login(body, c.withDevices(x), true).then((s) => loggedIn(x, s)),
      (err: unknown) => {
        // a body that cannot be read (413, 415, 400) is a malformed login, as missing fields are
        metrics.events.login('invalid_input')
        throw err
      },
    )
  }

  return {
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
        c.checkOrigin(x)
        const body = await c.body(x)
        c.signedIn(x, 200, await auth.loginMfa(body, c.withDevices(x)))
      },
    },
    '/api/auth/register': {
      POST: async (x) => {
        c.checkOrigin(x)
        const body = await c.body(x)
        c.signedIn(x, 201, await auth.register(body, c.withDevices(x)))
      },
    },
  }
}
