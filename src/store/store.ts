/**
 * The Store: everything authd keeps, behind one interface that two backends implement: LMDB
 * (embedded, one VM; store/lmdb-store.ts) and PostgreSQL (several instances on one database;
 * store/pg/). `openStore(config)` (store/open.ts) chooses; nothing above src/store/ knows which it
 * got. Every method is asynchronous (LMDB answers with values already resolved); every write
 * resolves only once it is committed. The callbacks given to writes (`decide`, `change`) are
 * synchronous and run inside the write transaction, on the records as stored at that moment.
 *
 * A backend that cannot reach its database rejects with an AppError STORE_UNAVAILABLE (never hangs
 * longer than its query timeout): the daemon answers 503 `Service unavailable` with `Retry-After: 1`.
 */
import type { Algorithm } from '../config/types.js'
import type { ConsumeResult, RateEntry, RateLimiter } from './rate-limit.js'

export interface UserRecord {
  id: string
  /** canonical email */
  email: string
  /** argon2id encoded hash, parameters included */
  passwordHash: string
  createdAt: number
  updatedAt: number
  disabled: boolean
  /** the second factor, once confirmed; absent while it is off */
  mfa?: MfaRecord
  /** a TOTP setup not yet confirmed (a new setup replaces it) */
  mfaSetup?: { secret: string; createdAt: number }
}

/** A user's TOTP second factor and recovery codes (docs/api.md, "Second factor"). */
export interface MfaRecord {
  /** the base32 TOTP secret (160 bits); leaves the store only into `authctl backup` */
  secret: string
  enabledAt: number
  /** the last TOTP time step accepted: a code is accepted once */
  lastStep: number
  /** a hash of each unused recovery code (never the code itself) */
  recoveryCodes: string[]
}

export interface SessionRecord {
  id: string
  userId: string
  createdAt: number
  lastUsedAt: number
  /** absolute expiry: createdAt + sessions.absolute_ttl */
  expiresAt: number
  ip: string
  userAgent: string
  /** SHA-256 of the live refresh token (never the token itself) */
  refreshHash: string
  /** SHA-256 of the token it replaced, and when (the last rotation) */
  previousHash: string | null
  rotatedAt: number | null
  /** how many times the refresh token has rotated */
  generation: number
  /**
   * SHA-256 of the session's token family: the part every refresh token of this session shares
   * (sessions.ts). Through it any token the session ever had is recognised, however old: a used
   * one presented again ends the session.
   */
  familyHash: string
  /**
   * The rotations of the last `sessions.reuse_grace`, oldest first, each consecutive: when, and
   * its successor sealed under the token it replaced (only that token's holder can open it).
   */
  rotations?: Rotation[]
  /**
   * How the user proved who they are when the session started (RFC 8176 `amr` values, e.g.
   * `["pwd"]`, `["pwd","otp","mfa"]`): every access token of the session carries it, refreshes
   * included.
   */
  amr: string[]
}

/**
 * What the per-user index holds of a session: enough to tell whether it is live and how old it
 * is without reading the session itself.
 */
export interface SessionEntry {
  id: string
  userId: string
  createdAt: number
  lastUsedAt: number
  expiresAt: number
  /** whether the record holds sealed successors (`rotations`), which the sweep drops once stale */
  sealed: boolean
}

/** Where a walk over the sessions index (`sessionEntries`) resumes: after this entry. */
export type SessionCursor = Pick<SessionEntry, 'userId' | 'id'>

/**
 * The sessions-per-user bound applied by `createSession` (sessions.max_per_user), as data, so that
 * a backend can count in its database: a session counts while it is live at `now` (liveAt; an
 * expired one neither counts nor is evicted).
 */
export interface SessionLimit {
  /** live sessions a user may have, the new one included */
  max: number
  /** the time the bound is applied at (ms) */
  now: number
  /** sessions.idle_ttl (ms) */
  idleTtlMs: number
  /** sessions.absolute_ttl (ms), as configured now */
  absoluteTtlMs: number
}

