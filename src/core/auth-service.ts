/**
 * The use-cases: login, register, me, refresh, logout. No HTTP and no LMDB here: the HTTP layer
 * hands in parsed input and the client's address, and turns results and AppErrors into responses.
 */
import type { Authenticated, ClientContext, Logger, MeUser } from './caller.js'
import type { Config, RateRule } from '../config/types.js'
import { formatDuration } from '../config/duration.js'
import { apiDraft, type AuditEventName, type LoginFailureReason } from './audit.js'
import { createAccount, type Account, type PasswordChangeOutcome } from './account.js'
import type { AuditDraft, LimitClearTarget, SessionEntry, SessionHolder, SessionRecord, Store, StoreCharge, UserRecord } from '../store/store.js'
import type { AccessTokens } from './access-tokens.js'
import type { Keyring } from './keys.js'
import type { MeAnswer, MeView } from './me-view.js'
import type { Device, DeviceCookies } from './device-cookies.js'
import { canonicalEmail, mayBeStoredEmail, registrableEmail } from './email.js'
import { credentials } from './credentials.js'
import { AppError, isAppError, isStoreUnavailable } from '../errors.js'
import type { MfaTicket, MfaTokens } from './mfa-tokens.js'
import type { PasswordHasher } from './passwords.js'
import type { PasswordPolicy } from './password-policy.js'
import type { MemoryRateLimiter } from './rate-limiter.js'
import type { RateLimiter } from '../store/rate-limit.js'
import { Keep, limitKey, type ConsumeResult, type ConsumeToken, type RateEntry } from '../store/rate-limit.js'
import type { RefusalLog } from './refusal-log.js'
import { decideRefresh, familyHashOf, hashToken, newRefreshToken, newSessionId, REFRESH_TOKEN, sameHash, type RefreshOutcome } from './sessions.js'
import { matchRecoveryCode, matchTotp } from './totp.js'
import { newUserId } from './users.js'

export type { Authenticated, ClientContext, Logger, MeUser } from './caller.js'
export type { MeAnswer } from './me-view.js'

/** keys confirmed this recently may sign when the store cannot be read for them (sign()) */
const KEYS_FRESH_MS = 1000

export interface SignedIn {
  user: { id: string; email: string }
  accessToken: string
  expiresIn: number
  refreshToken: string
  sessionId: string
  /**
   * the refresh cookie's Max-Age, in seconds: the session's time left until its absolute end
   * (sessions.absolute_ttl after login, so a refresh does not keep the cookie past the session)
   */
  cookieMaxAgeS: number
  /** login and register: the device cookie's new value (this browser, this user) */
  deviceCookie?: string
}

/**
 * A login answered with mfaRequired (the user's factor is on: docs/api.md, "Second factor") and the
 * mfaToken for the second step. No session exists yet, and no cookie is set.
 */
export interface MfaChallenge {
  mfaRequired: true
  mfaToken: string
  /** seconds the mfaToken is good for */
  expiresIn: number
  /** for the caller's logs, never answered */
  user: { id: string; email: string }
}

/** RFC 8176 `amr` values of a session: a password; a password and a TOTP code; a password and a recovery code */
export const AMR_PASSWORD: readonly string[] = Object.freeze(['pwd'])
export const AMR_TOTP: readonly string[] = Object.freeze(['pwd', 'otp', 'mfa'])
export const AMR_RECOVERY_CODE: readonly string[] = Object.freeze(['pwd', 'mfa'])

export type LoginOutcome = 'success' | 'mfa_required' | 'unknown_user' | 'bad_password' | 'disabled' | 'invalid_input' | 'rate_limited'
/** the second step of a login: `totp` and `recovery_code` are successes by the kind of code */
export type MfaOutcome = 'totp' | 'recovery_code' | 'invalid_code' | 'invalid_token' | 'invalid_input' | 'rate_limited'
/** a signed-in user's changes to their second factor (mfa-service.ts) */
export type MfaAccountAction = 'setup' | 'enable' | 'invalid_code' | 'disable' | 'recovery_codes' | 'wrong_password'
export type MeOutcome = 'success' | 'missing' | 'invalid'
export type RefreshMetric = 'success' | 'grace' | 'missing' | 'invalid' | 'expired' | 'reuse' | 'rate_limited'

/** What the use-cases report; the HTTP layer backs it with prom-client. */
export interface AuthEvents {
  login(outcome: LoginOutcome): void
  me(outcome: MeOutcome): void
  refresh(outcome: RefreshMetric): void
  register(outcome: 'success' | 'conflict' | 'invalid' | 'disabled' | 'rate_limited'): void
  rateLimited(limit: string): void
  passwordChange(outcome: PasswordChangeOutcome): void
  mfa(outcome: MfaOutcome): void
  mfaAccount(action: MfaAccountAction): void
}


export interface AuthServiceDeps {
  config: Config
  store: Store
  hasher: PasswordHasher
  policy: PasswordPolicy
  tokens: AccessTokens
  /** refreshed before a token is signed: a key rotated by authctl signs from the next one */
  keyring: Pick<Keyring, 'refresh' | 'confirmedAt'>
  /** /me's reads, and the checks of every access token (me-view.ts) */
  meView: MeView
  limiter: RateLimiter
  /**
   * The in-process limiter when it is the one `limiter` counts in (LMDB): admitLogin then answers
   * from it at once, without a promise (a login flood refused by login.per_ip is the 429 path).
   */
  memoryLimiter?: MemoryRateLimiter | null
  now: () => number
  log: Logger
  events: AuthEvents
  /** where rate-limit refusals are logged (see refusal-log.ts) */
  refusals: Pick<RefusalLog, 'refused'>
  /** signs and verifies device cookies */
  devices: DeviceCookies
  /** signs and verifies the mfaTokens of logins with a second factor */
  mfaTokens: MfaTokens
}

