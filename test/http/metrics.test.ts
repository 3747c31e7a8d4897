/**
 * http/metrics.ts on its own: each event the use-cases report lands in its own counter under its
 * own label; a failed login is one outcome whatever the reason (docs/api.md, GET /metrics: nothing
 * tells whether an email exists); the request histogram's buckets, series and totals; evictions;
 * a reset; and no state shared between two instances. test/http/metrics-format.test.ts holds the
 * text format to prom-client's own; docs/observability.md lists the metrics.
 */
import t from 'tap'
import type { LoginOutcome } from '../../src/core/auth-service.js'
import { createMetrics, loginMetric, type Metrics } from '../../src/http/metrics.js'

interface JsonValue {
  value: number
  labels: Record<string, string | number>
  metricName?: string
}

async function values(m: Metrics, name: string): Promise<JsonValue[]> {
  const metric = (await m.registry.getMetricsAsJSON()).find((x) => x.name === name)
  if (metric === undefined) throw new Error(`no metric ${name}`)
  return metric.values as JsonValue[]
}

/** a counter's values as { labelValue: count } */
async function counts(m: Metrics, name: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const v of await values(m, name)) out[String(Object.values(v.labels)[0])] = v.value
  return out
}

t.test('a wrong email, a wrong password and a disabled account are one login outcome', async (t) => {
  const all: LoginOutcome[] = ['success', 'mfa_required', 'unknown_user', 'bad_password', 'disabled', 'invalid_input', 'rate_limited']
  t.same(
    all.map(loginMetric),
    ['success', 'mfa_required', 'invalid_credentials', 'invalid_credentials', 'invalid_credentials', 'invalid_input', 'rate_limited'],
  )
  const m = createMetrics({ processMetrics: false })
  for (const o of all) m.events.login(o)
  t.same(await counts(m, 'authd_login_total'), { success: 1, mfa_required: 1, invalid_credentials: 3, invalid_input: 1, rate_limited: 1 })
})

t.test('each event is counted in its own counter, under its own label', async (t) => {
  const m = createMetrics({ processMetrics: false })
  m.events.me('success')
  m.events.me('success')
  m.events.me('invalid')
  m.events.refresh('reuse')
  m.events.register('conflict')
  m.events.mfa('totp')
  m.events.mfaAccount('enable')
  m.events.rateLimited('login.per_ip')
  m.events.rateLimited('login.per_ip')
  m.events.passwordChange('incorrect')
  const expected: Array<[string, string, Record<string, number>]> = [
    ['authd_me_total', 'outcome', { success: 2, invalid: 1 }],
    ['authd_refresh_total', 'outcome', { reuse: 1 }],
    ['authd_register_total', 'outcome', { conflict: 1 }],
    ['authd_mfa_total', 'outcome', { totp: 1 }],
    ['authd_mfa_account_total', 'action', { enable: 1 }],
    ['authd_rate_limited_total', 'limit', { 'login.per_ip': 2 }],
    ['authd_password_change_total', 'outcome', { incorrect: 1 }],
    ['authd_login_total', 'outcome', {}],
  ]
  const counted = (c: Record<string, number>) => Object.fromEntries(Object.entries(c).filter(([, n]) => n > 0))
  for (const [name, label, want] of expected) {
    t.same(counted(await counts(m, name)), want, name)
    for (const v of await values(m, name)) t.same(Object.keys(v.labels), [label], `${name}: labelled ${label}`)
  }
})

t.test('every value a counter can take is there at 0 before it is counted (a series that first appears at 1 reads as no increase)', async (t) => {
  const m = createMetrics({ processMetrics: false })
  const zeros = (vs: string[]) => Object.fromEntries(vs.map((v) => [v, 0]))
  t.same(await counts(m, 'authd_login_total'), zeros(['success', 'mfa_required', 'invalid_credentials', 'invalid_input', 'rate_limited']))
  t.same(await counts(m, 'authd_me_total'), zeros(['success', 'missing', 'invalid']))
  t.same(await counts(m, 'authd_refresh_total'), zeros(['success', 'grace', 'missing', 'invalid', 'expired', 'reuse', 'rate_limited']))
  t.same(await counts(m, 'authd_register_total'), zeros(['success', 'conflict', 'invalid', 'disabled', 'rate_limited']))
  t.same(await counts(m, 'authd_password_change_total'), zeros(['success', 'invalid_input', 'incorrect', 'rate_limited']))
  t.same(await counts(m, 'authd_mfa_total'), zeros(['totp', 'recovery_code', 'invalid_code', 'invalid_token', 'invalid_input', 'rate_limited']))
  t.same(await counts(m, 'authd_mfa_account_total'), zeros(['setup', 'enable', 'invalid_code', 'disable', 'recovery_codes', 'wrong_password']))
  t.same(
    await counts(m, 'authd_rate_limited_total'),
    zeros(['login.per_ip', 'login.per_ip_email', 'login.per_email', 'login.per_device', 'register.per_ip', 'refresh.per_ip', 'mfa.per_user']),
  )
  m.events.refresh('reuse')
  t.equal((await counts(m, 'authd_refresh_total')).reuse, 1, 'the first reuse moves its series from 0 to 1')
})