/**
 * Whether a session can still be used at `now` under sessions.idle_ttl `idleTtlMs` and
 * sessions.absolute_ttl `absoluteTtlMs` as configured now: before the absolute expiry it was
 * given at login and before `absoluteTtlMs` after its login (a lowered absolute_ttl ends the
 * sessions already older, as a lowered idle_ttl does), and within its idle expiry, all exclusive
 * (core/sessions.ts isLive). The PostgreSQL bound's first count (authd_create_session_within)
 * tests the stored expiry alone, which counts a superset: a user it finds at the bound is
 * counted again with this test before any session ends.
 */
export const liveAt = (s: Pick<SessionEntry, 'createdAt' | 'lastUsedAt' | 'expiresAt'>, now: number, idleTtlMs: number, absoluteTtlMs: number): boolean =>
  now < s.expiresAt && now < s.createdAt + absoluteTtlMs && now < s.lastUsedAt + idleTtlMs

/** whether `s` counts against `limit` (SessionLimit) */
export const liveUnder = (s: Pick<SessionEntry, 'createdAt' | 'lastUsedAt' | 'expiresAt'>, limit: SessionLimit): boolean =>
  liveAt(s, limit.now, limit.idleTtlMs, limit.absoluteTtlMs)

/** One rotation inside its grace: when, and the successor sealed under the token it replaced. */
export interface Rotation {
  at: number
  sealed: string
}

/**
 * `next`: published in the JWKS, not signing yet (until `activatedAt`); `active`: signs, one at
 * a time; `retiring`: no longer signs, verifies until its last token has expired; `retired`.
 */
export type KeyState = 'next' | 'active' | 'retiring' | 'retired'

export interface KeyRecord {
  kid: string
  alg: Algorithm
  state: KeyState
  /** PKCS#8 PEM; never leaves the store except into a backup */
  privateKeyPem: string
  /** SPKI PEM */
  publicKeyPem: string
  createdAt: number
  /** when it started signing; for a `next` key, when it will */
  activatedAt: number | null
  /** when it stopped signing */
  retiringAt: number | null
  /** when its last token expired */
  retiredAt: number | null
}

/**
 * What a stored password hash is counted under in Store.hashTally: its PHC string up to the salt
 * (`$argon2id$v=19$m=19456,t=2,p=1`), i.e. the algorithm and the parameters that set its cost.
 */
export function hashParamsKey(encoded: string): string {
  const parts = encoded.split('$')
  return parts.length >= 4 ? parts.slice(0, -2).join('$') : ''
}

/**
 * An admin's request that every running daemon forget the login limits of an email (canonical)
 * or of a client address (its rate-limiter form: IPv6 as its /64), `authctl limits clear`.
 */
export type LimitClearTarget = { email: string } | { ipKey: string }

export interface LimitClear {
  /** increases by one with every request */
  seq: number
  target: LimitClearTarget
  at: number
}

/**
 * What the second step of a login does, decided inside the write transaction: `use` stores `user`
 * and records the mfaToken as used; `none` changes nothing.
 */
export type MfaStepDecision<T> = ({ action: 'use'; user: UserRecord; result: T } | { action: 'none'; result: T }) & { audit?: Audit }

/** What a refresh attempt found, decided inside the write transaction. */
export type RefreshDecision<T> = (
  | { action: 'rotate'; session: SessionRecord; result: T }
  | { action: 'revoke'; result: T }
  | { action: 'none'; result: T }
) & { audit?: Audit }

/**
 * A limiter charge a refresh makes before its token is decided on (refreshSession's `charge`):
 * `entries` counted on `limiter`, all or none. Refused, nothing is decided or written, no session
 * is given to `decide`, and the refresh resolves to `refused(result)`. A store that counts in the
 * database it reads from (the limiter is its own) charges in the same statement as its read.
 */
export interface StoreCharge<T> {
  limiter: RateLimiter
  entries: ReadonlyArray<RateEntry>
  refused(result: Extract<ConsumeResult, { ok: false }>): T
}

/** a charge made on its own, before the rest of the operation: the refusal's answer, else undefined */
export async function chargeFirst<T>(charge: StoreCharge<T> | undefined): Promise<{ refused: T } | undefined> {
  if (charge === undefined) return undefined
  const attempt = await charge.limiter.consume(charge.entries)
  return attempt.ok ? undefined : { refused: charge.refused(attempt) }
}

export type StoreBackend = 'lmdb' | 'postgres'

