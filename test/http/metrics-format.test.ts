/**
 * authd's counters and request histogram are its own small classes inside prom-client's registry
 * (prom-client's own hash their labels on every observation). What /metrics shows must be what
 * prom-client's Counter and Histogram would show for the same observations, to the byte.
 */
import t from 'tap'
import { Counter, Histogram, Registry } from 'prom-client'
import { createMetrics } from '../../src/http/metrics.js'

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
const OBSERVED: Array<[string, string, number, number]> = [
  ['/api/auth/me', 'GET', 200, 0.0003],
  ['/api/auth/me', 'GET', 200, 0.0005],
  ['/api/auth/me', 'GET', 200, 0.2],
  ['/api/auth/me', 'GET', 401, 0.004],
  ['/api/auth/login', 'POST', 429, 3],
  ['unknown', 'GET', 404, 0.00051],
]

t.test('the request histogram reads as prom-client’s own', async (t) => {
  const ours = createMetrics({ processMetrics: false })
  const reference = new Registry()
  const h = new Histogram({ name: 'authd_http_request_duration_seconds', help: 'HTTP request durations by route', labelNames: ['route', 'method', 'status'], buckets: BUCKETS, registers: [reference] })
  for (const [route, method, status, seconds] of OBSERVED) {
    ours.observe(route, method, status, seconds)
    h.observe({ route, method, status: String(status) }, seconds)
  }
  const section = (text: string): string => text.split('\n\n').find((s) => s.includes('# TYPE authd_http_request_duration_seconds histogram'))!.trim()
  t.equal(section(await ours.registry.metrics()), section(await reference.metrics()))
  const json = async (r: Registry): Promise<unknown> => {
    const m = (await r.getMetricsAsJSON()).find((x) => x.name === 'authd_http_request_duration_seconds')!
    return m.values.map((v) => [v.value, (v as { metricName?: string }).metricName, v.labels])
  }
  t.same(await json(ours.registry), await json(reference), 'and as JSON')
})

t.test('the outcome counters read as prom-client’s own', async (t) => {
  const ours = createMetrics({ processMetrics: false })
  const reference = new Registry()
  const me = new Counter({ name: 'authd_me_total', help: 'GET /api/auth/me by outcome', labelNames: ['outcome'], registers: [reference] })
  const limited = new Counter({ name: 'authd_rate_limited_total', help: 'Requests refused by a rate limit, by limit', labelNames: ['limit'], registers: [reference] })
  // ours show every value they can take from the start, at 0, in this order
  for (const o of ['success', 'missing', 'invalid']) me.inc({ outcome: o }, 0)
  for (const l of ['login.per_ip', 'login.per_ip_email', 'login.per_email', 'login.per_device', 'register.per_ip', 'refresh.per_ip', 'mfa.per_user']) limited.inc({ limit: l }, 0)
  for (const o of ['success', 'success', 'invalid', 'missing', 'success'] as const) {
    ours.events.me(o)
    me.inc({ outcome: o })
  }
  ours.events.rateLimited('login.per_ip')
  limited.inc({ limit: 'login.per_ip' })
  const text = await ours.registry.metrics()
  const expected = await reference.metrics()
  for (const name of ['authd_me_total', 'authd_rate_limited_total']) {
    const section = (s: string): string => s.split('\n\n').find((x) => x.includes(`# TYPE ${name} counter`))!.trim()
    t.equal(section(text), section(expected), name)
  }
  t.match(text, /# TYPE authd_refresh_total counter\nauthd_refresh_total\{outcome="success"\} 0\n/, 'a counter with nothing counted shows its values at 0')
})
