/**
 * A signed-in user's own account (README, "Your own account"): who they are, their password,
 * their sessions. The access token is checked before a body is read.
 */
import { soleHeader } from '../raw-headers.js'
import type { Routes } from '../router.js'
import type { RouteContext } from './context.js'

export function accountRoutes(c: RouteContext): Routes {
  const { auth, reply } = c
  return {
    '/api/auth/me': {
      // the hot path: one promise, and the body comes made (core/me-view.ts keeps it with the
      // user it answers)
      GET: (x) => auth.me(soleHeader(x.req, 'authorization')).then((me) => reply.text(x, 200, me.body, me.bytes)),
    },
    '/api/auth/password': {
      POST: async (x) => {
        const who = await c.who(x)
        const body = await c.body(x)
        // the device cookie counts as at login: a wrong current password is a failed login
        await auth.account.changePassword(who, body, c.withDevices(x))
        reply.ok(x, 200, {})
      },
    },
    '/api/auth/sessions': {
      GET: async (x) => reply.ok(x, 200, { sessions: await auth.account.sessions(await c.who(x)) }),
    },
    '/api/auth/sessions/:id': {
      DELETE: async (x) => {
        const who = await c.who(x)
        // it takes no body, but one sent is held to the rules every body is (415, 400, 413)
        await c.body(x)
        await auth.account.revokeSession(who, x.params.id ?? '', x.client())
        reply.ok(x, 200, {})
      },
    },
  }
}