/** what an import loaded */
export interface ImportCounts {
  users: number
  sessions: number
  keys: number
  /**
   * the audit events the store held before (of a daemon's first start, of authctl commands run
   * on it), replaced by the export's log: its admin.import event says how many
   */
  replacedAuditEvents: number
}

/** What /me needs of a session and its user (Store.meRead). */
export interface MeRecord {
  userId: string
  createdAt: number
  expiresAt: number
  lastUsedAt: number
  /** undefined when the user is gone */
  user: { id: string; email: string; disabled: boolean; mfaEnabled: boolean } | undefined
}

export interface MeRead {
  version: number
  keysVersion: number
  /** sid → its record, or undefined when there is no such session */
  records: Map<string, MeRecord | undefined>
}

/**
 * One line of `authctl export` (JSON, one record per line). `meta` comes first; a store's secrets
 * (the device-cookie and mfaToken keys) travel as `secret` records so that cookies and tokens
 * issued before an export keep working after the import, and the mfaTokens already used by a
 * second step as `mfa_used` records, so that none is used again after it.
 *
 * Format 2 is what this authd writes; format 1 (before `mfa_used` records) imports too.
 */
export type ExportRecord =
  | { type: 'meta'; format: ExportFormat; schema: number; backend: StoreBackend; exportedAt: string }
  | { type: 'user'; user: UserRecord }
  | { type: 'session'; session: SessionRecord }
  | { type: 'key'; key: KeyRecord }
  | { type: 'secret'; name: 'device_key' | 'mfa_key'; value: string }
  | { type: 'mfa_used'; id: string; expiresAt: number }
  | { type: 'audit_anchor'; anchor: AuditAnchor }
  | { type: 'audit'; event: AuditEvent }

/** the export formats an import reads (README, "Export and import"): 1, and 2 with the used mfaTokens */
export type ExportFormat = 1 | 2
/** the format `exportRecords` writes */
export const EXPORT_FORMAT = 2 satisfies ExportFormat

/** What every audit event says (README, "Audit log"); fields that do not apply are null. */
export interface AuditFields {
  event: string
  /** "api", or "authctl:<os user>" */
  actor: string
  userId: string | null
  email: string | null
  sessionId: string | null
  ip: string | null
  userAgent: string | null
  detail: Record<string, unknown>
}

/**
 * An audit event as a write hands it to the store: the store gives it its `seq` and `hash`
 * inside the transaction that makes the change it records, so the two commit together. `at` is
 * the time in ms.
 */
export interface AuditDraft extends AuditFields {
  at: number
}

/** The events a write records, written in its transaction if and only if it changed something. */
export type Audit = readonly AuditDraft[]

/** createSession's events: `events`, and one from `evicted` per session sessions.max_per_user ended */
export interface SessionAudit {
  events: Audit
  evicted?: (ended: SessionEntry) => AuditDraft
}

/**
 * Who a session may be written for (`createSessionFor`): the user as a password check found it.
 * The write goes ahead only while the user is still there, enabled, and holds `passwordHash`.
 */
export interface SessionHolder {
  passwordHash: string
}

/** An event as kept: `time` ISO 8601 UTC with ms; `hash` chains it (store/audit-chain.ts). */
export interface AuditEvent extends AuditFields {
  seq: number
  time: string
  hash: string
}

/** what the first kept event chains to: seq 0 and 64 zeros, or the last event retention removed */
export interface AuditAnchor {
  seq: number
  hash: string
}

export interface AuditQuery {
  limit: number
  /** only events with seq below this */
  before?: number
  userId?: string
  /** an event name, exactly */
  event?: string
  /** only events at or after this time (ms) */
  since?: number
}

export interface Store {
  /** which backend this is */
  readonly backend: StoreBackend
  /**
   * Where the store is, for people: the data directory (LMDB) or the database URL with any
   * password shown as `***` (PostgreSQL). The TUI's header and authctl's messages show it.
   */
  readonly location: string

