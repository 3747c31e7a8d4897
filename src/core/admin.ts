/**
 * The administrator's operations on users, sessions and keys, shared by `authctl` and its TUI.
 * They work on the Store directly (no daemon needed) and every change is visible to a running
 * daemon on its next request: it reads users and sessions from the store per request and
 * re-reads keys whenever the store's keys version changes. No printing, no prompts, no process
 * state here: callers ask for passwords and confirmations, and render the plain data returned.
 * A refusal is an AppError (USER_NOT_FOUND, USER_EXISTS …) whose message is a sentence fit to
 * show the admin.
 */
import type { Algorithm, Config } from '../config/types.js'
import { settleKeys, type AuditDraft, type KeyRecord, type SessionCursor, type SessionEntry, type SessionRecord, type Store, type UserRecord } from '../store/store.js'
import { AppError, quoted } from '../errors.js'
import { adminDraft, type AuditEventName, type DraftFields } from './audit.js'
import { blank } from './credentials.js'
import { canonicalEmail, checkEmail, mayBeStoredEmail } from './email.js'
import { generateKey, keyStates } from './keys.js'
import type { PasswordHasher } from './passwords.js'
import type { PasswordPolicy } from './password-policy.js'
import { expiresIfUnused, isLive } from './sessions.js'
import { newUserId } from './users.js'

/** Times are epoch milliseconds throughout; renderers format them. */
export interface UserSummary {
  id: string
  email: string
  createdAt: number
  updatedAt: number
  disabled: boolean
  /** live sessions (expired ones are not counted) */
  sessions: number
  /** whether the TOTP second factor is on (its secret never leaves the store through here) */
  mfaEnabled: boolean
}

export interface SessionSummary {
  id: string
  userId: string
  /** null if the user no longer exists */
  email: string | null
  createdAt: number
  lastUsedAt: number
  /** when the session dies if left unused: the earlier of the idle and the absolute expiry */
  expiresAt: number
  /** when it dies however it is used: createdAt + sessions.absolute_ttl (as configured now, or at login if that was sooner) */
  absoluteExpiresAt: number
  ip: string
  userAgent: string
}

export interface KeySummary {
  kid: string
  alg: Algorithm
  /**
   * the effective state: a next key whose time has come is active (and the key it replaced
   * retiring); a retiring key past its verify window is retired
   */
  state: KeyRecord['state']
  createdAt: number
  /** when it started signing; for a next key, when it will */
  activatedAt: number | null
  retiringAt: number | null
  retiredAt: number | null
  /** for a retiring key: when its last access token expires and it stops verifying */
  verifiesUntil: number | null
}

export interface SessionScanOptions {
  /** sessions per page (default 500) */
  pageSize?: number
  signal?: AbortSignal
}

/** index entries read per stretch of a listing */
const SCAN_CHUNK = 2000
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

export interface PasswordTools {
  hasher: PasswordHasher
  policy: PasswordPolicy
}

export interface AdminDeps {
  store: Store
  config: Config
  now: () => number
  /**
   * The password hasher and policy, built on first use: argon2 and the common-password list load
   * only for the operations that hash (see `lazyPasswordTools`).
   */
  passwords: () => Promise<PasswordTools>
  /** who the audit log names for these operations (default `authctl:<os user>`) */
  actor?: string
}

export interface Admin {
  /** the user named by id or email (any case or Unicode form), or undefined */
  findUser(ref: string): Promise<UserRecord | undefined>
  /** like findUser, but rejects with USER_NOT_FOUND */
  resolveUser(ref: string): Promise<UserRecord>
  listUsers(): Promise<UserSummary[]>
  showUser(ref: string): Promise<UserSummary>
  /** canonical form of an email for a new user; rejects with USER_EMAIL_INVALID or USER_EXISTS (call before asking for a password) */
  checkNewEmail(email: string): Promise<string>
  /** throws PASSWORD_BLANK (white space alone), or the policy's AppError (PASSWORD_TOO_SHORT / _TOO_LONG / _TOO_COMMON) */
  checkPassword(password: string): Promise<void>
  addUser(email: string, password: string): Promise<UserSummary>
  /** sets a new password and revokes all the user's sessions */
  setPassword(ref: string, password: string): Promise<{ user: UserSummary; revokedSessions: number }>
  /** disables the user (login, refresh and /me refuse it) and revokes all its sessions */
  disableUser(ref: string): Promise<{ user: UserSummary; revokedSessions: number }>
  enableUser(ref: string): Promise<{ user: UserSummary }>
  /** deletes the user and all its sessions */
  removeUser(ref: string): Promise<{ user: UserSummary; revokedSessions: number }>
  /**
   * Turns the user's second factor off, for a user who lost the device: the TOTP secret, the
   * recovery codes and any unconfirmed setup go in one write, and the user signs in with the
   * password alone. `wasEnabled` says whether a factor was on. Sessions are left alone.
   */
  resetMfa(ref: string): Promise<{ user: UserSummary; wasEnabled: boolean; setupRemoved: boolean }>

