/** What anyone may read: the public keys, health and readiness, and the metrics when enabled. */
import { AppError } from '../../errors.js'
import { JSON_TYPE } from '../reply.js'
import type { Routes } from '../router.js'
import type { RouteContext } from './context.js'

/** how long a verifier may cache the JWKS at most (docs/api.md, "GET /.well-known/jwks.json") */
export const JWKS_MAX_AGE_S = 300

/**
 * The JWKS's `Cache-Control`: cached for JWKS_MAX_AGE_S, or for `tokens.key_lead` in whole seconds
 * when that is shorter. A rotated-in key is published key_lead before it signs: a verifier whose
 * cached copy may be older than that could miss the key its first tokens name.
 */
export function jwksCacheControl(keyLeadMs: number): string {
  return `public, max-age=${Math.min(JWKS_MAX_AGE_S, Math.floor(keyLeadMs / 1000))}`
}

export function publicRoutes(c: RouteContext): Routes {
  const { keyring, metrics, reply } = c
  const jwksCache = jwksCacheControl(c.config.tokens.keyLeadMs)
  const routes: Routes = {
    '/.well-known/jwks.json': {
      GET: async (x) => {
        // the keys as the store has them now: one read of its keys version
        await keyring.refresh()
        reply.other(x, JSON_TYPE, JSON.stringify(keyring.jwks()), jwksCache)
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