  // users
  getUser(id: string): Promise<UserRecord | undefined>
  getUserByEmail(canonicalEmail: string): Promise<UserRecord | undefined>
  listUsers(): Promise<UserRecord[]>
  /**
   * Inserts the user and its email index in one transaction, with `session` (register's first
   * session) in the same one when given; false, and nothing written, if the email exists.
   */
  createUser(user: UserRecord, audit?: Audit, session?: SessionRecord): Promise<boolean>
  /**
   * applies `change` to the current record inside a transaction; undefined if gone. `audit` is
   * read once `change` has run (each time it runs), so `change` may fill it as it decides. With
   * `caller` (the session a user's own request came with), only while that session of this user
   * is still stored, checked in the same transaction (on PostgreSQL its row held until the end,
   * so a revocation waits for the write or comes before it): else nothing is written and it
   * resolves to undefined, as for a user gone.
   */
  updateUser(id: string, change: (user: UserRecord) => UserRecord, audit?: Audit, caller?: string): Promise<UserRecord | undefined>
  /**
   * updateUser, and in the same write transaction every session of the user except `keep` ends
   * with its token entries (a password change: no other session outlives the old password).
   * Resolves once durable, to the record now stored and how many sessions ended; undefined if
   * the user is gone. With `caller`, as updateUser's: only while that session of the user is
   * stored (undefined, nothing written, no session ended, once it ended).
   */
  updateUserEndingSessions(id: string, change: (user: UserRecord) => UserRecord, keep: string, audit?: Audit, caller?: string): Promise<{ user: UserRecord; ended: number } | undefined>
  /** deletes the user, its email index entry and all its sessions */
  deleteUser(id: string, audit?: Audit): Promise<boolean>
  /**
   * How many stored password hashes there are per parameter set (keys: hashParamsKey), counted in
   * the transactions that create, re-hash and delete users, by any process. An unknown email's
   * dummy verification follows these proportions (passwords.ts).
   */
  hashTally(): Promise<Readonly<Record<string, number>>>

  // sessions
  getSession(id: string): Promise<SessionRecord | undefined>
  /**
   * Sessions by id, in order (undefined for one that is gone), in one read: for listings. Neither
   * this nor getSession keeps what it decoded; what /me repeats is meRead's, and core/me-view.ts
   * keeps its answers.
   */
  getSessions(ids: string[]): Promise<Array<SessionRecord | undefined>>
  listSessions(userId?: string): Promise<SessionRecord[]>
  countSessions(userId: string): Promise<number>
  /**
   * One bounded page of the sessions index, in index order (by user, then session id), after
   * `after`; of one user if `userId` is given. Walking a huge store page by page keeps memory and
   * each synchronous stretch bounded.
   */
  sessionEntries(opts: { userId?: string; after?: SessionCursor; limit: number }): Promise<SessionEntry[]>
  /**
   * Creates the session. With `limit`, in the same write transaction, the user's live sessions
   * beyond `limit.max - 1` (the oldest last use first) are deleted with their token entries, so
   * that with the new one the user has at most `limit.max`, however many logins race. Resolves
   * to the sessions so ended. A bounded number end per call (a user far beyond the max, from a
   * store of before it, comes down over several logins and the sweep).
   */
  createSession(session: SessionRecord, limit?: SessionLimit, audit?: SessionAudit): Promise<SessionEntry[]>
  /**
   * createSession for a user whose password was just checked: in the same write, and on
   * PostgreSQL under the user's lock (which a password change, a disable and a deletion take
   * too), the session is written only if the user is still there, enabled and holds
   * `holder.passwordHash`. Else nothing is written (no session, no event) and it resolves to
   * undefined: a login whose hash ran while the password changed, or the user was disabled or
   * deleted, leaves no session behind the change.
   */
  createSessionFor(holder: SessionHolder, session: SessionRecord, limit: SessionLimit, audit?: SessionAudit): Promise<SessionEntry[] | undefined>
  /**
   * Finds the session a refresh-token hash belongs to (live or a recent predecessor), else the
   * one of the token's family (`familyHash`: any token the session ever had), and lets
   * `decide` choose, atomically with respect to every other writer, what happens to it. `decide`
   * is given the session's user too, read with it (undefined when there is no session or the
   * user is gone), so a refresh needs no read of its own. With `charge`, the limiter is charged
   * first (StoreCharge): refused, nothing is decided or written.
   */
  refreshSession<T>(
    tokenHash: string,
    decide: (session: SessionRecord | undefined, user: UserRecord | undefined) => RefreshDecision<T>,
    familyHash?: string,
    charge?: StoreCharge<T>,
  ): Promise<T>
  /**
   * Replaces a session's record with `change(current)`, inside a write transaction; `change` may
   * answer undefined to leave it as it is. Not for rotation (refreshSession): the token entries
   * stay as they are. Resolves to the record now stored, or undefined if there is none.
   */
  updateSession(id: string, change: (session: SessionRecord) => SessionRecord | undefined, audit?: Audit): Promise<SessionRecord | undefined>
  /**
   * For each of `ids` that still exists, inside one write transaction: `change(current)` answers
   * 'delete' (the session goes with its token entries), a replacement record, or undefined (left
   * as it is). Resolves to how many were deleted. For the sweep: keep `ids` to a bounded chunk.
   */
  sweepSessions(ids: string[], change: (session: SessionRecord) => SessionRecord | 'delete' | undefined): Promise<number>
  /**
   * deletes one session and its refresh-token entries; false if it did not exist. With `caller`
   * (a user ending one of their sessions from another), only while that session of the user is
   * still stored, checked in the same transaction (as updateUser's `caller`): else nothing is
   * written and it resolves to undefined (a password change that ended it comes first).
   */
  revokeSession(id: string, audit?: Audit, caller?: { sessionId: string; userId: string }): Promise<boolean | undefined>
  /** deletes every session of a user; returns how many */
  revokeUserSessions(userId: string, audit?: Audit): Promise<number>
  revokeAllSessions(audit?: Audit): Promise<number>
  /** session id for a refresh-token hash, else for the token's family hash, if known */
  findSessionIdByRefreshHash(tokenHash: string, familyHash?: string): Promise<string | undefined>