t.test('the request histogram: a value on a bound is in that bucket; buckets cumulative; sum and count', async (t) => {
  const m = createMetrics({ processMetrics: false })
  for (const s of [0.0005, 0.0007, 0.005, 0.3, 2.5, 7]) m.observe('/api/auth/me', 'GET', 200, s)
  const series = (await values(m, 'authd_http_request_duration_seconds')).filter((v) => v.labels.status === '200')
  const buckets = Object.fromEntries(series.filter((v) => v.metricName?.endsWith('_bucket')).map((v) => [String(v.labels.le), v.value]))
  t.same(buckets, {
    '0.0005': 1,
    '0.001': 2,
    '0.0025': 2,
    '0.005': 3,
    '0.01': 3,
    '0.025': 3,
    '0.05': 3,
    '0.1': 3,
    '0.25': 3,
    '0.5': 4,
    '1': 4,
    '2.5': 5,
    '+Inf': 6,
  })
  const total = (suffix: string): number => series.find((v) => v.metricName === `authd_http_request_duration_seconds_${suffix}`)!.value
  t.equal(total('count'), 6)
  t.ok(Math.abs(total('sum') - (0.0005 + 0.0007 + 0.005 + 0.3 + 2.5 + 7)) < 1e-9, 'sum')
})

t.test('one series per route, method and status, each labelled with all three', async (t) => {
  const m = createMetrics({ processMetrics: false })
  m.observe('/api/auth/me', 'GET', 200, 0.001)
  m.observe('/api/auth/me', 'GET', 200, 0.001)
  m.observe('/api/auth/me', 'GET', 401, 0.001)
  m.observe('/api/auth/me', 'HEAD', 200, 0.001)
  m.observe('unknown', 'GET', 404, 0.001)
  const counted = (await values(m, 'authd_http_request_duration_seconds'))
    .filter((v) => v.metricName === 'authd_http_request_duration_seconds_count')
    .map((v) => [v.labels.route, v.labels.method, v.labels.status, v.value])
  t.same(counted, [
    ['/api/auth/me', 'GET', '200', 2],
    ['/api/auth/me', 'GET', '401', 1],
    ['/api/auth/me', 'HEAD', '200', 1],
    ['unknown', 'GET', '404', 1],
  ])
})

t.test('limiter evictions add up by the number forgotten', async (t) => {
  const m = createMetrics({ processMetrics: false })
  m.limiterEvicted(3)
  m.limiterEvicted(256)
  t.equal((await values(m, 'authd_rate_limit_evictions_total'))[0]!.value, 259)
})

t.test('a registry reset puts the counters back at 0 and empties the histogram', async (t) => {
  const m = createMetrics({ processMetrics: false })
  m.events.me('success')
  m.observe('/healthz', 'GET', 200, 0.001)
  m.registry.resetMetrics()
  t.same(await counts(m, 'authd_me_total'), { success: 0, missing: 0, invalid: 0 })
  t.same(await values(m, 'authd_http_request_duration_seconds'), [])
  m.observe('/healthz', 'GET', 200, 0.001)
  const count = (await values(m, 'authd_http_request_duration_seconds')).find((v) => v.metricName?.endsWith('_count'))
  t.equal(count?.value, 1, 'and counts afresh')
})

t.test('two instances share nothing', async (t) => {
  const a = createMetrics({ processMetrics: false })
  const b = createMetrics({ processMetrics: false })
  a.events.me('success')
  a.observe('/healthz', 'GET', 200, 0.001)
  t.same(await counts(b, 'authd_me_total'), { success: 0, missing: 0, invalid: 0 })
  t.same(await values(b, 'authd_http_request_duration_seconds'), [])
})

t.test('process metrics, prefixed authd_, unless turned off', async (t) => {
  const names = async (m: Metrics): Promise<string[]> => (await m.registry.getMetricsAsJSON()).map((x) => x.name)
  const off = await names(createMetrics({ processMetrics: false }))
  t.same(off.filter((n) => /_(process|nodejs)_/.test(n)), [])
  const on = await names(createMetrics())
  t.ok(on.includes('authd_process_cpu_seconds_total'), 'on by default')
  t.ok(on.some((n) => n.startsWith('authd_nodejs_')))
})