export interface AuthService {
  /**
   * Counts one login request against login.per_ip (docs/api.md, "Rate limits": malformed ones count too) before
   * its body is read. When the limit refuses it (counted and logged) returns when to retry, for
   * the 429 TOO_MANY_LOGINS answer; else undefined. login() does this itself unless told the
   * request was admitted already: the HTTP layer admits first, so a refused login is answered
   * without a promise or a body read.
   */
  admitLogin(client: ClientContext): { retryAfterS: number } | undefined | Promise<{ retryAfterS: number } | undefined>
  /**
   * A login with its body read: charged to login.per_ip first (admitLogin) unless `admitted` says
   * the caller did that already, as the HTTP layer does before reading the body.
   */
  login(body: Record<string, unknown>, client: ClientContext, admitted?: boolean): Promise<SignedIn | MfaChallenge>
  /**
   * The second step of a login with a factor: `{mfaToken, code}` or `{mfaToken, recoveryCode}`
   * (docs/api.md, "Second factor"). Signs in as login does; the session's `amr` says which code.
   */
  loginMfa(body: Record<string, unknown>, client: ClientContext): Promise<SignedIn>
  register(body: Record<string, unknown>, client: ClientContext): Promise<SignedIn>
  /** /me: the user and its 200 body */
  me(authorization: string | undefined): Promise<MeAnswer>
  /**
   * The live session and user an `Authorization: Bearer` header stands for, by the checks of /me
   * (and its two 401s: UNAUTHORIZED, INVALID_ACCESS_TOKEN), for the endpoints a signed-in user
   * calls about their own account. Counted in no metric: /me's are /me's.
   */
  authenticate(authorization: string | undefined): Promise<Authenticated>
  /** what a signed-in user does about their own account (account.ts), once authenticate()d */
  readonly account: Account
  /**
   * The login limits' charge of one password check of a signed-in user (as login charges it),
   * for the other places a password is checked (the second factor's disable and new codes).
   */
  readonly loginCharges: LoginCharges
  /** how many sessions /me remembers now (at most SESSIONS_REMEMBERED, me-view.ts) */
  readonly sessionsRemembered: number
  refresh(token: string | undefined, client: ClientContext): Promise<SignedIn>
  logout(token: string | undefined, body: Record<string, unknown>, client: ClientContext): Promise<void>
  /**
   * Forgets the login limits of an email (login.per_email, and login.per_ip_email from every
   * address) or of an address (login.per_ip and its login.per_ip_email): `authctl limits clear`.
   * Returns how many limiter keys went.
   */
  clearLoginLimits(target: LimitClearTarget): Promise<number>
}

/** A limiter's refusal */
type Refusal = Extract<ConsumeResult, { ok: false }>

/** a refresh the limiter refused (nothing decided or written) */
interface RefreshRefused {
  kind: 'rate_limited'
  attempt: Refusal
}

/** A password check the login limits refused: which limit, and when to retry */
export interface LoginRefusal {
  ok: false
  limit: string
  retryAfterS: number
}

/** The charge of a password check to the login limits, and its three endings. */
export interface LoginCharges {
  charge(email: string, userId: string, client: ClientContext): Promise<LoginCharge | LoginRefusal>
  /** un-counts a charge whose check never ran */
  release(charge: LoginCharge): Promise<void>
  /** un-counts a charge whose check was turned away by the hash queue (503), then rethrows */
  uncharged(charge: LoginCharge, err: unknown): Promise<never>
  /** the password was right: the charge is not a failure, and the address's failures are forgotten */
  cleared(charge: LoginCharge): Promise<void>
}

/** A password check charged to the login limits (chargeLogin in createAuthService). */
export interface LoginCharge {
  ok: true
  token: ConsumeToken
  /** login.per_ip_email's key, reset by a correct password */
  ipEmailKey: string
  /** the device the request's cookie names (the first that verifies), whoever it names */
  device: Device | null
}

/** What chargeLogin counts a password check on: its entries, and the device cookie that chose them */
interface ChargePlan {
  entries: RateEntry[]
  device: Device | null
  /** the device cookie names the email's user: counted per device, not per email */
  ours: boolean
  ipEmailKey: string
}

const BEARER = /^bearer +(\S+)\s*$/i


/**
 * An email longer than this as sent (UTF-16 units) cannot be a stored one (those are at most 254
 * bytes): it is treated as an unknown email without being canonicalised, since NFKC can make a
 * string 18 times longer (U+FDFA) and a body may hold 16 KB of them.
 */
export const MAX_EMAIL_INPUT = 1024

export { SESSIONS_REMEMBERED } from './me-view.js'

/**
 * The email of a failed login as its audit event keeps it: a well-formed address (with a dot in
 * its domain), else null, so that a password typed into the email field is not kept. "Well-formed"
 * is register's rule, which refuses a domain ToASCII reads as an IP address: `Summer@2024` would
 * otherwise pass as summer@0.0.7.232, the password in all but its case.
 */
function triedEmail(raw: string): string | null {
  const email = raw.length <= MAX_EMAIL_INPUT ? registrableEmail(raw) : null
  return email !== null && email.slice(email.lastIndexOf('@')).includes('.') ? email : null
}