  // keys
  listKeys(): Promise<KeyRecord[]>
  getKey(kid: string): Promise<KeyRecord | undefined>
  putKey(key: KeyRecord, audit?: Audit): Promise<void>
  /**
   * Adds `key`, atomically with what it changes. A `next` key (its `activatedAt` in the future)
   * is published and signs from its `activatedAt`, unless no key signs now: then it is active at
   * once. Any other key is active from `now`, and the key signing until then turns retiring. A
   * key still `next` is replaced either way (it never signed: no token needs it). Returns the
   * key as stored.
   */
  rotateKey(key: KeyRecord, now: number, audit?: Audit): Promise<KeyRecord>
  /** creates `key` as the first active key unless some active key already exists */
  ensureActiveKey(create: () => KeyRecord): Promise<KeyRecord>
  deleteKey(kid: string, audit?: Audit): Promise<boolean>
  /** a number that changes whenever the keys change, cheap to poll */
  keysVersion(): Promise<number>

  // /me
  /**
   * /me's one read (core/me-view.ts calls it once per turn of the event loop for all the /me
   * requests of that turn: with PostgreSQL that is one round trip). Answers the store's version
   * (a number that changes with every write that could change a MeRecord or a key, by any
   * process), the keys' version, and a MeRecord (or undefined: no such session) for each of
   * `sids` the store read. When the version is still `known`, the store may leave out of
   * `records` the sessions in `cached` (the caller holds them as read at `known`); otherwise
   * `records` has every one of `sids`. A backend without a cheap version (PostgreSQL) may read
   * every session every time and answer a version that never repeats.
   */
  meRead(sids: readonly string[], known: number, cached: ReadonlySet<string>): Promise<MeRead>

  // rate limits and device cookies
  /**
   * The key that signs device cookies: the one stored, else `create()`'s, stored in the same
   * transaction (so two processes starting at once never make two).
   */
  ensureDeviceKey(create: () => string): Promise<string>
  /** The key that signs mfaTokens (core/mfa-tokens.ts), made by `create()` once, like the device key. */
  ensureMfaKey(create: () => string): Promise<string>
  /** whether the mfaToken `id` (which expires at `expiresAt`) was used by a second step already */
  mfaTokenUsed(id: string, expiresAt: number): Promise<boolean>
  /**
   * The second step of a login, atomically with respect to every other writer: `decide` sees the
   * user `userId` as stored and whether the mfaToken `token` was used already, and chooses. With
   * `use`, the user is stored (its TOTP step or recovery codes moved on) and the token recorded as
   * used, in one transaction: two second steps with one token, or one TOTP code, never both win.
   * Records of tokens expired by `now` are dropped on the way.
   */
  finishMfaStep<T>(token: { id: string; expiresAt: number }, userId: string, now: number, decide: (user: UserRecord | undefined, used: boolean) => MfaStepDecision<T>): Promise<T>
  /** records a request to clear login limits (the newest few are kept); resolves to its seq */
  addLimitClear(target: LimitClearTarget, at: number, audit?: Audit): Promise<number>
  /** the kept requests with a seq above `after`, oldest first; one cheap read, fit to poll */
  limitClearsAfter(after: number): Promise<LimitClear[]>