  /** live sessions, newest first; of one user if `userRef` is given */
  listSessions(userRef?: string): Promise<SessionSummary[]>
  /**
   * The same list a page at a time, for a store of any size: only the index entries of live
   * sessions are held (to sort them), records are read one page at a time, and the event loop
   * turns between pages. USER_NOT_FOUND rejects the first page asked for.
   */
  sessionPages(userRef?: string, opts?: SessionScanOptions): AsyncIterable<SessionSummary[]>
  /**
   * What the terminal UI lists, read like sessionPages, a bounded stretch at a time: every user
   * with its live sessions counted, the `sessions.limit` most recently used live sessions whose
   * user's email `match`es, and how many match in all. Rejects with the signal's reason once
   * `signal` is aborted.
   */
  overview(opts: { sessions: { limit: number; match?: (email: string | null) => boolean }; signal?: AbortSignal }): Promise<{
    users: UserSummary[]
    sessions: SessionSummary[]
    sessionsTotal: number
  }>
  /** ends one session: its refresh token and its access tokens stop working */
  revokeSession(id: string): Promise<SessionSummary>
  revokeUserSessions(userRef: string): Promise<{ user: UserSummary; revoked: number }>
  revokeAllSessions(): Promise<{ revoked: number }>

  /** all keys with their effective state, newest first; records the changes by time it sees */
  listKeys(): Promise<KeySummary[]>
  /**
   * A new key, published in the JWKS at once. It is `next` for `tokens.key_lead`, then signs by
   * itself (every daemon derives that from its activation time); with `now` (or when no key
   * signs) it signs at once. The key signing until then turns retiring and keeps verifying
   * until its last token expires. A key still next is replaced. `key` is the new key, `active`
   * the key that signs now, `retiring` the keys this rotation stopped signing, `replaced` the
   * keys still next that it removed.
   */
  rotateKey(algorithm?: Algorithm, opts?: { now?: boolean }): Promise<{ key: KeySummary; active: KeySummary; retiring: KeySummary[]; replaced: KeySummary[] }>
  /** the key `revokeKey(kid)` would delete; throws what it would throw, changes nothing (ask, then revoke) */
  checkRevokeKey(kid: string): Promise<KeySummary>
  /**
   * Deletes a key at once: tokens signed with it stop verifying (README, "Administer with authctl": key compromise).
   * The active key is first replaced by a new one (its algorithm, unless `algorithm` says
   * otherwise), so the daemon always has a key to sign with; `active` is that new key, and
   * `replaced` the keys still next that its rotation removed.
   */
  revokeKey(kid: string, opts?: { algorithm?: Algorithm }): Promise<{ revoked: KeySummary; active: KeySummary | null; replaced: KeySummary[] }>
}

/**
 * The canonical form of a new user's email, by the rules of POST /api/auth/register (README), or
 * USER_EMAIL_INVALID with the reason said. Needs no store: `user add` checks it before it makes one.
 */
export function newEmailForm(email: string): string {
  const checked = checkEmail(email)
  if ('problem' in checked) throw new AppError('USER_EMAIL_INVALID', { params: { email: quoted(email), problem: checked.problem } })
  return checked.email
}

/**
 * A new password by register's rules: PASSWORD_BLANK for white space alone (register's
 * CREDENTIALS_REQUIRED: login would refuse it, so the user could never sign in), then the policy's PASSWORD_TOO_SHORT / _TOO_LONG /
 * _TOO_COMMON. Needs no store: `user add` checks it before it makes one.
 */
export async function checkNewPassword(passwords: () => Promise<PasswordTools>, password: string): Promise<void> {
  if (blank(password)) throw new AppError('PASSWORD_BLANK')
  const { policy } = await passwords()
  policy.check(password)
}

