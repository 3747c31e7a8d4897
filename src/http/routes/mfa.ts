/** A signed-in user's second factor (README, "Second factor"): the /api/auth/mfa/* endpoints. */
import type { Routes } from '../router.js'
import type { RouteContext } from './context.js'

export function mfaRoutes(c: RouteContext): Routes {
  const { mfa, reply } = c
  return {
    '/api/auth/mfa/totp/setup': {
      POST: async (x) => {
        const who = await c.who(x)
        await c.body(x)
        reply.ok(x, 200, await mfa.setup(who))
      },
    },
    '/api/auth/mfa/totp/confirm': {
      POST: async (x) => {
        const who = await c.who(x)
        reply.ok(x, 200, await mfa.confirm(who, await c.body(x), x.client()))
      },
    },
    '/api/auth/mfa/totp/disable': {
      POST: async (x) => {
        const who = await c.who(x)
        // the device cookie counts as at login: a wrong password is a failed login of this device
        await mfa.disable(who, await c.body(x), c.withDevices(x))
        reply.ok(x, 200, {})
      },
    },
    '/api/auth/mfa/recovery-codes': {
      POST: async (x) => {
        const who = await c.who(x)
        reply.ok(x, 200, await mfa.newRecoveryCodes(who, await c.body(x), c.withDevices(x)))
      },
    },
  }
}
