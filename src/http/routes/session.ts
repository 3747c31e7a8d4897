/** A browser session's cookie endpoints: refresh and logout. */
import { errorRegistry } from '../../errors.js'
import type { Routes } from '../router.js'
import type { RouteContext } from './context.js'

export function sessionRoutes(c: RouteContext): Routes {
  const { auth, reply, refreshCookie, metrics } = c
  return {
    '/api/auth/refresh': {
      POST: async (x) => {
        c.checkOrigin(x)
        await c.body(x)
        const header = x.req.headers.cookie
        if (refreshCookie.ambiguous(header)) {
          // a planted second cookie: nothing is touched and nothing cleared (cookies.ts), so not
          // the INVALID_REFRESH_TOKEN answer, which clears the cookie
          metrics.events.refresh('invalid')
          return reply.json(x, 401, { success: false, message: errorRegistry.INVALID_REFRESH_TOKEN.message })
        }
        c.signedIn(x, 200, await auth.refresh(refreshCookie.read(header), x.client()))
      },
    },
    '/api/auth/logout': {
      POST: async (x) => {
        c.checkOrigin(x)
        const body = await c.body(x)
        const header = x.req.headers.cookie
        // a planted second cookie: nothing is touched and nothing cleared (cookies.ts)
        if (refreshCookie.ambiguous(header)) return reply.ok(x, 200, {})
        await auth.logout(refreshCookie.read(header), body, x.client())
        reply.ok(x, 200, {}, { 'set-cookie': refreshCookie.clear() })
      },
    },
  }
}
