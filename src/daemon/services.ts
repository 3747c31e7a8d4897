/**
 * Wires the daemon's parts together from a Config: store, hasher, keys, limiter, use-cases and
 * the HTTP handler. Tests and the benchmark build the same thing, on a temp store.
 */
import os from 'node:os'
import type { DestinationStream, Logger } from 'pino'
import type { Config } from '../config/types.js'
import { createAccessTokens } from '../core/access-tokens.js'
import { createAuthService, type AuthService } from '../core/auth-service.js'
import { createDeviceCookies, newDeviceKey } from '../core/device-cookies.js'
import { watchLimitClears } from '../core/limit-clears.js'
import { createKeyring, generateKey, type Keyring } from '../core/keys.js'
import { createLogger, requestLineWriter } from './logger.js'
import { createMfaService, type MfaService } from '../core/mfa-service.js'
import { createMfaTokens, newMfaKey } from '../core/mfa-tokens.js'
import { createPasswordHasher, type PasswordHasher } from '../core/passwords.js'
import { createPasswordPolicy } from '../core/password-policy.js'
import { createMeView, type MeView } from '../core/me-view.js'
import { asyncLimiter, createRateLimiter, type MemoryRateLimiter } from '../core/rate-limiter.js'
import { type RateLimiter } from '../store/rate-limit.js'
import { createRefusalLog } from '../core/refusal-log.js'
import { sweepExpiredSessions } from '../core/sessions.js'
import { createApp, type Handler } from '../http/app.js'
import { createMetrics, type Metrics } from '../http/metrics.js'
import { openStore } from '../store/open.js'
import type { Store } from '../store/store.js'

export interface Services {
  config: Config
  store: Store
  hasher: PasswordHasher
  keyring: Keyring
  /** the limiter requests are counted in: the database's (PostgreSQL), else the in-process one */
  limiter: RateLimiter
  /** the in-process limiter, when that is the one in use (its size, its prune), else null */
  memoryLimiter: MemoryRateLimiter | null
  /** /me's reads and the checks of access tokens */
  meView: MeView
  auth: AuthService
  /** a signed-in user's second factor */
  mfa: MfaService
  metrics: Metrics
  log: Logger
  /** the HTTP handler, on `config`: built when first asked for (building one takes tens of ms) */
  readonly handler: Handler
  /** another HTTP handler on these services, for `config` completed (the public URL of port 0: daemon/main.ts) */
  app(config: Config): Handler
  /** flips /readyz to 503 (draining) */
  setReady(ready: boolean): void
  close(): Promise<void>
}

export interface ServiceOptions {
  now?: () => number
  logDestination?: DestinationStream
  logger?: Logger
  /** an already open store (tests share one) */
  store?: Store
  /** the limiter to count in (default: the one openStore gives, else one in process) */
  limiter?: RateLimiter
  /** how often /readyz asks the store whether it answers, at most (default 1 s) */
  readyPingMs?: number
  processMetrics?: boolean
  hashConcurrency?: number
  /** hashes waiting beyond which logins are refused with 503 (default 512) */
  hashMaxQueue?: number
  /** how long rate-limit refusals of one address are counted before their line (default 10 s) */
  refusalLogPeriodMs?: number
  /** how often audit events past audit.retention are removed (default 10 min) */
  auditSweepMs?: number
}

/**
 * argon2 runs at most this many at once: LMDB commits need libuv's pool too, and one core is left
 * to the event loop, so a login flood cannot make /me, refresh or a 429 wait for a CPU
 * (npm run stress, case 4). On 2 cores that is one hash at a time.
 */
export const defaultHashConcurrency = (): number => Math.max(1, Math.min(2, os.availableParallelism() - 1))

