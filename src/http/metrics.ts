/**
 * Prometheus metrics behind GET /metrics; the use-cases report through the AuthEvents seam.
 *
 * prom-client keeps the registry, the process metrics and the text format. authd's own counters
 * and its request histogram are small classes of ours registered in it: they count in plain
 * numbers and hand prom-client the values only when scraped. prom-client's own metrics hash and
 * validate their labels on every observation, which was a tenth of the time of a /me.
 */
import { Counter, Registry, collectDefaultMetrics } from 'prom-client'
import type { AuthEvents, LoginOutcome } from '../core/auth-service.js'

export interface Metrics {
  registry: Registry
  events: AuthEvents
  /** one finished request */
  observe(route: string, method: string, status: number, seconds: number): void
  /** live rate-limiter keys forgotten to make room (a full limiter) */
  limiterEvicted(count: number): void
}

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

type Labels = Record<string, string | number>
interface Value {
  value: number
  labels: Labels
  metricName?: string
  sharedLabels?: Labels
  exemplar?: null
}

/** A counter with one label, whose values are the few outcomes the use-cases report. */
class OutcomeCounter {
  readonly type = 'counter'
  readonly aggregator = 'sum'
  readonly labelNames: string[]
  private counts = new Map<string, number>()

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly label: string,
  ) {
    this.labelNames = [label]
  }

  inc(value: string): void {
    this.counts.set(value, (this.counts.get(value) ?? 0) + 1)
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    const values = [...this.counts].map(([v, n]) => ({ value: n, labels: { [this.label]: v } }))
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }

  reset(): void {
    this.counts.clear()
  }
}

interface Series {
  labels: { route: string; method: string; status: string }
  /** observations per bucket, not cumulative; the last slot is above every bound */
  buckets: number[]
  sum: number
  count: number
}

/** The request-duration histogram, by route, method and status (all bounded sets). */
class RequestHistogram {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  readonly labelNames = ['route', 'method', 'status']
  private series = new Map<string, Series>()
  /** route → method → status → series: the lookup of an observation, without building a key */
  private index = new Map<string, Map<string, Map<number, Series>>>()

  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  observe(route: string, method: string, status: number, seconds: number): void {
    let byMethod = this.index.get(route)
    if (byMethod === undefined) this.index.set(route, (byMethod = new Map()))
    let byStatus = byMethod.get(method)
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()))
    let s = byStatus.get(status)
    if (s === undefined) {
      const key = `${route} ${method} ${status}`
      s = this.series.get(key)
      if (s === undefined) {
        s = { labels: { route, method, status: String(status) }, buckets: new Array<number>(BUCKETS.length + 1).fill(0), sum: 0, count: 0 }
        this.series.set(key, s)
      }
      byStatus.set(status, s)
    }
    let i = 0
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++
    s.buckets[i]!++
    s.sum += seconds
    s.count++
  }

  /** prom-client's own histogram layout: `le` first, the series' labels after it */
  private values(splay: boolean): Value[] {
    const out: Value[] = []
    const bucket = `${this.name}_bucket`
    const at = (le: number | string, value: number, labels: Series['labels']): Value =>
      splay ? { value, metricName: bucket, exemplar: null, labels: { le, ...labels } } : { value, metricName: bucket, labels: { le }, sharedLabels: labels }
    for (const s of this.series.values()) {
      let acc = 0
      BUCKETS.forEach((le, i) => {
        acc += s.buckets[i]!
        out.push(at(le, acc, s.labels))
      })
      out.push(at('+Inf', s.count, s.labels))
      out.push({ value: s.sum, metricName: `${this.name}_sum`, labels: { ...s.labels } })
      out.push({ value: s.count, metricName: `${this.name}_count`, labels: { ...s.labels } })
    }
    return out
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values(true) }
  }

  async getForPromString(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values(false) }
  }

  reset(): void {
    this.series.clear()
    this.index.clear()
  }
}

/**
 * The `outcome` label of authd_login_total for a login's outcome. Every wrong credential is one
 * value: a count by unknown_user / bad_password would tell anyone who can read /metrics whether an
 * email exists (the log lines keep the detail).
 */
export function loginMetric(outcome: LoginOutcome): string {
  return outcome === 'unknown_user' || outcome === 'bad_password' || outcome === 'disabled' ? 'invalid_credentials' : outcome
}

export function createMetrics(opts: { processMetrics?: boolean } = {}): Metrics {
  const registry = new Registry()
  if (opts.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'authd_' })
  const counter = (name: string, help: string, label: string): OutcomeCounter => {
    const c = new OutcomeCounter(name, help, label)
    registry.registerMetric(c as never)
    return c
  }
  const login = counter('authd_login_total', 'Login attempts by outcome', 'outcome')
  const me = counter('authd_me_total', 'GET /api/auth/me by outcome', 'outcome')
  const refresh = counter('authd_refresh_total', 'Refresh attempts by outcome (reuse = a used token presented again)', 'outcome')
  const register = counter('authd_register_total', 'Registrations by outcome', 'outcome')
  const mfa = counter('authd_mfa_total', 'Second-factor login steps by outcome (required = a right password answered with mfaRequired)', 'outcome')
  const mfaAccount = counter('authd_mfa_account_total', 'Second-factor changes by users, by action', 'action')
  const limited = counter('authd_rate_limited_total', 'Requests refused by a rate limit, by limit', 'limit')
  const duration = new RequestHistogram('authd_http_request_duration_seconds', 'HTTP request durations by route')
  registry.registerMetric(duration as never)
  const evictions = new Counter({ name: 'authd_rate_limit_evictions_total', help: 'Live rate-limiter keys forgotten because rate_limit.max_keys was reached', registers: [registry] })
  return {
    registry,
    events: {
      login: (o) => login.inc(loginMetric(o)),
      me: (o) => me.inc(o),
      refresh: (o) => refresh.inc(o),
      register: (o) => register.inc(o),
      mfa: (o) => mfa.inc(o),
      mfaAccount: (a) => mfaAccount.inc(a),
      rateLimited: (l) => limited.inc(l),
    },
    observe: (route, method, status, seconds) => duration.observe(route, method, status, seconds),
    limiterEvicted: (n) => evictions.inc(n),
  }
}