  // the audit log (README, "Audit log")
  /** appends events that record no store change of their own (a failed login, a limit's block) */
  appendAudit(audit: Audit): Promise<void>
  /**
   * Kept events, newest first (highest seq first), at most `limit`, with seq below `before` if
   * given, and matching the filters given. One bounded page: for `audit list` and the TUI.
   */
  auditEvents(q: AuditQuery): Promise<AuditEvent[]>
  /**
   * Hands `walk` the anchor the first kept event chains to (64 zeros, or the hash of the last
   * event removed by retention) and every kept event in seq order (oldest first, read in bounded
   * pages), all read in one snapshot of the store, held until `walk`'s promise settles: a
   * retention sweep or an append meanwhile is not half in what it reads (`authctl audit verify`
   * reports no break that is not in the store). Resolves to what `walk` resolves to.
   */
  auditChain<T>(walk: (anchor: AuditAnchor, events: AsyncIterable<AuditEvent>) => Promise<T>): Promise<T>
  /** removes the events older than `before` (ms), keeping the last removed one's hash as the anchor; how many */
  sweepAudit(before: number): Promise<number>

  // meta
  schemaVersion(): Promise<number>
  /** whether the store answers (PostgreSQL: one query); rejects with STORE_UNAVAILABLE */
  ping(): Promise<void>

  // export / import (README, "Export and import")
  /** every record of the store (format EXPORT_FORMAT), in an order `importRecords` accepts (meta first, then users, …) */
  exportRecords(): AsyncIterable<ExportRecord>
  /**
   * Loads `records` (an export of either backend) into this store, all or nothing, in one
   * transaction, with the events `audit` makes of the counts loaded appended after the imported
   * log in that same transaction (`admin.import`: an import never commits without its event).
   * Rejects with an AppError NOT_EMPTY if the store already has users, and with BAD_EXPORT
   * naming the line for a record it cannot take; nothing is written then.
   */
  importRecords(records: AsyncIterable<ExportRecord>, audit?: (counts: ImportCounts) => Audit): Promise<ImportCounts>

  /** waits until everything committed so far is durable (PostgreSQL: at once) */
  flushed(): Promise<void>
  /**
   * A consistent, compacted copy of the store into `file`, which it never replaces: any entry
   * there when the copy is put in place (a symlink too, even dangling) rejects with an AppError
   * BACKUP_EXISTS. LMDB only: PostgreSQL rejects with an AppError NO_BACKUP (use pg_dump or
   * `authctl export`).
   */
  backup(file: string): Promise<void>
  close(): Promise<void>
}

/**
 * The keys as they stand at `now`, from their stored times alone: a `next` key whose
 * `activatedAt` has come is active, and each key it superseded is retiring from that moment.
 * Every process derives the same answer without writing, so two daemons never disagree on which
 * key signs, and exactly one key signs (the latest activated; ties by kid). Whether a retiring key
 * is retired depends on the token lifetime: see `keyStates` in core/keys.ts.
 */
export function settleKeys(keys: readonly KeyRecord[], now: number): KeyRecord[] {
  const signers = keys
    .filter((k) => k.state === 'active' || (k.state === 'next' && k.activatedAt !== null && k.activatedAt <= now))
    .sort((a, b) => (a.activatedAt ?? 0) - (b.activatedAt ?? 0) || (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0))
  const settled = new Map<string, KeyRecord>()
  signers.forEach((k, i) => {
    const successor = signers[i + 1]
    if (successor !== undefined) settled.set(k.kid, { ...k, state: 'retiring', retiringAt: successor.activatedAt ?? now })
    else if (k.state !== 'active') settled.set(k.kid, { ...k, state: 'active' })
  })
  return keys.map((k) => settled.get(k.kid) ?? k)
}