export function createAuthService(deps: AuthServiceDeps): AuthService {
  const { config, store, hasher, tokens, limiter, log, events, refusals, devices, mfaTokens, meView } = deps
  const rl = config.rateLimit
  const sessionPolicy = config.sessions
  /**
   * A limit turned a client away: recorded once per limit and key per window, as a small write
   * of its own. The limiter says which refusal is the first of its key's window (firstBlock: it
   * keeps that on the key's own entry, or its row shared by every instance), so a flood of
   * refusals, from any number of keys and instances, records one event per key and window. `who`
   * is the email and user the limit counts, if any.
   */
  async function blocked(limit: string, rule: RateRule, refusal: Refusal, client: ClientContext, who: { userId?: string | null; email?: string | null } = {}): Promise<void> {
    if (refusal.firstBlock) await store.appendAudit([blockEvent(limit, rule, refusal.retryAfterS, client, who)])
  }
  function blockEvent(limit: string, rule: RateRule, retryAfterS: number, client: ClientContext, who: { userId?: string | null; email?: string | null } = {}): AuditDraft {
    const detail = { limit, window: formatDuration(rule.windowMs), retryAfter: retryAfterS }
    return apiDraft('rate_limit.block', client, { at: deps.now(), userId: who.userId, email: who.email, detail })
  }

  /** an event of no store change of its own (a failed login, a second step asked for) */
  const record = (event: AuditEventName, client: ClientContext, fields: Omit<Parameters<typeof apiDraft>[2], 'at'>): Promise<void> =>
    store.appendAudit([apiDraft(event, client, { at: deps.now(), ...fields })])

  /**
   * The device the request's cookie names (the first value that verifies), and whether it names
   * `userId`. Every value is verified, so the work does not depend on what the cookie holds.
   */
  function deviceOf(client: ClientContext, userId: string | undefined): { device: Device | null; ours: boolean } {
    const values = client.devices ?? []
    let device: Device | null = null
    let ours = false
    if (values.length === 0) devices.verify(undefined)
    for (const value of values) {
      const d = devices.verify(value)
      if (d === null) continue
      if (!ours && userId !== undefined && d.userIds.includes(userId)) {
        device = d
        ours = true
      } else device ??= d
    }
    return { device, ours }
  }

  /**
   * The checks of /me (me-view.ts: the lookups of one turn are one read of the store, which any
   * write by any process moves, so the next request sees it). `outcome` hears why a request was
   * refused.
   */
  function bearer(authorization: string | undefined, outcome?: (o: MeOutcome) => void): Promise<MeAnswer> {
    const m = authorization === undefined ? null : BEARER.exec(authorization)
    if (m === null) {
      outcome?.('missing')
      return Promise.reject(new AppError('UNAUTHORIZED'))
    }
    // one promise per request on /me's path, the hottest: no async function layered on another
    return meView.check(m[1]!).then((found) => {
      if (found === null) {
        outcome?.('invalid')
        throw new AppError('INVALID_ACCESS_TOKEN')
      }
      outcome?.('success')
      return found
    })
  }

  /**
   * An access token, signed by the key that signs now as the store has it: `keys` is the keyring's
   * read of the store's keys version, begun alongside the write that precedes the signature (on
   * PostgreSQL the two round trips are waited for once).
   */
  async function sign(claims: Parameters<AccessTokens['sign']>[0], keys: Promise<unknown> = deps.keyring.refresh()): Promise<{ token: string; expiresIn: number }> {
    // The store that cannot be read for the keys now: signed with the keys held, when they were
    // the store's a moment ago (KEYS_FRESH_MS, within which a revoked key is refused everywhere:
    // docs/api.md). The write before it stands (a session started, a refresh token rotated): a
    // 503 would lose the new token, and a retry with a rotated cookie after the grace would end
    // the session as reused. Keys older than that may include one revoked since: 503.
    await keys.catch((err: unknown) => {
      if (!isStoreUnavailable(err)) throw err
      const age = deps.now() - deps.keyring.confirmedAt
      if (!(age <= KEYS_FRESH_MS)) throw err
      log.warn({ event: 'keys_unread', keysAgeMs: Math.round(age) }, 'signed with the keys held: the store could not be read for them')
    })
    return tokens.sign(claims)
  }
  /** the keyring's read begun now, for a sign() after a write (its failure is sign()'s) */
  function readKeys(): Promise<unknown> {
    const keys = deps.keyring.refresh()
    keys.catch(() => {})
    return keys
  }

  /** A new session of `user` as it is stored, and its refresh token (the client's, given once) */
  function newSession(user: UserRecord, client: ClientContext, amr: readonly string[], now: number): { session: SessionRecord; refreshToken: string } {
    const refreshToken = newRefreshToken()
    const session: SessionRecord = {
      id: newSessionId(),
      userId: user.id,
      createdAt: now,
      lastUsedAt: now,
      expiresAt: now + sessionPolicy.absoluteTtlMs,
      ip: client.ip,
      userAgent: client.userAgent.slice(0, 256),
      refreshHash: hashToken(refreshToken),
      previousHash: null,
      rotatedAt: null,
      generation: 0,
      familyHash: familyHashOf(refreshToken),
      rotations: [],
      amr: [...amr],
    }
    return { session, refreshToken }
  }

  /** The answer of a sign-in whose session is written: an access token for it (`keys`: readKeys) */
  async function signedIn(user: UserRecord, session: SessionRecord, refreshToken: string, keys: Promise<unknown>): Promise<SignedIn> {
    const { token, expiresIn } = await sign({ sub: user.id, email: user.email, sid: session.id, amr: session.amr }, keys)
    return { user: { id: user.id, email: user.email }, accessToken: token, expiresIn, refreshToken, sessionId: session.id, cookieMaxAgeS: cookieMaxAge(session) }
  }
  /** SignedIn.cookieMaxAgeS of `session` now (rounded up: at login, exactly absolute_ttl) */
  const cookieMaxAge = (session: SessionRecord): number =>
    Math.max(0, Math.ceil((Math.min(session.expiresAt, session.createdAt + sessionPolicy.absoluteTtlMs) - deps.now()) / 1000))

  /**
   * Starts a session of `user` after a password check (a login, a second step), recording `event`
   * (login.success, mfa.success) in the same write. The write goes ahead only while the user is
   * still there, enabled and holds the password hash checked (`holder`): undefined, and nothing
   * written, when the password changed or the user was disabled or deleted meanwhile.
   */
  async function startSession(
    user: UserRecord,
    client: ClientContext,
    amr: readonly string[],
    event: { name: AuditEventName; detail?: Record<string, unknown> },
    holder: SessionHolder,
  ): Promise<SignedIn | undefined> {
    const now = deps.now()
    const { session, refreshToken } = newSession(user, client, amr, now)
    const who = { at: now, userId: user.id, email: user.email }
    const keys = readKeys()
    // beyond sessions.max_per_user, the user's session with the oldest last use ends, in the
    // same write: racing logins never leave more
    const evicted = await store.createSessionFor(holder, session, { max: sessionPolicy.maxPerUser, now, idleTtlMs: sessionPolicy.idleTtlMs, absoluteTtlMs: sessionPolicy.absoluteTtlMs }, {
      events: [apiDraft(event.name, client, { ...who, sessionId: session.id, detail: event.detail })],
      evicted: (e: SessionEntry) => apiDraft('session.evict', client, { ...who, sessionId: e.id, detail: { max: sessionPolicy.maxPerUser } }),
    })
    if (evicted === undefined) return undefined
    for (const e of evicted) log.info({ event: 'session_evict', sessionId: e.id, userId: e.userId }, 'session ended: sessions.max_per_user reached')
    return signedIn(user, session, refreshToken, keys)
  }

  /**
   * The hash `password` holds after a re-check: `stored` when the password verifies against it
   * (a re-hash at new parameters replaced the one checked), else `checked` (the password changed).
   * One more argon2 run, only when a stored hash moved under a login.
   */
  async function sameOrChanged(stored: string, password: string, checked: string): Promise<string> {
    return (await hasher.verify(stored, password)) ? stored : checked
  }

  /**
   * Whether an mfaToken still stands for `user`: the user is there and enabled, the factor is on
   * and is the one it was issued for, and the password is the one that was checked (a password
   * changed, or the factor reset, even if set up again, voids the token).
   */
  function stillGood(user: UserRecord | undefined, ticket: MfaTicket): user is UserRecord {
    return user !== undefined && !user.disabled && user.mfa !== undefined && mfaTokens.binds(ticket, user.passwordHash, user.mfa.secret)
  }

  function loginRefused(retryAfterS: number, limit: string, client: ClientContext): { retryAfterS: number } {
    events.login('rate_limited')
    events.rateLimited(limit)
    refusals.refused({ event: 'login', limit, ip: client.ip }, 'login refused by rate limit')
    return { retryAfterS }
  }

  /**
   * Charges one password check of `email` (canonical; `userId` its user, if any) to the login
   * limits, before the hash, atomically, as a failure until proven otherwise: fifty concurrent
   * guesses against a limit of five run exactly five hashes. login.per_ip_email, and
   * login.per_email, or login.per_device when the request carries a valid device cookie of this
   * user (docs/api.md, "Rate limits"). Login and a password change (a wrong current password is a
   * failed login) both check passwords through it. When a limit is spent: which one (the first
   * without room), and when to retry.
   */
  async function chargeLogin(email: string, userId: string | undefined, client: ClientContext): Promise<LoginCharge | LoginRefusal> {
    const plan = chargePlan(email, userId, client)
    return charged(plan, await limiter.consume(plan.entries), userId, email, client)
  }
  /** what chargeLogin counts a password check of `email` on */
  function chargePlan(email: string, userId: string | undefined, client: ClientContext): ChargePlan {
    // A valid device cookie of this email's user: this browser signed in as them before, so the
    // attempt is counted per device instead of per email, and an attacker who spends the
    // email's budget does not lock the user out of their own browser (docs/api.md, "Rate limits").
    const { device, ours } = deviceOf(client, userId)
    const ipEmailKey = limitKey('login_ip_email', client.ipKey, email)
    const entries = [
      { key: ipEmailKey, rule: rl.login.perIpEmail },
      ours
        ? { key: limitKey('login_device', device!.deviceId, userId!), rule: rl.login.perDevice }
        : { key: limitKey('login_email', email), rule: rl.login.perEmail, keep: Keep.ACCOUNT },
    ]
    return { entries, device, ours, ipEmailKey }
  }
  /** the charge a consume of `plan` made, or the limit that refused it (its block recorded) */
  async function charged(plan: ChargePlan, attempt: ConsumeResult, userId: string | undefined, email: string, client: ClientContext): Promise<LoginCharge | LoginRefusal> {
    if (!attempt.ok) {
      const limit = attempt.blockedBy === 0 ? 'login.per_ip_email' : plan.ours ? 'login.per_device' : 'login.per_email'
      const entry = plan.entries[attempt.blockedBy] ?? plan.entries[0]!
      await blocked(limit, entry.rule, attempt, client, { userId: userId ?? null, email: userId === undefined ? triedEmail(email) : email })
      return { ok: false, limit, retryAfterS: attempt.retryAfterS }
    }
    return { ok: true, token: attempt.token, ipEmailKey: plan.ipEmailKey, device: plan.device }
  }
  /**
   * A login's user (when `email` may be a stored one) and its charge (chargeLogin). Without a
   * device cookie nothing counted depends on the user: the user is read while the attempt is
   * counted (on PostgreSQL two round trips waited for once); a charge made for a read that then
   * failed is given back, and a refusal is answered whether the read failed or not.
   */
  async function userAndCharge(email: string, mayExist: boolean, client: ClientContext): Promise<[UserRecord | undefined, LoginCharge | LoginRefusal]> {
    const read = (): Promise<UserRecord | undefined> => (mayExist ? store.getUserByEmail(email) : Promise.resolve(undefined))
    if ((client.devices ?? []).length > 0) {
      const user = await read()
      return [user, await chargeLogin(email, user?.id, client)]
    }
    const plan = chargePlan(email, undefined, client)
    const [user, attempt] = await Promise.allSettled([read(), limiter.consume(plan.entries)])
    if (attempt.status === 'rejected') throw attempt.reason
    if (user.status === 'rejected') {
      // a refusal needs no user: answered (its block recorded) as it would be without the read
      if (!attempt.value.ok) return [undefined, await charged(plan, attempt.value, undefined, email, client)]
      await limiter.release(attempt.value.token).catch(() => {})
      throw user.reason
    }
    return [user.value, await charged(plan, attempt.value, user.value?.id, email, client)]
  }
  /** a check the hash queue turned away (503 Server busy) checked nothing: not a failed attempt */
  async function uncharged(charge: LoginCharge, err: unknown): Promise<never> {
    if (isAppError(err) && err.code === 'BUSY') await limiter.release(charge.token)
    throw err
  }
  /** the password was right: not a failure, and the failures of this address and email are forgotten */
  async function chargeCleared(charge: LoginCharge): Promise<void> {
    await limiter.release(charge.token, charge.ipEmailKey)
  }

  // with the in-process limiter, answered at once (no promise) unless it is a block to record;
  // with the database's, once it has counted, or at once when it already knows the refusal
  // the login.per_ip entry of the address seen last: a flood from one address (the 429 path)
  // builds its key once (the limiter never changes the entries it is given)
  let lastAdmitted: { ipKey: string; entries: readonly RateEntry[] } = { ipKey: '', entries: [] }
  function admitLogin(client: ClientContext): { retryAfterS: number } | undefined | Promise<{ retryAfterS: number } | undefined> {
    if (lastAdmitted.ipKey !== client.ipKey || lastAdmitted.entries.length === 0) {
      lastAdmitted = { ipKey: client.ipKey, entries: [{ key: limitKey('login_ip', client.ipKey), rule: rl.login.perIp, keep: Keep.ADDRESS }] }
    }
    const entries = lastAdmitted.entries
    const admitted = (perIp: ConsumeResult): { retryAfterS: number } | undefined | Promise<{ retryAfterS: number }> => {
      if (perIp.ok) return undefined
      const refused = loginRefused(perIp.retryAfterS, 'login.per_ip', client)
      if (!perIp.firstBlock) return refused
      return store.appendAudit([blockEvent('login.per_ip', rl.login.perIp, perIp.retryAfterS, client)]).then(() => refused)
    }
    const memory = deps.memoryLimiter
    if (memory !== undefined && memory !== null) return admitted(memory.consume(entries))
    // the database's limiter answers a refusal it found a moment ago from memory (a 429 flood)
    const known = limiter.refusedNow?.(entries)
    return known !== undefined ? admitted(known) : limiter.consume(entries).then(admitted)
  }

  const account = createAccount({
    ...deps,
    chargeLogin,
    release: (charge) => limiter.release(charge.token),
    uncharged,
    chargeCleared,
  })

  return {
    admitLogin,
    account,
    loginCharges: { charge: chargeLogin, release: (c) => limiter.release(c.token), uncharged, cleared: chargeCleared },

    async login(body, client, admitted = false) {
      if (!admitted) {
        const refused = await admitLogin(client)
        if (refused !== undefined) throw new AppError('TOO_MANY_LOGINS', refused)
      }

      const input = credentials(body)
      if (input === null) {
        events.login('invalid_input')
        log.info({ event: 'login', outcome: 'invalid_input', ip: client.ip }, 'login rejected')
        throw new AppError('CREDENTIALS_REQUIRED')
      }
      // an email too long to be a stored one is not canonicalised (NFKC can grow it 18-fold): it
      // is an unknown email, hashed against the dummy and counted like one (under its own key)
      const storable = input.email.length <= MAX_EMAIL_INPUT
      const email = storable ? canonicalEmail(input.email) : input.email
      // counted before the hash, per device for a browser that signed in as this user before
      const [user, attempt] = await userAndCharge(email, storable && mayBeStoredEmail(email), client)
      if (!attempt.ok) throw new AppError('TOO_MANY_LOGINS', loginRefused(attempt.retryAfterS, attempt.limit, client))
      const { device } = attempt
      const uncounted = (err: unknown): Promise<never> => uncharged(attempt, err)
      // the hot path of a flood of guesses: one small append, nothing read
      const failed = (reason: LoginFailureReason, who: { userId?: string; email: string | null }): Promise<void> =>
        record('login.failure', client, { ...who, detail: { reason } })

      if (user === undefined) {
        // the dummy hash makes an unknown email cost what a wrong password costs (under the
        // stored hashes' parameters, in their proportions, fixed per email: passwords.ts)
        await hasher.verifyDummy(input.password, email).catch(uncounted)
        events.login('unknown_user')
        log.info({ event: 'login', outcome: 'unknown_user', ip: client.ip }, 'login failed')
        await failed('unknown_user', { email: triedEmail(input.email) })
        throw new AppError('INVALID_CREDENTIALS')
      }
      const ok = await hasher.verify(user.passwordHash, input.password).catch(uncounted)
      if (!ok || user.disabled) {
        const outcome = ok ? 'disabled' : 'bad_password'
        events.login(outcome)
        log.info({ event: 'login', outcome, ip: client.ip, userId: user.id }, 'login failed')
        await failed(outcome, { userId: user.id, email: user.email })
        throw new AppError('INVALID_CREDENTIALS')
      }

      // the failures of this address and email forgotten while the session is written; a clear
      // that fails (the database's limiter out of reach) leaves them counted, and fails no login
      // whose session is written
      const cleared = chargeCleared(attempt).catch((err: unknown) => {
        log.warn({ event: 'login_limits_kept', err, ip: client.ip, userId: user.id }, 'failed logins not cleared after a right password')
      })
      // the hash the password was checked against, or what replaced it
      let checkedHash = user.passwordHash
      if (hasher.needsRehash(user.passwordHash)) {
        try {
          const passwordHash = await hasher.hash(input.password)
          const stored = await store.updateUser(user.id, (u) => (u.passwordHash === user.passwordHash ? { ...u, passwordHash, updatedAt: deps.now() } : u))
          if (stored?.passwordHash === passwordHash) checkedHash = passwordHash
          // replaced meanwhile: by a concurrent login's re-hash (the same password) or a change
          else if (stored !== undefined) checkedHash = await sameOrChanged(stored.passwordHash, input.password, checkedHash)
        } catch (err) {
          // a full hash queue must not fail a correct login: the re-hash waits for the next one
          if (!isAppError(err) || err.code !== 'BUSY') throw err
          log.warn({ event: 'rehash_skipped', userId: user.id }, 'password re-hash postponed: hash queue full')
        }
      }
      // The factor is looked at only now, after the password verified: a wrong password is
      // answered above, the same whether a factor is on or not (body, headers and time).
      if (user.mfa !== undefined) {
        const { token, expiresIn } = mfaTokens.issue(user.id, checkedHash, user.mfa.secret)
        events.login('mfa_required')
        log.info({ event: 'login', outcome: 'mfa_required', ip: client.ip, userId: user.id }, 'login needs a second factor')
        await Promise.all([record('login.mfa_required', client, { userId: user.id, email: user.email }), cleared])
        return { mfaRequired: true, mfaToken: token, expiresIn, user: { id: user.id, email: user.email } }
      }
      let [signedIn] = await Promise.all([startSession(user, client, AMR_PASSWORD, { name: 'login.success' }, { passwordHash: checkedHash }), cleared])
      if (signedIn === undefined) {
        // The stored hash is not the one checked. A re-hash at new parameters by a concurrent
        // login of this user (the same password) is checked once more, against the hash now
        // stored. Otherwise the password changed, or the user was disabled or deleted, while this
        // login's hash ran: nothing was written, and it is refused as it would have been a moment
        // later (the change ended every other session; this one must not outlive it).
        let now = await store.getUser(user.id)
        if (now !== undefined && !now.disabled && now.passwordHash !== checkedHash && (await sameOrChanged(now.passwordHash, input.password, checkedHash)) !== checkedHash) {
          signedIn = await startSession(now, client, AMR_PASSWORD, { name: 'login.success' }, { passwordHash: now.passwordHash })
          // refused again: named by the user as it is after that
          if (signedIn === undefined) now = await store.getUser(user.id)
        }
        if (signedIn === undefined) {
          const outcome: LoginFailureReason = now === undefined ? 'unknown_user' : now.disabled ? 'disabled' : 'bad_password'
          events.login(outcome)
          log.info({ event: 'login', outcome, ip: client.ip, userId: user.id }, 'login failed')
          await failed(outcome, now === undefined ? { email: triedEmail(input.email) } : { userId: user.id, email: now.email })
          throw new AppError('INVALID_CREDENTIALS')
        }
      }
      // the same device when this browser already had one, naming this user first and keeping
      // the users it named
      signedIn.deviceCookie = devices.issue(user.id, device)
      events.login('success')
      log.info({ event: 'login', outcome: 'success', ip: client.ip, userId: user.id, sessionId: signedIn.sessionId }, 'login succeeded')
      return signedIn
    },

    async register(body, client) {
      if (!config.registration.enabled) {
        events.register('disabled')
        throw new AppError('REGISTRATION_DISABLED')
      }
      // A malformed request is answered before anything is counted (docs/api.md, "Rate limits"):
      // checking it costs less than counting it, and it must not take a limiter key.
      const input = credentials(body)
      if (input === null) {
        events.register('invalid')
        throw new AppError('CREDENTIALS_REQUIRED')
      }
      // far longer than 254 bytes however NFKC treats it: refused before canonicalising
      const email = input.email.length <= MAX_EMAIL_INPUT ? registrableEmail(input.email) : null
      if (email === null) {
        events.register('invalid')
        throw new AppError('INVALID_EMAIL')
      }
      try {
        deps.policy.check(input.password)
      } catch (err) {
        events.register('invalid')
        throw err
      }
      const allowed = await limiter.consume([{ key: limitKey('register_ip', client.ipKey), rule: rl.register.perIp, keep: Keep.ADDRESS }])
      if (!allowed.ok) {
        await blocked('register.per_ip', rl.register.perIp, allowed, client)
        events.register('rate_limited')
        events.rateLimited('register.per_ip')
        refusals.refused({ event: 'register', limit: 'register.per_ip', ip: client.ip }, 'registration refused by rate limit')
        throw new AppError('TOO_MANY_REGISTRATIONS', { retryAfterS: allowed.retryAfterS })
      }
      if ((await store.getUserByEmail(email)) !== undefined) {
        events.register('conflict')
        throw new AppError('EMAIL_TAKEN')
      }
      const now = deps.now()
      // only these fields are taken from the request: nothing else in the body reaches the record
      const user: UserRecord = {
        id: newUserId(),
        email,
        passwordHash: await hasher.hash(input.password),
        createdAt: now,
        updatedAt: now,
        disabled: false,
      }
      // The user and its first session in one write, with the event that names both: an answer
      // that never came (a timeout, a 503) leaves neither, and the same register can be sent
      // again. The uniqueness check that counts is this one, inside that write.
      const { session, refreshToken } = newSession(user, client, AMR_PASSWORD, now)
      // the keys read before the write, not beside it: a failure of it (the database out of
      // reach) answered after the write would leave the account behind a 503
      const keys = readKeys()
      await keys
      if (!(await store.createUser(user, [apiDraft('register', client, { at: now, userId: user.id, email, sessionId: session.id })], session))) {
        events.register('conflict')
        throw new AppError('EMAIL_TAKEN')
      }
      events.register('success')
      log.info({ event: 'register', outcome: 'success', ip: client.ip, userId: user.id }, 'user registered')
      const signed = await signedIn(user, session, refreshToken, keys)
      signed.deviceCookie = devices.issue(user.id, deviceOf(client, undefined).device)
      return signed
    },

    async loginMfa(body, client) {
      const { mfaToken, code, recoveryCode } = body
      // exactly one of the two codes, as a non-empty string
      const totp = typeof code === 'string' && code !== '' && recoveryCode === undefined
      const recovery = typeof recoveryCode === 'string' && recoveryCode !== '' && code === undefined
      if (typeof mfaToken !== 'string' || mfaToken === '' || (!totp && !recovery)) {
        events.mfa('invalid_input')
        throw new AppError('MFA_FIELDS_REQUIRED')
      }
      const ticket = mfaTokens.verify(mfaToken)
      const user = ticket === null ? undefined : await store.getUser(ticket.userId)
      if (ticket === null || !stillGood(user, ticket) || (await store.mfaTokenUsed(ticket.id, ticket.expiresAt))) {
        events.mfa('invalid_token')
        log.info({ event: 'login_mfa', outcome: 'invalid_token', ip: client.ip, ...(user !== undefined && { userId: user.id }) }, 'second step refused')
        throw new AppError('INVALID_MFA_TOKEN')
      }
      // Counted before the code is checked, atomically, as a failure until proven otherwise, per
      // user whichever mfaToken it came with: fifty concurrent guesses against a limit of five
      // check exactly five codes.
      const mfaKey = limitKey('mfa_user', user!.id)
      const attempt = await limiter.consume([{ key: mfaKey, rule: rl.mfa.perUser, keep: Keep.ACCOUNT }])
      if (!attempt.ok) {
        await blocked('mfa.per_user', rl.mfa.perUser, attempt, client, { userId: user!.id, email: user!.email })
        events.mfa('rate_limited')
        events.rateLimited('mfa.per_user')
        refusals.refused({ event: 'login_mfa', limit: 'mfa.per_user', ip: client.ip }, 'second step refused by rate limit')
        throw new AppError('TOO_MANY_MFA_ATTEMPTS', { retryAfterS: attempt.retryAfterS })
      }
      const now = deps.now()
      const factor = user!.mfa!
      // checked here, then again inside the write on the record as it is then: a concurrent step
      // may have taken this TOTP step or this recovery code meanwhile (only one of them wins)
      const matches = (u: UserRecord): number | null => {
        if (totp) return matchTotp(u.mfa!.secret, code as string, now, u.mfa!.lastStep)
        const i = matchRecoveryCode(u.id, u.mfa!.recoveryCodes, recoveryCode as string)
        return i === -1 ? null : i
      }
      let outcome: 'invalid_code' | 'invalid_token' | 'success' = 'invalid_code'
      let amr = AMR_TOTP
      if (matches(user!) !== null) {
        outcome = await store.finishMfaStep(ticket, user!.id, now, (current, used) => {
          if (used || !stillGood(current, ticket)) return { action: 'none', result: 'invalid_token' }
          const m = current!.mfa!
          const found = matches(current!)
          if (found === null) return { action: 'none', result: 'invalid_code' }
          const mfa = totp ? { ...m, lastStep: found } : { ...m, recoveryCodes: m.recoveryCodes.filter((_, i) => i !== found) }
          return { action: 'use', user: { ...current!, mfa }, result: 'success' }
        })
        if (!totp) amr = AMR_RECOVERY_CODE
      }
      if (outcome === 'invalid_token') {
        // used up by a concurrent second step: that was no guess at a code
        await limiter.release(attempt.token)
        events.mfa('invalid_token')
        log.info({ event: 'login_mfa', outcome: 'invalid_token', ip: client.ip, userId: user!.id }, 'second step refused')
        throw new AppError('INVALID_MFA_TOKEN')
      }
      if (outcome === 'invalid_code') {
        events.mfa('invalid_code')
        log.info({ event: 'login_mfa', outcome: 'invalid_code', method: totp ? 'totp' : 'recovery_code', ip: client.ip, userId: user!.id }, 'second step failed')
        await record('mfa.failure', client, { userId: user!.id, email: user!.email, detail: { method: totp ? 'totp' : 'recovery_code' } })
        throw new AppError('INVALID_MFA_CODE')
      }
      // a right code: not a failure, and the user's earlier typos are forgiven
      await limiter.release(attempt.token, mfaKey)
      const method = totp ? 'totp' : 'recovery_code'
      const signedIn = await startSession(user!, client, amr, { name: 'mfa.success', detail: { method } }, { passwordHash: user!.passwordHash })
      if (signedIn === undefined) {
        // the password changed, or the user was disabled or deleted, since the step was taken:
        // the token no longer stands, as the step would have found a moment later
        events.mfa('invalid_token')
        log.info({ event: 'login_mfa', outcome: 'invalid_token', ip: client.ip, userId: user!.id }, 'second step refused')
        throw new AppError('INVALID_MFA_TOKEN')
      }
      signedIn.deviceCookie = devices.issue(user!.id, deviceOf(client, user!.id).device)
      events.mfa(method)
      log.info(
        { event: 'login_mfa', outcome: 'success', method, ip: client.ip, userId: user!.id, sessionId: signedIn.sessionId, ...(!totp && { recoveryCodesLeft: factor.recoveryCodes.length - 1 }) },
        'login succeeded with a second factor',
      )
      return signedIn
    },

    get sessionsRemembered() {
      return meView.size
    },

    me(authorization) {
      return bearer(authorization, events.me)
    },

    async authenticate(authorization) {
      const { user, sessionId } = await bearer(authorization)
      return { user, sessionId }
    },

    async refresh(token, client) {
      // no cookie, or not one of ours: answered before anything is counted, so cookie-less
      // requests (from any number of addresses) take no limiter key
      if (token === undefined || token === '') {
        events.refresh('missing')
        throw new AppError('REFRESH_REQUIRED')
      }
      if (!REFRESH_TOKEN.test(token)) {
        events.refresh('invalid')
        throw new AppError('INVALID_REFRESH_TOKEN')
      }
      const hash = hashToken(token)
      // the session's user, read with it: the one the decision that took effect saw
      let user: UserRecord | undefined
      // the time of the decision: taken once the charge is made (it may have waited for its counter)
      let now: number | undefined
      // counted per address before the token is looked at (on PostgreSQL in the read's round trip)
      const charge: StoreCharge<RefreshOutcome | RefreshRefused> = {
        limiter,
        entries: [{ key: limitKey('refresh_ip', client.ipKey), rule: rl.refresh.perIp, keep: Keep.ADDRESS }],
        refused: (attempt) => ({ kind: 'rate_limited', attempt }),
      }
      // the keys read while the decision is written; a refused refresh reads none
      let keys: Promise<unknown> | undefined
      const outcome = await store.refreshSession<RefreshOutcome | RefreshRefused>(
        hash,
        (s, u) => {
          keys ??= readKeys()
          now ??= deps.now()
          user = u
          const d = decideRefresh(s, { token, hash }, { now, policy: sessionPolicy })
          // the session ends in this write: its event with it, naming its user (id and email, as
          // read with the session) and who presented the token
          if (d.result.kind !== 'reuse') return d
          const event = apiDraft('refresh.reuse', client, { at: now, userId: d.result.session.userId, email: u?.email ?? null, sessionId: d.result.session.id })
          return { ...d, audit: [event] }
        },
        familyHashOf(token),
        charge,
      )
      if (outcome.kind === 'rate_limited') {
        await blocked('refresh.per_ip', rl.refresh.perIp, outcome.attempt, client)
        events.refresh('rate_limited')
        events.rateLimited('refresh.per_ip')
        throw new AppError('TOO_MANY_REQUESTS', { retryAfterS: outcome.attempt.retryAfterS })
      }
      if (outcome.kind === 'reuse') {
        events.refresh('reuse')
        log.warn({ event: 'refresh_reuse', sessionId: outcome.session.id, userId: outcome.session.userId, ip: client.ip }, 'refresh token reused: session revoked')
      }
      if (outcome.kind !== 'rotated' && outcome.kind !== 'grace') {
        if (outcome.kind !== 'reuse') events.refresh(outcome.kind === 'expired' ? 'expired' : 'invalid')
        throw new AppError('INVALID_REFRESH_TOKEN')
      }
      if (user === undefined || user.disabled) {
        events.refresh('invalid')
        throw new AppError('INVALID_REFRESH_TOKEN')
      }
      // the session's amr, as its login proved it
      const { token: accessToken, expiresIn } = await sign({ sub: user.id, email: user.email, sid: outcome.session.id, amr: outcome.session.amr }, keys ?? readKeys())
      events.refresh(outcome.kind === 'grace' ? 'grace' : 'success')
      return { user: { id: user.id, email: user.email }, accessToken, expiresIn, refreshToken: outcome.token, sessionId: outcome.session.id, cookieMaxAgeS: cookieMaxAge(outcome.session) }
    },

    async clearLoginLimits(target) {
      // a key of one part is the only one of its axis with that part: resetByPart counts it
      if ('email' in target) {
        return (await limiter.resetByPart('login_email', 0, target.email)) + (await limiter.resetByPart('login_ip_email', 1, target.email))
      }
      return (await limiter.resetByPart('login_ip', 0, target.ipKey)) + (await limiter.resetByPart('login_ip_email', 0, target.ipKey))
    },

    async logout(token, body, client) {
      if (token === undefined || !REFRESH_TOKEN.test(token)) return
      // any token of the session, the live one or a used one: whoever holds one may end it
      const hash = hashToken(token)
      const sid = await store.findSessionIdByRefreshHash(hash, familyHashOf(token))
      const session = sid === undefined ? undefined : await store.getSession(sid)
      if (session === undefined) return
      // every session of the user, though, only for the holder of the live token, or of one
      // replaced within the grace (a lost response: refresh would answer it with the live one)
      const email = (await store.getUser(session.userId))?.email ?? null
      const signedOut = (detail: Record<string, unknown>) => [apiDraft('logout', client, { at: deps.now(), userId: session.userId, email, sessionId: session.id, detail })]
      const current = (): boolean =>
        sameHash(hash, session.refreshHash) || decideRefresh(session, { token, hash }, { now: deps.now(), policy: sessionPolicy }).result.kind === 'grace'
      if (body.all === true && current()) {
        const n = await store.revokeUserSessions(session.userId, signedOut({ all: true }))
        log.info({ event: 'logout', all: true, sessions: n, userId: session.userId, ip: client.ip }, 'signed out everywhere')
      } else {
        await store.revokeSession(session.id, signedOut({}))
        log.info({ event: 'logout', sessionId: session.id, userId: session.userId, ip: client.ip }, 'signed out')
      }
    },
  }
}
