/** What anyone may read: the public keys, health and readiness, and the metrics when enabled. */
import { AppError } from '../../errors.js'
import { JSON_TYPE } from '../reply.js'
import type { Routes } from '../router.js'
import type { RouteContext } from './context.js'

export function publicRoutes(c: RouteContext): Routes {
  const { keyring, metrics, reply } = c
  const routes: Routes = {
    '/.well-known/jwks.json': {
      GET: async (x) => {
        // the keys as the store has them now: one read of its keys version
        await keyring.refresh()
        reply.other(x, JSON_TYPE, JSON.stringify(keyring.jwks()), 'public, max-age=300')
      },
    },
    '/healthz': { GET: (x) => reply.ok(x, 200, { status: 'ok' }) },
    '/readyz': {
      GET: async (x) => {
        if (!(await c.ready())) throw new AppError('NOT_READY')
        reply.ok(x, 200, { status: 'ready' })
      },
    },
  }
  if (c.config.metrics.enabled) {
    routes['/metrics'] = {
      GET: async (x) => reply.other(x, metrics.registry.contentType, await metrics.registry.metrics()),
    }
  }
  return routes
}
