/**
 * Prometheus metrics behind GET /metrics; the use-cases report through the AuthEvents seam.
 *
 * prom-client keeps the registry, the process metrics and the text format. authd's own counters
 * and its request histogram are small classes of ours registered in it: they count in plain
 * numbers and hand prom-client the values only when scraped. prom-client's own metrics hash and
 * validate their labels on every observation, which was a tenth of the time of a /me.
 */
import { Counter, Registry, collectDefaultMetrics } from 'prom-client'
import type { AuthEvents, LoginOutcome, MeOutcome, MfaAccountAction, MfaOutcome, RefreshMetric } from '../core/auth-service.js'

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

/**
 * A counter with one label, whose values are the few outcomes the use-cases report. Each known
 * value is there at 0 from the start: a series that first appears at 1 reads as no increase to
 * Prometheus's increase() and rate(), so an alert on the first reuse would miss it.
 */
class OutcomeCounter {
  readonly type = 'counter'
  readonly aggregator = 'sum'
  readonly labelNames: string[]
  private counts = new Map<string, number>()

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly label: string,
    private readonly known: readonly string[],
  ) {
    this.labelNames = [label]
    this.reset()
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
    for (const v of this.known) this.counts.set(v, 0)
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

// every value each counter can take (docs/observability.md, "Metrics"), shown at 0 until counted
const LOGIN_OUTCOMES = ['success', 'mfa_required', 'invalid_credentials', 'invalid_input', 'rate_limited'] as const
const ME_OUTCOMES: readonly MeOutcome[] = ['success', 'missing', 'invalid']
const REFRESH_OUTCOMES: readonly RefreshMetric[] = ['success', 'grace', 'missing', 'invalid', 'expired', 'reuse', 'rate_limited']
const REGISTER_OUTCOMES: ReadonlyArray<Parameters<AuthEvents['register']>[0]> = ['success', 'conflict', 'invalid', 'disabled', 'rate_limited']
const PASSWORD_CHANGE_OUTCOMES: ReadonlyArray<Parameters<AuthEvents['passwordChange']>[0]> = ['success', 'invalid_input', 'incorrect', 'rate_limited']
const MFA_OUTCOMES: readonly MfaOutcome[] = ['totp', 'recovery_code', 'invalid_code', 'invalid_token', 'invalid_input', 'rate_limited']
const MFA_ACCOUNT_ACTIONS: readonly MfaAccountAction[] = ['setup', 'enable', 'invalid_code', 'disable', 'recovery_codes', 'wrong_password']
const LIMITS = ['login.per_ip', 'login.per_ip_email', 'login.per_email', 'login.per_device', 'register.per_ip', 'refresh.per_ip', 'mfa.per_user'] as const

export function createMetrics(opts: { processMetrics?: boolean } = {}): Metrics {
  const registry = new Registry()
  if (opts.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'authd_' })
  const counter = (name: string, help: string, label: string, known: readonly string[]): OutcomeCounter => {
    const c = new OutcomeCounter(name, help, label, known)
    registry.registerMetric(c as never)
    return c
  }
  const login = counter('authd_login_total', 'Login attempts by outcome', 'outcome', LOGIN_OUTCOMES)
  const me = counter('authd_me_total', 'GET /api/auth/me by outcome', 'outcome', ME_OUTCOMES)
  const refresh = counter('authd_refresh_total', 'Refresh attempts by outcome (reuse = a used token presented again)', 'outcome', REFRESH_OUTCOMES)
  const register = counter('authd_register_total', 'Registrations by outcome', 'outcome', REGISTER_OUTCOMES)
  const passwordChange = counter('authd_password_change_total', 'POST /api/auth/password by outcome (incorrect = a wrong current password)', 'outcome', PASSWORD_CHANGE_OUTCOMES)
  const mfa = counter('authd_mfa_total', 'Second steps of logins with a second factor, by outcome (the password step is authd_login_total{outcome="mfa_required"})', 'outcome', MFA_OUTCOMES)
  const mfaAccount = counter('authd_mfa_account_total', 'Second-factor changes by users, by action', 'action', MFA_ACCOUNT_ACTIONS)
  const limited = counter('authd_rate_limited_total', 'Requests refused by a rate limit, by limit', 'limit', LIMITS)
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
      passwordChange: (o) => passwordChange.inc(o),
    },
    observe: (route, method, status, seconds) => duration.observe(route, method, status, seconds),
    limiterEvicted: (n) => evictions.inc(n),
  }
}