export async function createServices(config: Config, opts: ServiceOptions = {}): Promise<Services> {
  const now = opts.now ?? Date.now
  const log = opts.logger ?? createLogger({ level: config.log.level, destination: opts.logDestination })
  const opened = opts.store !== undefined ? { store: opts.store, limiter: null } : await openStore(config.store, { log })
  const store = opened.store
  const t = config.tokens
  await store.ensureActiveKey(() => generateKey(t.algorithm, now()))
  const keyring = await createKeyring({ store, now, verifyWindowMs: t.accessTtlMs + t.clockToleranceMs })
  const p = config.passwords
  const deviceKey = await store.ensureDeviceKey(newDeviceKey)
  const [hasher, policy] = await Promise.all([
    createPasswordHasher({
      memoryKib: p.memoryKib,
      timeCost: p.timeCost,
      parallelism: p.parallelism,
      concurrency: opts.hashConcurrency ?? defaultHashConcurrency(),
      maxQueue: opts.hashMaxQueue ?? 512,
      // an unknown email's dummy runs under the stored hashes' parameters, in their proportions
      tally: () => store.hashTally(),
      // and which of them an email draws is the same on every instance and after a restart
      uniformSecret: deviceKey,
    }),
    createPasswordPolicy({ minLength: p.minLength, maxLength: p.maxLength }),
  ])
  const metrics = createMetrics({ processMetrics: opts.processMetrics })
  // a full limiter forgets keys rather than refuse anyone: counted, and said at warn at most
  // once a minute (at once after a quiet minute, else with the count gathered since)
  let evicted = 0
  let evictionsSaid = -Infinity
  const sayEvictions = (): void => {
    if (evicted === 0 || performance.now() - evictionsSaid < 60_000) return
    log.warn({ event: 'rate_limit_evictions', evicted, maxKeys: config.rateLimit.maxKeys }, 'rate limiter full: forgot the least protective keys')
    evicted = 0
    evictionsSaid = performance.now()
  }
  const evictionTimer = setInterval(sayEvictions, 10_000).unref()
  const given = opts.limiter ?? opened.limiter
  const memoryLimiter =
    given !== null
      ? null
      : createRateLimiter({
          maxKeys: config.rateLimit.maxKeys,
          now,
          onEvict: (n) => {
            metrics.limiterEvicted(n)
            evicted += n
            sayEvictions()
          },
        })
  const limiter = given ?? asyncLimiter(memoryLimiter!)
  const devices = createDeviceCookies(deviceKey)
  const tokens = createAccessTokens({ keyring, now, issuer: t.issuer, audience: t.audience, ttlMs: t.accessTtlMs, clockToleranceMs: t.clockToleranceMs })
  const refusals = createRefusalLog({ write: (fields, msg) => log.info(fields, msg), periodMs: opts.refusalLogPeriodMs })
  const mfaTokens = createMfaTokens(await store.ensureMfaKey(newMfaKey), now)
  const meView = createMeView({ store, keyring, tokens, now, sessions: config.sessions })
  const auth = createAuthService({ config, store, hasher, policy, tokens, keyring, meView, limiter, memoryLimiter, now, log, events: metrics.events, refusals, devices, mfaTokens })
  const mfa = createMfaService({ config, store, hasher, loginCharges: auth.loginCharges, now, log, events: metrics.events, refusals })
  let ready = true
  let closing: Promise<void> | undefined
  // /readyz: not draining, and the store answers. One ping at a time, at most one a second,
  // whatever the number of probes: its answer is shared until then.
  const pingEveryMs = opts.readyPingMs ?? 1000
  let pinged: { at: number; answer: Promise<boolean> } | undefined
  // said once when the store stops answering, and once when it is back
  let answering = true
  const storeAnswers = (): Promise<boolean> => {
    const at = performance.now()
    if (pinged === undefined || at - pinged.at >= pingEveryMs) {
      pinged = {
        at,
        answer: store.ping().then(
          () => {
            if (!answering) log.info({ event: 'store_available' }, 'the store answers again')
            answering = true
            return true
          },
          (err: unknown) => {
            if (answering) log.warn({ event: 'store_unavailable', err }, 'the store does not answer: /readyz says 503')
            answering = false
            return false
          },
        ),
      }
    }
    return pinged.answer
  }
  const isReady = async (): Promise<boolean> => ready && (await storeAnswers()) && ready
  const app = (final: Config): Handler => createApp({ config: final, auth, mfa, keyring, metrics, log, requestLog: requestLineWriter(log), repeats: refusals, ready: isReady })
  let handler: Handler | undefined
  // housekeeping: expired limiter windows, and sessions past their idle or absolute expiry
  const pruneTimer = setInterval(() => memoryLimiter?.prune(), 30_000).unref()
  const sweepTimer = setInterval(() => {
    sweepExpiredSessions(store, now(), config.sessions).catch((err: unknown) => log.error({ err }, 'session sweep failed'))
  }, 10 * 60_000).unref()
  // audit events older than audit.retention; the last removed one's hash stays as the chain's anchor
  const auditTimer = setInterval(() => {
    store.sweepAudit(now() - config.audit.retentionMs).catch((err: unknown) => log.error({ err }, 'audit sweep failed'))
  }, opts.auditSweepMs ?? 10 * 60_000).unref()
  // authctl limits clear, from any process on this store
  const limitClears = watchLimitClears({
    store,
    apply: async (target) => {
      const keys = await auth.clearLoginLimits(target)
      log.info({ event: 'limits_cleared', target: 'email' in target ? 'email' : target.ipKey, keys }, 'login limits cleared by authctl')
    },
    onError: (err, failure) => {
      if (failure === undefined) return log.warn({ event: 'limit_clears_unreadable', err }, 'limit-clear requests cannot be read; trying again every 250 ms')
      const target = 'email' in failure.target ? 'email' : failure.target.ipKey
      if (failure.dropped) log.error({ err, event: 'limits_clear_dropped', target }, 'a limit clear failed for 60 s and was dropped')
      else log.error({ err, event: 'limits_clear_failed', target }, 'a limit clear failed; trying again')
    },
    onReadable: () => log.info({ event: 'limit_clears_readable' }, 'limit-clear requests read again'),
  })
  return {
    config,
    store,
    hasher,
    keyring,
    limiter,
    memoryLimiter,
    meView,
    auth,
    mfa,
    metrics,
    log,
    // not built when the daemon builds its own with the public URL completed (daemon/main.ts)
    get handler() {
      return (handler ??= app(config))
    },
    app,
    setReady: (r) => {
      ready = r
    },
    // once, however many times it is asked (a stop after a stop)
    close: () =>
      (closing ??= (async () => {
        ready = false
        clearInterval(pruneTimer)
        clearInterval(sweepTimer)
        clearInterval(auditTimer)
        clearInterval(evictionTimer)
        limitClears.stop()
        refusals.close()
        if (opts.store === undefined) await store.close()
      })()),
  }
}