/** Hasher and policy from the config, created once, on first call. */
export function lazyPasswordTools(config: Config): () => Promise<PasswordTools> {
  let tools: Promise<PasswordTools> | undefined
  return () => {
    tools ??= (async () => {
      const [{ createPasswordHasher }, { createPasswordPolicy }] = await Promise.all([import('./passwords.js'), import('./password-policy.js')])
      const p = config.passwords
      const [hasher, policy] = await Promise.all([
        createPasswordHasher({ memoryKib: p.memoryKib, timeCost: p.timeCost, parallelism: p.parallelism, concurrency: 1, maxQueue: 16 }),
        createPasswordPolicy({ minLength: p.minLength, maxLength: p.maxLength }),
      ])
      return { hasher, policy }
    })()
    return tools
  }
}

export function createAdmin(deps: AdminDeps): Admin {
  const { store, config, now } = deps
  const t = config.tokens
  // a retiring key verifies for one access-token lifetime (plus leeway) after it stopped signing
  const verifyWindowMs = t.accessTtlMs + t.clockToleranceMs

  const findUser = async (ref: string): Promise<UserRecord | undefined> => {
    const trimmed = ref.trim()
    if (trimmed === '') return undefined
    // ids never contain "@", so an id and an email cannot be confused
    const byId = trimmed.includes('@') ? undefined : await store.getUser(trimmed)
    if (byId !== undefined) return byId
    const email = canonicalEmail(trimmed)
    return mayBeStoredEmail(email) ? store.getUserByEmail(email) : undefined
  }
  const resolveUser = async (ref: string): Promise<UserRecord> => {
    const user = await findUser(ref)
    if (user === undefined) throw new AppError('USER_NOT_FOUND', { params: { ref: quoted(ref) } })
    return user
  }
  const liveSessions = async (userId?: string): Promise<SessionRecord[]> => {
    const at = now()
    return (await store.listSessions(userId)).filter((s) => isLive(s, at, config.sessions))
  }
  // from the index entries: no session record is read to count them
  const liveCount = async (userId: string): Promise<number> => {
    const at = now()
    let n = 0
    let after: SessionCursor | undefined
    for (;;) {
      const page = await store.sessionEntries({ userId, after, limit: SCAN_CHUNK })
      for (const e of page) if (isLive(e, at, config.sessions)) n++
      if (page.length < SCAN_CHUNK) return n
      after = page[page.length - 1]
    }
  }
  const summary = async (u: UserRecord): Promise<UserSummary> => ({
    id: u.id,
    email: u.email,
    createdAt: u.createdAt,
    updatedAt: u.updatedAt,
    disabled: u.disabled,
    sessions: await liveCount(u.id),
    mfaEnabled: u.mfa !== undefined,
  })
  /** users' emails by id, each read once (null: no such user) */
  const emailCache = (): ((userId: string) => Promise<string | null>) => {
    const emails = new Map<string, string | null>()
    return async (userId) => {
      if (!emails.has(userId)) emails.set(userId, (await store.getUser(userId))?.email ?? null)
      return emails.get(userId) ?? null
    }
  }
  /**
   * The live sessions' index entries, `keep`-filtered, a chunk per turn of the event loop: the
   * order key and the id of each, nothing more (100 000 sessions are a few MB here).
   */
  const scanLive = async (opts: {
    userId?: string
    by: 'createdAt' | 'lastUsedAt'
    keep?: (e: SessionEntry) => Promise<boolean>
    top?: number
    /** live sessions counted per user, kept or not */
    perUser?: Map<string, number>
    signal?: AbortSignal
  }): Promise<{ ids: string[]; total: number }> => {
    const at = now()
    let found: Array<[number, string]> = []
    let total = 0
    let after: SessionCursor | undefined
    // newest first, then by id: the order every listing shows
    const order = (a: [number, string], b: [number, string]): number => b[0] - a[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)
    for (;;) {
      opts.signal?.throwIfAborted()
      const page = await store.sessionEntries({ userId: opts.userId, after, limit: SCAN_CHUNK })
      for (const e of page) {
        if (!isLive(e, at, config.sessions)) continue
        opts.perUser?.set(e.userId, (opts.perUser.get(e.userId) ?? 0) + 1)
        if (opts.keep !== undefined && !(await opts.keep(e))) continue
        total++
        found.push([e[opts.by], e.id])
      }
      // only the top ones are wanted: never hold more than twice as many
      if (opts.top !== undefined && found.length > 2 * opts.top) found = found.sort(order).slice(0, opts.top)
      if (page.length < SCAN_CHUNK) break
      after = page[page.length - 1]
      await nextTurn()
    }
    found.sort(order)
    return { ids: (opts.top === undefined ? found : found.slice(0, opts.top)).map(([, id]) => id), total }
  }
  // the summaries of `ids` still live, reading their records
  const summaries = async (ids: string[], emailOf: (userId: string) => Promise<string | null>): Promise<SessionSummary[]> => {
    const at = now()
    const out: SessionSummary[] = []
    for (const s of await store.getSessions(ids)) {
      if (s !== undefined && isLive(s, at, config.sessions)) out.push(sessionSummary(s, await emailOf(s.userId)))
    }
    return out
  }
  const sessionSummary = (s: SessionRecord, email: string | null): SessionSummary => ({
    id: s.id,
    userId: s.userId,
    email,
    createdAt: s.createdAt,
    lastUsedAt: s.lastUsedAt,
    expiresAt: expiresIfUnused(s, config.sessions),
    absoluteExpiresAt: Math.min(s.expiresAt, s.createdAt + config.sessions.absoluteTtlMs),
    ip: s.ip,
    userAgent: s.userAgent,
  })
  /** every key in its effective state at `at` (keyStates) */
  const effectiveKeys = async (at: number): Promise<KeyRecord[]> => keyStates(await store.listKeys(), at, verifyWindowMs)
  /** `k` as `effectiveKeys` gives it */
  const keySummary = (k: KeyRecord): KeySummary => ({
    kid: k.kid,
    alg: k.alg,
    state: k.state,
    createdAt: k.createdAt,
    activatedAt: k.activatedAt,
    retiringAt: k.retiringAt,
    retiredAt: k.retiredAt,
    verifiesUntil: k.state === 'retiring' && k.retiringAt !== null ? k.retiringAt + verifyWindowMs : null,
  })
  const summaryOf = async (kid: string, at: number): Promise<KeySummary | undefined> => {
    const k = (await effectiveKeys(at)).find((x) => x.kid === kid)
    return k === undefined ? undefined : keySummary(k)
  }
  /** an admin.* event of a change (README, "Audit log"), recorded in the write that makes it */
  const audit = (event: AuditEventName, fields: Omit<DraftFields, 'at'> = {}): AuditDraft[] => [adminDraft(event, { at: now(), actor: deps.actor, ...fields })]
  const ofUser = (u: UserRecord) => ({ userId: u.id, email: u.email })
  const updateUser = async (user: UserRecord, change: (u: UserRecord) => UserRecord, events: readonly AuditDraft[]): Promise<UserRecord> => {
    const next = await store.updateUser(user.id, change, events)
    // deleted by someone else between the lookup and the write
    if (next === undefined) throw new AppError('USER_NOT_FOUND', { params: { ref: quoted(user.email) } })
    return next
  }
  const checkPassword = (password: string): Promise<void> => checkNewPassword(deps.passwords, password)
  /** the key in its effective state now */
  /** a change of the user that ends all its sessions, in one write with its event */
  const updateEndingSessions = async (user: UserRecord, change: (u: UserRecord) => UserRecord, events: readonly AuditDraft[]): Promise<{ user: UserRecord; ended: number }> => {
    // no session is kept (no session has the empty id)
    const done = await store.updateUserEndingSessions(user.id, change, '', events)
    if (done === undefined) throw new AppError('USER_NOT_FOUND', { params: { ref: quoted(user.email) } })
    return done
  }
  const revocable = async (kid: string): Promise<KeyRecord> => {
    const key = kid.trim() === '' ? undefined : (await effectiveKeys(now())).find((k) => k.kid === kid.trim())
    if (key === undefined) throw new AppError('KEY_NOT_FOUND', { params: { kid: quoted(kid) } })
    return key
  }
  const newKey = (algorithm: Algorithm | undefined, at: number): KeyRecord => generateKey(algorithm ?? t.algorithm, at)

  const admin: Admin = {
    findUser,
    resolveUser,
    async listUsers() {
      const users = (await store.listUsers()).sort((a, b) => a.createdAt - b.createdAt || a.email.localeCompare(b.email))
      const out: UserSummary[] = []
      for (const u of users) out.push(await summary(u))
      return out
    },
    showUser: async (ref) => summary(await resolveUser(ref)),

    async checkNewEmail(email) {
      const canonical = newEmailForm(email)
      if ((await store.getUserByEmail(canonical)) !== undefined) throw new AppError('USER_EXISTS', { params: { email: canonical } })
      return canonical
    },
    checkPassword,

    async addUser(email, password) {
      const canonical = await admin.checkNewEmail(email)
      await checkPassword(password)
      const { hasher } = await deps.passwords()
      const at = now()
      const user: UserRecord = { id: newUserId(), email: canonical, passwordHash: await hasher.hash(password), createdAt: at, updatedAt: at, disabled: false }
      // the uniqueness check that counts is the one inside the store's write transaction
      if (!(await store.createUser(user, audit('admin.user.add', ofUser(user))))) throw new AppError('USER_EXISTS', { params: { email: canonical } })
      await store.flushed()
      return summary(user)
    },

    async setPassword(ref, password) {
      const user = await resolveUser(ref)
      await checkPassword(password)
      const { hasher } = await deps.passwords()
      const passwordHash = await hasher.hash(password)
      // whoever held a session under the old password is signed out, in the same write
      const done = await updateEndingSessions(user, (u) => ({ ...u, passwordHash, updatedAt: now() }), audit('admin.user.passwd', ofUser(user)))
      return { user: await summary(done.user), revokedSessions: done.ended }
    },

    async disableUser(ref) {
      const user = await resolveUser(ref)
      // disabled and signed out in one write: a login racing with this cannot get a usable
      // session afterwards, since refresh and /me check the flag too
      const done = await updateEndingSessions(user, (u) => (u.disabled ? u : { ...u, disabled: true, updatedAt: now() }), audit('admin.user.disable', ofUser(user)))
      return { user: await summary(done.user), revokedSessions: done.ended }
    },

    async enableUser(ref) {
      const user = await resolveUser(ref)
      const next = await updateUser(user, (u) => (u.disabled ? { ...u, disabled: false, updatedAt: now() } : u), audit('admin.user.enable', ofUser(user)))
      return { user: await summary(next) }
    },

    async removeUser(ref) {
      const user = await resolveUser(ref)
      const before = await summary(user)
      const revokedSessions = await store.countSessions(user.id)
      if (!(await store.deleteUser(user.id, audit('admin.user.rm', ofUser(user))))) throw new AppError('USER_NOT_FOUND', { params: { ref: quoted(ref) } })
      return { user: before, revokedSessions }
    },

    async resetMfa(ref) {
      const user = await resolveUser(ref)
      let wasEnabled = false
      // a set-up not yet confirmed, removed (the factor itself was not on)
      let setupRemoved = false
      // filled inside the write (the store reads it after the change ran): whether a factor was on
      const events: AuditDraft[] = []
      const next = await updateUser(user, (u) => {
        // read inside the write: a confirmation racing with this is either undone or not yet made
        wasEnabled = u.mfa !== undefined
        setupRemoved = !wasEnabled && u.mfaSetup !== undefined
        events.splice(0, events.length, ...audit('admin.user.mfa_reset', { ...ofUser(u), detail: { wasEnabled } }))
        if (u.mfa === undefined && u.mfaSetup === undefined) return u
        const { mfa: _mfa, mfaSetup: _setup, ...rest } = u
        return { ...rest, updatedAt: now() }
      }, events)
      return { user: await summary(next), wasEnabled, setupRemoved }
    },

    async listSessions(userRef) {
      const user = userRef === undefined ? undefined : await resolveUser(userRef)
      const emailOf = emailCache()
      const out: SessionSummary[] = []
      for (const s of (await liveSessions(user?.id)).sort((a, b) => b.createdAt - a.createdAt || a.id.localeCompare(b.id))) {
        out.push(sessionSummary(s, await emailOf(s.userId)))
      }
      return out
    },

    sessionPages(userRef, opts = {}) {
      // the user is looked up at once; USER_NOT_FOUND comes with the first page asked for
      const pending = userRef === undefined ? undefined : resolveUser(userRef)
      // not an unhandled rejection while nobody iterates yet
      pending?.catch(() => {})
      const pageSize = opts.pageSize ?? 500
      return {
        async *[Symbol.asyncIterator]() {
          const user = await pending
          const { ids } = await scanLive({ userId: user?.id, by: 'createdAt', signal: opts.signal })
          const emailOf = emailCache()
          for (let i = 0; i < ids.length; i += pageSize) {
            if (i > 0) await nextTurn()
            opts.signal?.throwIfAborted()
            const page = await summaries(ids.slice(i, i + pageSize), emailOf)
            if (page.length > 0) yield page
          }
        },
      }
    },

    async overview({ sessions, signal }) {
      const emailOf = emailCache()
      const match = sessions.match
      const keep = match === undefined ? undefined : async (e: SessionEntry): Promise<boolean> => match(await emailOf(e.userId))
      const perUser = new Map<string, number>()
      const { ids, total } = await scanLive({ by: 'lastUsedAt', keep, top: sessions.limit, perUser, signal })
      const users = (await store.listUsers())
        .sort((a, b) => a.createdAt - b.createdAt || a.email.localeCompare(b.email))
        .map((u) => ({
          id: u.id,
          email: u.email,
          createdAt: u.createdAt,
          updatedAt: u.updatedAt,
          disabled: u.disabled,
          sessions: perUser.get(u.id) ?? 0,
          mfaEnabled: u.mfa !== undefined,
        }))
      return { users, sessions: await summaries(ids, emailOf), sessionsTotal: total }
    },

    async revokeSession(id) {
      const s = id.trim() === '' ? undefined : await store.getSession(id.trim())
      const email = s === undefined ? null : ((await store.getUser(s.userId))?.email ?? null)
      const events = s === undefined ? [] : audit('admin.sessions.revoke', { userId: s.userId, email, sessionId: s.id, detail: { scope: 'session' } })
      if (s === undefined || !(await store.revokeSession(s.id, events))) {
        throw new AppError('SESSION_ID_NOT_FOUND', { params: { id: quoted(id) } })
      }
      return sessionSummary(s, email)
    },

    async revokeUserSessions(userRef) {
      const user = await resolveUser(userRef)
      const revoked = await store.revokeUserSessions(user.id, audit('admin.sessions.revoke', { ...ofUser(user), detail: { scope: 'user' } }))
      return { user: await summary(user), revoked }
    },

    async revokeAllSessions() {
      return { revoked: await store.revokeAllSessions(audit('admin.sessions.revoke', { detail: { scope: 'all' } })) }
    },

    async listKeys() {
      const at = now()
      const listed = await store.listKeys()
      const stored = new Map(listed.map((k) => [k.kid, k]))
      // a next key that signs now and the key it replaced: recorded, as every daemon derives it
      // from the stored times alone. Not a retiring key's end: that comes from the access-token
      // lifetime of this program's config, which may not be the daemon's (a key retired early
      // would stop verifying tokens still live); each daemon derives it with its own.
      for (const k of settleKeys(listed, at)) {
        if (stored.get(k.kid)?.state !== k.state) await store.putKey(k)
      }
      const keys = keyStates(listed, at, verifyWindowMs)
      return keys.map(keySummary).sort((a, b) => b.createdAt - a.createdAt || a.kid.localeCompare(b.kid))
    },

    async rotateKey(algorithm, opts = {}) {
      const at = now()
      const current = await effectiveKeys(at)
      const before = current.filter((k) => k.state === 'active')
      const fresh = newKey(algorithm, at)
      const lead = opts.now === true ? 0 : t.keyLeadMs
      // published now, signing from `activatedAt` (the store makes it active at once if no key signs)
      const key: KeyRecord = lead > 0 ? { ...fresh, state: 'next', activatedAt: at + lead } : fresh
      const added = await store.rotateKey(key, at, audit('admin.keys.rotate', { detail: { kid: key.kid, alg: key.alg } }))
      const keys = await effectiveKeys(at)
      const active = keys.find((k) => k.state === 'active') ?? added
      return {
        key: (await summaryOf(added.kid, at)) ?? keySummary(added),
        active: keySummary(active),
        retiring: keys.filter((k) => k.state === 'retiring' && before.some((b) => b.kid === k.kid)).map(keySummary),
        replaced: current.filter((k) => k.state === 'next' && !keys.some((x) => x.kid === k.kid)).map(keySummary),
      }
    },

    async checkRevokeKey(kid) {
      return keySummary(await revocable(kid))
    },

    async revokeKey(kid, opts = {}) {
      const key = await revocable(kid)
      // never leave the daemon without a key to sign with: the active key goes with a replacement
      // that signs at once (a key still next is replaced by it too)
      let active: KeySummary | null = null
      let replaced: KeySummary[] = []
      if (key.state === 'active') ({ key: active, replaced } = await admin.rotateKey(opts.algorithm ?? key.alg, { now: true }))
      // as it stood when asked (not the retiring it turned into for the moment of its replacement)
      const revoked = keySummary(key)
      await store.deleteKey(key.kid, audit('admin.keys.revoke', { detail: { kid: key.kid, alg: key.alg } }))
      return { revoked, active, replaced }
    },
  }
  return admin
}
