/** Prometheus metrics behind GET /metrics; the use-cases report through the AuthEvents seam. */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { AuthEvents } from '../core/auth-service.js'

export interface Metrics {
  registry: Registry
  events: AuthEvents
  /** one finished request */
  observe(route: string, method: string, status: number, seconds: number): void
}

export function createMetrics(opts: { processMetrics?: boolean } = {}): Metrics {
  const registry = new Registry()
  if (opts.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'authd_' })
  const counter = (name: string, help: string, label: string): Counter<string> =>
    new Counter({ name, help, labelNames: [label], registers: [registry] })
  const login = counter('authd_login_total', 'Login attempts by outcome', 'outcome')
  const me = counter('authd_me_total', 'GET /api/auth/me by outcome', 'outcome')
  const refresh = counter('authd_refresh_total', 'Refresh attempts by outcome (reuse = a used token presented again)', 'outcome')
  const register = counter('authd_register_total', 'Registrations by outcome', 'outcome')
  const limited = counter('authd_rate_limited_total', 'Requests refused by a rate limit, by limit', 'limit')
  const duration = new Histogram({
    name: 'authd_http_request_duration_seconds',
    help: 'HTTP request durations by route',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  })
  // Each histogram series is looked up once and kept: an observation costs about a third less
  // (prom-client hashes the label object otherwise). Labels are bounded: routes, methods, statuses.
  const series = new Map<string, Histogram.Internal<string>>()
  return {
    registry,
    events: {
      login: (o) => login.inc({ outcome: o }),
      me: (o) => me.inc({ outcome: o }),
      refresh: (o) => refresh.inc({ outcome: o }),
      register: (o) => register.inc({ outcome: o }),
      rateLimited: (l) => limited.inc({ limit: l }),
    },
    observe: (route, method, status, seconds) => {
      const key = `${route} ${method} ${status}`
      let s = series.get(key)
      if (s === undefined) {
        s = duration.labels({ route, method, status: String(status) })
        series.set(key, s)
      }
      s.observe(seconds)
    },
  }
}
