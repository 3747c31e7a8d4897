/**
 * The PostgreSQL implementation of the Store (README, "Several instances on PostgreSQL"): any
 * number of authd and authctl processes share one database and behave as one. Every write is
 * one transaction; the callbacks of a write (`decide`, `change`) run inside it on rows locked
 * with SELECT … FOR UPDATE, so a race between instances is settled by the database: N refreshes
 * of one token leave one successor, N instances starting on an empty database one active key.
 * The audit events a write records are appended in its transaction, and only if it changed
 * something (a decision's events always: what was decided is recorded). Reads answer what is
 * committed at that moment; nothing is cached here.
 *
 * Row locks are taken in one order, to keep deadlocks out: a user's advisory lock, the user, its
 * sessions (by id), the hash tally, the audit head last (held only from the append to the commit).
 */
import { redactUrl } from '../../config/redact-url.js'
import {
  chargeFirst,
  hashParamsKey,
  liveUnder,
  settleKeys,
  type Audit,
  type AuditAnchor,
  type AuditEvent,
  type AuditQuery,
  type KeyRecord,
  type LimitClear,
  type LimitClearTarget,
  type MeRecord,
  type MfaStepDecision,
  type RefreshDecision,
  type SessionEntry,
  type SessionLimit,
  type SessionAudit,
  type SessionHolder,
  type SessionRecord,
  type Store,
  type StoreCharge,
  type UserRecord,
} from '../store.js'
import type { RateLimiter } from '../rate-limit.js'
import { AppError } from '../../errors.js'
import { appendAuditTx, auditArgs } from './audit-append.js'
import { openDb, sqlState, type Db, type Sql } from './db.js'
import { CONSUME_COLUMNS, createPgRateLimiter, type ConsumeRow, type PgRateLimiter } from './limiter.js'
import { migratePg, PG_SCHEMA_VERSION, schemaVersionOf } from './schema.js'
import { exportPg, importPg } from './transfer.js'

export interface PgStoreOptions {
  /** postgresql://user:password@host:port/database (a Unix socket: ?host=/run/postgresql) */
  url: string
  /** connections in the pool */
  poolSize: number
  /** a statement's time limit, and about an operation's (default 2500 ms) */
  queryTimeoutMs?: number
  log?: { warn(obj: object, msg: string): void }
}

/** refresh-token hashes indexed per session (older ones are found through the family), as on LMDB */
export const REFRESH_HISTORY = 32
/** at most this many sessions end in one login's write (sessions.max_per_user); the sweep does the rest */
const EVICT_PER_WRITE = 256
/** limit-clear requests kept: a daemon polls every few hundred ms, so only the newest matter */
const LIMIT_CLEARS_KEPT = 64
/** audit events per page of auditChain */
const CHAIN_PAGE = 500
/** audit events removed per transaction by sweepAudit (as on LMDB) */
const AUDIT_SWEEP_CHUNK = 1024
/** the advisory lock class of a user's sessions (the second key is a hash of the user id) */
const USER_LOCK = 0x61757469
/** the advisory lock class of the making of a secret (device_key, mfa_key) */
const SECRET_LOCK = 0x6175746a

const hasSeals = (s: SessionRecord): boolean => (s.rotations?.length ?? 0) > 0

// ---- statements shared by several methods ----

const userColumns = (u: UserRecord): unknown[] => [u.id, u.email, u.disabled, u.mfa !== undefined, JSON.stringify(u)]

const PUT_USER = `
  INSERT INTO authd_users (id, email, disabled, mfa_enabled, record) VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, disabled = EXCLUDED.disabled,
    mfa_enabled = EXCLUDED.mfa_enabled, record = EXCLUDED.record`

/**
 * One session's record, the token hashes to index for it ($8 hashes, $9 their generations; -1
 * is the family), and the hash of generation $10 dropped (it has left the history).
 */
const PUT_SESSION = `
  WITH s AS (
    INSERT INTO authd_sessions (id, user_id, created_at, last_used_at, expires_at, sealed, record)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (id) DO UPDATE SET user_id = EXCLUDED.user_id, created_at = EXCLUDED.created_at,
      last_used_at = EXCLUDED.last_used_at, expires_at = EXCLUDED.expires_at, sealed = EXCLUDED.sealed,
      record = EXCLUDED.record
    RETURNING id
  ), t AS (
    INSERT INTO authd_session_tokens (hash, session_id, generation)
    SELECT x.h, (SELECT id FROM s), x.g FROM unnest($8::text[], $9::integer[]) AS x(h, g)
    ON CONFLICT (hash) DO UPDATE SET session_id = EXCLUDED.session_id, generation = EXCLUDED.generation
  )
  DELETE FROM authd_session_tokens WHERE session_id = $1 AND generation = $10`

const sessionColumns = (s: SessionRecord): unknown[] => [s.id, s.userId, s.createdAt, s.lastUsedAt, s.expiresAt, hasSeals(s), JSON.stringify(s)]

/** the session of a refresh token, else of its family (the token's own entry first), with its row version */
const REFRESH_READ = `
  SELECT s.record, s.xmin::text AS v, u.record AS user FROM authd_sessions s LEFT JOIN authd_users u ON u.id = s.user_id
  WHERE s.id = (SELECT t.session_id FROM authd_session_tokens t WHERE t.hash = $1 OR t.hash = $2
                ORDER BY t.hash = $1 DESC LIMIT 1)`

/**
 * REFRESH_READ beside a charge of the limiter (authd_rate_consume of $3, $4, $5), in one round
 * trip: the session comes back only when the charge was made (its few index reads are made
 * either way: the planner runs the read as an init plan, also with c.ok inside it). The read's
 * snapshot is the statement's, taken before the charge: it sees what a read made just before would.
 */
const CHARGED_REFRESH_READ = `
  SELECT c.*, r.record, r.v, r.user
  FROM (SELECT ${CONSUME_COLUMNS} FROM authd_rate_consume($3, $4, $5)) c
  LEFT JOIN LATERAL (${REFRESH_READ}) r ON c.ok`

/** PUT_SESSION's values for a rotation to `next` (the family's entry stays as it is) */
function rotationColumns(next: SessionRecord): unknown[] {
  const tokens: Array<[string, number]> = [[next.refreshHash, next.generation]]
  const old = next.generation - REFRESH_HISTORY
  return [...sessionColumns(next), tokens.map((t) => t[0]), tokens.map((t) => t[1]), old >= 0 ? old : -2]
}

/**
 * A rotation as one statement (its own transaction), written only if the session's row is still
 * the version $11 (its xmin when read): the row is locked first, and a row another writer changed
 * or deleted meanwhile fails the test (READ COMMITTED re-reads the locked row's newest version), so
 * nothing is written and n = 0. Values as PUT_SESSION's.
 */
const ROTATE_IF_UNCHANGED = `
  WITH cur AS (
    SELECT id FROM authd_sessions WHERE id = $1 AND xmin = $11::xid FOR UPDATE
  ), s AS (
    UPDATE authd_sessions SET user_id = $2, created_at = $3, last_used_at = $4, expires_at = $5, sealed = $6, record = $7
    WHERE id = (SELECT id FROM cur)
    RETURNING id
  ), t AS (
    INSERT INTO authd_session_tokens (hash, session_id, generation)
    SELECT x.h, s.id, x.g FROM s, unnest($8::text[], $9::integer[]) AS x(h, g)
    ON CONFLICT (hash) DO UPDATE SET session_id = EXCLUDED.session_id, generation = EXCLUDED.generation
  ), d AS (
    DELETE FROM authd_session_tokens WHERE session_id = (SELECT id FROM s) AND generation = $10
  )
  SELECT count(*)::integer AS n FROM s`

/** many sessions' records at once (the sweep), token entries untouched */
const PUT_SESSIONS = `
  INSERT INTO authd_sessions (id, user_id, created_at, last_used_at, expires_at, sealed, record)
  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::boolean[], $7::json[])
  ON CONFLICT (id) DO UPDATE SET user_id = EXCLUDED.user_id, created_at = EXCLUDED.created_at,
    last_used_at = EXCLUDED.last_used_at, expires_at = EXCLUDED.expires_at, sealed = EXCLUDED.sealed,
    record = EXCLUDED.record`

const columnsOf = (rows: unknown[][]): unknown[][] => (rows.length === 0 ? [] : rows[0]!.map((_, i) => rows.map((r) => r[i])))

interface EntryRow {
  id: string
  user_id: string
  created_at: number
  last_used_at: number
  expires_at: number
  sealed: boolean
}
const ENTRY_COLUMNS = 'id, user_id, created_at, last_used_at, expires_at, sealed'
const entryOf = (r: EntryRow): SessionEntry => ({
  id: r.id,
  userId: r.user_id,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  expiresAt: r.expires_at,
  sealed: r.sealed,
})

// ---- pieces of write transactions ----

/** adds `by` to the tally of each password hash's parameter set, in one order (no deadlocks) */
async function tallyTx(sql: Sql, changes: Array<[encoded: string, by: 1 | -1]>): Promise<void> {
  const delta = new Map<string, number>()
  for (const [encoded, by] of changes) {
    const key = hashParamsKey(encoded)
    delta.set(key, (delta.get(key) ?? 0) + by)
  }
  const keys = [...delta.keys()].filter((k) => delta.get(k) !== 0)
  if (keys.length === 0) return
  await sql.query(
    `INSERT INTO authd_hash_tally (params, n)
     SELECT x.p, x.d FROM unnest($1::text[], $2::bigint[]) AS x(p, d) ORDER BY x.p COLLATE "C"
     ON CONFLICT (params) DO UPDATE SET n = authd_hash_tally.n + EXCLUDED.n`,
    [keys, keys.map((k) => delta.get(k))],
  )
}

/** serialises the writes that count or end a user's sessions (the row may not exist: an advisory lock) */
const hasNul = (key: string): boolean => key.includes('\u0000')

/**
 * Whether session `id` of user `userId` is stored, its row held (FOR SHARE) to the end of the
 * transaction: a revocation, a logout or a user's sessions ended wait for this write, or came
 * before it and it finds nothing.
 */
async function callerHeld(sql: Sql, id: string, userId: string): Promise<boolean> {
  if (hasNul(id)) return false
  return (await sql.query(`SELECT 1 FROM authd_sessions WHERE id = $1 AND user_id = $2 FOR SHARE`, [id, userId])).length === 1
}

const lockUserSessions = (sql: Sql, userId: string): Promise<unknown> => sql.query(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, [USER_LOCK, userId])

async function lockedUser(sql: Sql, id: string): Promise<UserRecord | undefined> {
  const rows = await sql.query<{ record: UserRecord }>(`SELECT record FROM authd_users WHERE id = $1 FOR UPDATE`, [id])
  return rows[0]?.record
}

/** stores `next` over `current` (locked): its email and the hash tally kept in step */
async function putUserTx(sql: Sql, current: UserRecord | undefined, next: UserRecord): Promise<void> {
  try {
    await sql.query(PUT_USER, userColumns(next))
  } catch (err) {
    if (sqlState(err) === '23505') throw new AppError('STORE_EMAIL_TAKEN')
    throw err
  }
  if (current === undefined) await tallyTx(sql, [[next.passwordHash, 1]])
  else if (next.passwordHash !== current.passwordHash) {
    await tallyTx(sql, [
      [current.passwordHash, -1],
      [next.passwordHash, 1],
    ])
  }
}

/** the user after `change`, and whether it changed (`change` gave back the record it was given: nothing written) */
async function updateUserTx(sql: Sql, id: string, change: (user: UserRecord) => UserRecord): Promise<{ user: UserRecord; changed: boolean } | undefined> {
  const current = await lockedUser(sql, id)
  if (current === undefined) return undefined
  const next = change(current)
  if (next === current) return { user: current, changed: false }
  const stored = next.id === id ? next : { ...next, id }
  await putUserTx(sql, current, stored)
  return { user: stored, changed: true }
}

/** deletes the sessions of `userId` (but `keep`), locking them in id order; how many */
async function deleteUserSessionsTx(sql: Sql, userId: string, keep?: string): Promise<number> {
  const rows = await sql.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM authd_sessions WHERE id IN (
         SELECT id FROM authd_sessions WHERE user_id = $1 AND id IS DISTINCT FROM $2 ORDER BY id FOR UPDATE)
       RETURNING 1)
     SELECT count(*)::integer AS n FROM gone`,
    [userId, keep ?? null],
  )
  return rows[0]!.n
}

/** a session's record and token entries; `drop`: the generation whose hash leaves the history */
function putSessionTx(sql: Sql, s: SessionRecord, tokens: Array<[hash: string, generation: number]>, drop = -2): Promise<unknown> {
  return sql.query(PUT_SESSION, [...sessionColumns(s), tokens.map((t) => t[0]), tokens.map((t) => t[1]), drop])
}

/** puts the key writes in one line: each holds the row of the keys' version counter until its commit */
async function lockKeys(sql: Sql): Promise<void> {
  await sql.query(`SELECT n FROM authd_counters WHERE name = 'keys_version' FOR UPDATE`)
}
const bumpKeys = (sql: Sql): Promise<unknown> => sql.query(`UPDATE authd_counters SET n = n + 1 WHERE name = 'keys_version'`)

/** writes keys, those leaving `active` before the one entering it (one active key at any moment) */
async function putKeysTx(sql: Sql, keys: KeyRecord[]): Promise<void> {
  const ordered = [...keys.filter((k) => k.state !== 'active'), ...keys.filter((k) => k.state === 'active')]
  for (const k of ordered) {
    await sql.query(
      `INSERT INTO authd_keys (kid, state, record) VALUES ($1, $2, $3)
       ON CONFLICT (kid) DO UPDATE SET state = EXCLUDED.state, record = EXCLUDED.record`,
      [k.kid, k.state, JSON.stringify(k)],
    )
  }
}

/** of a user's sessions, those a new one evicts: the live beyond `limit.max - 1`, oldest last use first (bounded) */
function evictionsOf(entries: SessionEntry[], limit: SessionLimit): SessionEntry[] {
  const live = entries.filter((e) => liveUnder(e, limit))
  const excess = live.length - (limit.max - 1)
  if (excess <= 0) return []
  live.sort((a, b) => a.lastUsedAt - b.lastUsedAt || (a.id < b.id ? -1 : 1))
  return live.slice(0, Math.min(excess, EVICT_PER_WRITE))
}

/** a new session's token entries (its hash, and its family's), as PUT_SESSION's $8 and $9 */
function newSessionTokens(s: SessionRecord): [string[], number[]] {
  return [
    [s.refreshHash, s.familyHash],
    [s.generation, -1],
  ]
}

/** createSession's events: the caller's, then one per evicted session */
function sessionEvents(audit: SessionAudit | undefined, ended: SessionEntry[]): Audit {
  const events = [...(audit?.events ?? [])]
  if (audit?.evicted !== undefined) for (const e of ended) events.push(audit.evicted(e))
  return events
}

/** the user's live sessions beyond `limit.max - 1`, oldest last use first, deleted (bounded) */
async function evictTx(sql: Sql, userId: string, limit: SessionLimit): Promise<SessionEntry[]> {
  // logins of one user queue here, so with the new one the user has at most `limit.max`
  await lockUserSessions(sql, userId)
  // the rows locked as they are read (in id order), so that a refresh of one of them either
  // committed before (its new last use read here) or waits for this write: a session refreshed a
  // moment ago is never the one ended as the oldest
  const rows = await sql.query<EntryRow>(`SELECT ${ENTRY_COLUMNS} FROM authd_sessions WHERE user_id = $1 ORDER BY id FOR UPDATE`, [userId])
  const evicted = evictionsOf(rows.map(entryOf), limit)
  if (evicted.length === 0) return []
  await sql.query(`DELETE FROM authd_sessions WHERE id = ANY ($1::text[])`, [evicted.map((e) => e.id)])
  return evicted
}

export async function openPgStore(opts: PgStoreOptions): Promise<{ store: Store; limiter: RateLimiter }> {
  const db = openDb({ url: opts.url, poolSize: opts.poolSize, queryTimeoutMs: opts.queryTimeoutMs ?? 2500, log: opts.log })
  try {
    await migratePg(db)
  } catch (err) {
    await db.end()
    throw err
  }
  const limiter = createPgRateLimiter(db)
  const store = createPgStore(db, redactUrl(opts.url), limiter)
  return { store, limiter }
}

function createPgStore(db: Db, location: string, limiter: PgRateLimiter): Store {
  // meRead's version: a backend without a cheap change counter answers one that never repeats,
  // so the caller reads every session every time
  let meVersion = 0

  const ensureSecret = async (name: 'device_key' | 'mfa_key', create: () => string): Promise<string> => {
    const read = async (sql: Sql): Promise<string | undefined> => (await sql.query<{ value: string }>(`SELECT value FROM authd_meta WHERE name = $1`, [name]))[0]?.value
    const stored = await read(db)
    if (stored !== undefined) return stored
    return db.tx(async (sql) => {
      // processes starting at once queue here: the first makes the secret, the others read it
      await sql.query(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, [SECRET_LOCK, name])
      const again = await read(sql)
      if (again !== undefined) return again
      const value = create()
      await sql.query(`INSERT INTO authd_meta (name, value) VALUES ($1, $2)`, [name, value])
      return value
    })
  }

  const sessionRecords = async (where: string, values: unknown[]): Promise<SessionRecord[]> =>
    (await db.query<{ record: SessionRecord }>(`SELECT record FROM authd_sessions ${where}`, values)).map((r) => r.record)

  /** the sessions ended; undefined (nothing written) only when `holder` no longer holds */
  const createSessionLocked = (s: SessionRecord, limit: SessionLimit | undefined, audit: SessionAudit | undefined, holder?: SessionHolder): Promise<SessionEntry[] | undefined> =>
    db.tx(async (sql) => {
      if (holder !== undefined) {
        // the user as the lock finds it: a password change, a disable or a deletion of this user
        // is either all before it or all after this write (they take the same lock)
        await lockUserSessions(sql, s.userId)
        const [u] = await sql.query<{ ok: boolean }>(`SELECT NOT disabled AND record->>'passwordHash' = $2 AS ok FROM authd_users WHERE id = $1`, [s.userId, holder.passwordHash])
        if (u?.ok !== true) return undefined
      }
      const ended = limit === undefined ? [] : await evictTx(sql, s.userId, limit)
      await sql.query(PUT_SESSION, [...sessionColumns(s), ...newSessionTokens(s), -2])
      await appendAuditTx(sql, sessionEvents(audit, ended))
      return ended
    })

  const refreshLocked = <T>(tokenHash: string, decide: (s: SessionRecord | undefined, u: UserRecord | undefined) => RefreshDecision<T>, familyHash?: string): Promise<T> =>
    db.tx(async (sql) => {
      // the session of the token (else of its family), locked: a concurrent refresh of the
      // same session waits here, then sees the record as that one left it (its user unlocked)
      const rows = await sql.query<{ record: SessionRecord; user: UserRecord | null }>(`${REFRESH_READ} FOR UPDATE OF s`, [tokenHash, familyHash ?? null])
      const current = rows[0]?.record
      const d = decide(current, rows[0]?.user ?? undefined)
      if (d.action === 'rotate') {
        await sql.query(PUT_SESSION, rotationColumns(d.session))
      } else if (d.action === 'revoke' && current !== undefined) {
        await sql.query(`DELETE FROM authd_sessions WHERE id = $1`, [current.id])
      }
      // what was decided is recorded even when it changed nothing (a failed refresh), as on LMDB
      await appendAuditTx(sql, d.audit ?? [])
      return d.result
    })

  const store: Store = {
    backend: 'postgres',
    location,

    // ---- users ----
    // a key holding a NUL names nothing here (PostgreSQL's text cannot hold one, and would fail
    // the query rather than find nothing), as a key too long for LMDB names nothing there
    getUser: async (id) => (hasNul(id) ? undefined : (await db.query<{ record: UserRecord }>(`SELECT record FROM authd_users WHERE id = $1`, [id]))[0]?.record),
    getUserByEmail: async (email) => (hasNul(email) ? undefined : (await db.query<{ record: UserRecord }>(`SELECT record FROM authd_users WHERE email = $1`, [email]))[0]?.record),
    listUsers: async () => (await db.query<{ record: UserRecord }>(`SELECT record FROM authd_users ORDER BY id`)).map((r) => r.record),
    async hashTally() {
      const rows = await db.query<{ params: string; n: number }>(`SELECT params, n FROM authd_hash_tally WHERE n > 0`)
      return Object.fromEntries(rows.map((r) => [r.params, r.n]))
    },
    createUser: (user, audit = [], session) =>
      db.tx(async (sql) => {
        const rows = await sql.query(`INSERT INTO authd_users (id, email, disabled, mfa_enabled, record) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING id`, userColumns(user))
        if (rows.length === 0) return false
        await tallyTx(sql, [[user.passwordHash, 1]])
        // a new user has no session to count against sessions.max_per_user
        if (session !== undefined) await sql.query(PUT_SESSION, [...sessionColumns(session), ...newSessionTokens(session), -2])
        await appendAuditTx(sql, audit)
        return true
      }),
    updateUser: (id, change, audit = [], caller) =>
      db.tx(async (sql) => {
        // the user's row first, then the session's, in the order a user's sessions ended take them
        if (caller !== undefined && ((await lockedUser(sql, id)) === undefined || !(await callerHeld(sql, caller, id)))) return undefined
        const r = await updateUserTx(sql, id, change)
        // its events only when something changed (an admin enabling an enabled user: none)
        if (r?.changed === true) await appendAuditTx(sql, audit)
        return r?.user
      }),
    updateUserEndingSessions: (id, change, keep, audit = [], caller) =>
      db.tx(async (sql) => {
        await lockUserSessions(sql, id)
        if (caller !== undefined && ((await lockedUser(sql, id)) === undefined || !(await callerHeld(sql, caller, id)))) return undefined
        const r = await updateUserTx(sql, id, change)
        if (r === undefined) return undefined
        const ended = await deleteUserSessionsTx(sql, id, keep)
        if (r.changed || ended > 0) await appendAuditTx(sql, audit)
        return { user: r.user, ended }
      }),
    deleteUser: (id, audit = []) =>
      db.tx(async (sql) => {
        await lockUserSessions(sql, id)
        const user = await lockedUser(sql, id)
        if (user === undefined) return false
        await deleteUserSessionsTx(sql, id)
        await sql.query(`DELETE FROM authd_users WHERE id = $1`, [id])
        await tallyTx(sql, [[user.passwordHash, -1]])
        await appendAuditTx(sql, audit)
        return true
      }),

    // ---- sessions ----
    getSession: async (id) => (hasNul(id) ? undefined : (await sessionRecords(`WHERE id = $1`, [id]))[0]),
    async getSessions(ids) {
      const found = new Map((await sessionRecords(`WHERE id = ANY ($1::text[])`, [ids])).map((s) => [s.id, s]))
      return ids.map((id) => found.get(id))
    },
    listSessions: (userId) => (userId === undefined ? sessionRecords(`ORDER BY id`, []) : sessionRecords(`WHERE user_id = $1 ORDER BY id`, [userId])),
    countSessions: async (userId) => (await db.query<{ n: number }>(`SELECT count(*)::integer AS n FROM authd_sessions WHERE user_id = $1`, [userId]))[0]!.n,
    async sessionEntries({ userId, after, limit }) {
      const where: string[] = []
      const values: unknown[] = []
      if (userId !== undefined) {
        values.push(userId)
        where.push(`user_id = $${values.length}`)
      }
      if (after !== undefined) {
        values.push(after.userId, after.id)
        where.push(`(user_id, id) > ($${values.length - 1}, $${values.length})`)
      }
      values.push(limit)
      const rows = await db.query<EntryRow>(
        `SELECT ${ENTRY_COLUMNS} FROM authd_sessions ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY user_id, id LIMIT $${values.length}`,
        values,
      )
      return rows.map(entryOf)
    },
    async createSession(s, limit, audit) {
      // One round trip when the user has room under the bound (or there is no bound). At the
      // bound, two more where no other login or session write of the user comes between: the
      // user's sessions read without a lock, the evictions and events decided, then one statement
      // that, under the user's advisory lock, writes only if the sessions are still what was
      // read. Else the locked transaction below decides again.
      let seen: string | null = null
      let ended: SessionEntry[] = []
      if (limit !== undefined) {
        // one round trip when the user has room (a login's usual case): counted and written under
        // the user's lock, nothing read back
        const [{ ok: fits }] = await db.query<{ ok: boolean }>(
          `SELECT authd_create_session_within($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) AS ok`,
          [USER_LOCK, limit.max, limit.now, limit.idleTtlMs, ...sessionColumns(s), ...newSessionTokens(s), ...auditArgs(sessionEvents(audit, []))],
        )
        if (fits) return []
        const rows = await db.query<EntryRow & { seen: string }>(
          // the text of what was read computed once (an uncorrelated subquery), in the same snapshot
          `SELECT s.${ENTRY_COLUMNS.split(', ').join(', s.')}, (SELECT authd_sessions_seen($1)) AS seen
           FROM (SELECT 1) one LEFT JOIN authd_sessions s ON s.user_id = $1`,
          [s.userId],
        )
        seen = rows[0]!.seen
        ended = evictionsOf(rows.filter((r) => r.id !== null).map(entryOf), limit)
      }
      const [{ ok }] = await db.query<{ ok: boolean }>(
        `SELECT authd_create_session($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) AS ok`,
        [USER_LOCK, seen, ended.map((e) => e.id), ...sessionColumns(s), ...newSessionTokens(s), ...auditArgs(sessionEvents(audit, ended))],
      )
      if (ok) return ended
      // without a holder it always writes
      return (await createSessionLocked(s, limit, audit))!
    },
    async createSessionFor(holder, s, limit, audit) {
      // one round trip when the user holds the password and has room (a login's usual case); at
      // the bound, the locked transaction, which checks the user again under the lock
      const [{ r }] = await db.query<{ r: number }>(
        `SELECT authd_create_session_held($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20) AS r`,
        [holder.passwordHash, USER_LOCK, limit.max, limit.now, limit.idleTtlMs, ...sessionColumns(s), ...newSessionTokens(s), ...auditArgs(sessionEvents(audit, []))],
      )
      if (r === -1) return undefined
      if (r === 1) return []
      return createSessionLocked(s, limit, audit, holder)
    },
    async refreshSession<T>(
      tokenHash: string,
      decide: (s: SessionRecord | undefined, u: UserRecord | undefined) => RefreshDecision<T>,
      familyHash?: string,
      charge?: StoreCharge<T>,
    ): Promise<T> {
      // Two round trips where nothing races (a refresh's usual case): the session read without a
      // lock (with the limiter's charge, when it is this database's), the decision taken, and the
      // rotation written in one statement only if the row is still the version read (its xmin).
      // Whatever else (a decision with events, a revocation, a row changed in between) takes the
      // locked transaction below, which decides again.
      let seen: { record: SessionRecord; v: string; user: UserRecord | null } | undefined
      if (charge !== undefined && charge.limiter === limiter) {
        const known = limiter.refusedNow(charge.entries)
        if (known !== undefined) return charge.refused(known)
        const asked = limiter.epoch()
        const [row] = await db.query<ConsumeRow & { record: SessionRecord | null; v: string | null; user: UserRecord | null }>(CHARGED_REFRESH_READ, [
          tokenHash,
          familyHash ?? null,
          ...limiter.consumeArgs(charge.entries),
        ])
        const attempt = limiter.settle(charge.entries, row!, asked)
        if (!attempt.ok) return charge.refused(attempt)
        if (row!.record !== null) seen = { record: row!.record, v: row!.v!, user: row!.user }
      } else {
        const refused = await chargeFirst(charge)
        if (refused !== undefined) return refused.refused
        ;[seen] = await db.query<{ record: SessionRecord; v: string; user: UserRecord | null }>(REFRESH_READ, [tokenHash, familyHash ?? null])
      }
      const d = decide(seen?.record, seen?.user ?? undefined)
      if ((d.audit ?? []).length === 0) {
        if (d.action === 'none' || (d.action === 'revoke' && seen === undefined)) return d.result
        if (d.action === 'rotate' && seen !== undefined && d.session.id === seen.record.id) {
          const [{ n }] = await db.query<{ n: number }>(ROTATE_IF_UNCHANGED, [...rotationColumns(d.session), seen.v])
          if (n === 1) return d.result
        }
      }
      return refreshLocked(tokenHash, decide, familyHash)
    },
    updateSession: (id, change, audit = []) =>
      db.tx(async (sql) => {
        const current = (await sql.query<{ record: SessionRecord }>(`SELECT record FROM authd_sessions WHERE id = $1 FOR UPDATE`, [id]))[0]?.record
        if (current === undefined) return undefined
        const next = change(current)
        if (next === undefined) return current
        await putSessionTx(sql, next, [])
        await appendAuditTx(sql, audit)
        return next
      }),
    sweepSessions: (ids, change) =>
      db.tx(async (sql) => {
        const rows = await sql.query<{ record: SessionRecord }>(`SELECT record FROM authd_sessions WHERE id = ANY ($1::text[]) ORDER BY id FOR UPDATE`, [ids])
        const byId = new Map(rows.map((r) => [r.record.id, r.record]))
        const gone: string[] = []
        const kept: SessionRecord[] = []
        for (const id of ids) {
          const current = byId.get(id)
          if (current === undefined) continue
          byId.delete(id)
          const next = change(current)
          if (next === 'delete') gone.push(id)
          else if (next !== undefined) kept.push(next)
        }
        if (gone.length > 0) await sql.query(`DELETE FROM authd_sessions WHERE id = ANY ($1::text[])`, [gone])
        if (kept.length > 0) await sql.query(PUT_SESSIONS, columnsOf(kept.map(sessionColumns)))
        return gone.length
      }),
    revokeSession: (id, audit = [], caller) =>
      db.tx(async (sql) => {
        // the user's row first, as a password change locks it: the two are one after the other
        if (caller !== undefined && ((await lockedUser(sql, caller.userId)) === undefined || !(await callerHeld(sql, caller.sessionId, caller.userId)))) return undefined
        const rows = await sql.query(`DELETE FROM authd_sessions WHERE id = $1 RETURNING id`, [id])
        if (rows.length === 0) return false
        await appendAuditTx(sql, audit)
        return true
      }),
    revokeUserSessions: (userId, audit = []) =>
      db.tx(async (sql) => {
        await lockUserSessions(sql, userId)
        const n = await deleteUserSessionsTx(sql, userId)
        if (n > 0) await appendAuditTx(sql, audit)
        return n
      }),
    revokeAllSessions: (audit = []) =>
      db.tx(async (sql) => {
        const [{ n }] = await sql.query<{ n: number }>(
          `WITH gone AS (DELETE FROM authd_sessions WHERE id IN (SELECT id FROM authd_sessions ORDER BY id FOR UPDATE) RETURNING 1)
           SELECT count(*)::integer AS n FROM gone`,
        )
        if (n! > 0) await appendAuditTx(sql, audit)
        return n!
      }),
    async findSessionIdByRefreshHash(tokenHash, familyHash) {
      const rows = await db.query<{ session_id: string }>(
        `SELECT session_id FROM authd_session_tokens WHERE hash = $1 OR hash = $2 ORDER BY hash = $1 DESC LIMIT 1`,
        [tokenHash, familyHash ?? null],
      )
      return rows[0]?.session_id
    },

    // ---- keys ----
    listKeys: async () => (await db.query<{ record: KeyRecord }>(`SELECT record FROM authd_keys ORDER BY kid`)).map((r) => r.record),
    getKey: async (kid) => (await db.query<{ record: KeyRecord }>(`SELECT record FROM authd_keys WHERE kid = $1`, [kid]))[0]?.record,
    putKey: (key, audit = []) =>
      db.tx(async (sql) => {
        await lockKeys(sql)
        let writes = [key]
        if (key.state === 'active') {
          // another key stored active: the one that signs is the one settleKeys says (the latest
          // activated), the other is stored retiring, as every reader derived already
          const others = (await sql.query<{ record: KeyRecord }>(`SELECT record FROM authd_keys WHERE state = 'active' AND kid <> $1`, [key.kid])).map((r) => r.record)
          if (others.length > 0) writes = settleKeys([...others, key], Date.now())
        }
        await putKeysTx(sql, writes)
        await bumpKeys(sql)
        await appendAuditTx(sql, audit)
      }),
    rotateKey: (key, now, audit = []) =>
      db.tx(async (sql) => {
        await lockKeys(sql)
        const stored = (await sql.query<{ record: KeyRecord }>(`SELECT record FROM authd_keys ORDER BY kid`)).map((r) => r.record)
        const settled = settleKeys(stored, now)
        const signing = settled.some((k) => k.state === 'active')
        const scheduled = key.state === 'next' && key.activatedAt !== null && key.activatedAt > now && signing
        const replaced: string[] = []
        const writes: KeyRecord[] = []
        settled.forEach((k, i) => {
          if (k.state === 'next') replaced.push(k.kid)
          else if (k.state === 'active' && !scheduled) writes.push({ ...k, state: 'retiring', retiringAt: now })
          else if (k !== stored[i]) writes.push(k)
        })
        const added: KeyRecord = scheduled ? key : { ...key, state: 'active', activatedAt: now }
        if (replaced.length > 0) await sql.query(`DELETE FROM authd_keys WHERE kid = ANY ($1::text[])`, [replaced])
        await putKeysTx(sql, [...writes, added])
        await bumpKeys(sql)
        await appendAuditTx(sql, audit)
        return added
      }),
    async ensureActiveKey(create) {
      const active = async (sql: Sql): Promise<KeyRecord | undefined> =>
        (await sql.query<{ record: KeyRecord }>(`SELECT record FROM authd_keys WHERE state = 'active'`))[0]?.record
      const found = await active(db)
      if (found !== undefined) return found
      return db.tx(async (sql) => {
        // instances starting together on an empty database queue here: the first makes the key
        await lockKeys(sql)
        const again = await active(sql)
        if (again !== undefined) return again
        const key = create()
        await putKeysTx(sql, [key])
        await bumpKeys(sql)
        return key
      })
    },
    deleteKey: (kid, audit = []) =>
      db.tx(async (sql) => {
        await lockKeys(sql)
        const rows = await sql.query(`DELETE FROM authd_keys WHERE kid = $1 RETURNING kid`, [kid])
        if (rows.length === 0) return false
        await bumpKeys(sql)
        await appendAuditTx(sql, audit)
        return true
      }),
    keysVersion: async () => (await db.query<{ n: number }>(`SELECT n FROM authd_counters WHERE name = 'keys_version'`))[0]!.n,

    // ---- /me ----
    async meRead(sids) {
      // one round trip: every requested session with its user, and the keys' version
      const rows = await db.query<{
        kv: number
        id: string | null
        user_id: string
        created_at: number
        expires_at: number
        last_used_at: number
        uid: string | null
        email: string
        disabled: boolean
        mfa_enabled: boolean
      }>(
        // each session's user by its key (LIMIT 1 keeps the planner from walking the users'
        // index in a merge join); one row with the version even when no session is found
        `SELECT c.n AS kv, s.id, s.user_id, s.created_at, s.expires_at, s.last_used_at, u.id AS uid, u.email, u.disabled, u.mfa_enabled
         FROM authd_counters c
         LEFT JOIN authd_sessions s ON s.id = ANY ($1::text[])
         LEFT JOIN LATERAL (SELECT id, email, disabled, mfa_enabled FROM authd_users WHERE id = s.user_id LIMIT 1) u ON true
         WHERE c.name = 'keys_version'`,
        [sids],
      )
      const records = new Map<string, MeRecord | undefined>(sids.map((sid) => [sid, undefined]))
      for (const r of rows) {
        if (r.id === null) continue
        records.set(r.id, {
          userId: r.user_id,
          createdAt: r.created_at,
          expiresAt: r.expires_at,
          lastUsedAt: r.last_used_at,
          user: r.uid === null ? undefined : { id: r.uid, email: r.email, disabled: r.disabled, mfaEnabled: r.mfa_enabled },
        })
      }
      return { version: ++meVersion, keysVersion: rows[0]!.kv, records }
    },

    // ---- device cookies, mfaTokens, limit clears ----
    ensureDeviceKey: (create) => ensureSecret('device_key', create),
    ensureMfaKey: (create) => ensureSecret('mfa_key', create),
    mfaTokenUsed: async (id, expiresAt) =>
      (await db.query(`SELECT 1 FROM authd_mfa_used WHERE expires_at = $1 AND id = $2`, [expiresAt, id])).length > 0,
    finishMfaStep: <T>(token: { id: string; expiresAt: number }, userId: string, now: number, decide: (user: UserRecord | undefined, used: boolean) => MfaStepDecision<T>) =>
      db.tx(async (sql) => {
        // the records of tokens expired by now (nobody can present those any more), but none
        // another second step is deleting at this moment
        await sql.query(
          `DELETE FROM authd_mfa_used WHERE (expires_at, id) IN (
             SELECT expires_at, id FROM authd_mfa_used WHERE expires_at < $1 FOR UPDATE SKIP LOCKED)`,
          [now],
        )
        // two second steps of one user (one token, or one code) queue on the user's row
        const user = await lockedUser(sql, userId)
        const used = (await sql.query(`SELECT 1 FROM authd_mfa_used WHERE expires_at = $1 AND id = $2`, [token.expiresAt, token.id])).length > 0
        const d = decide(user, used)
        if (d.action === 'use') {
          await putUserTx(sql, user, d.user.id === userId ? d.user : { ...d.user, id: userId })
          await sql.query(`INSERT INTO authd_mfa_used (expires_at, id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [token.expiresAt, token.id])
        }
        // a failed second step is recorded though it changed nothing, as on LMDB
        await appendAuditTx(sql, d.audit ?? [])
        return d.result
      }),
    addLimitClear: (target, at, audit = []) =>
      db.tx(async (sql) => {
        const [{ n: seq }] = await sql.query<{ n: number }>(`UPDATE authd_counters SET n = n + 1 WHERE name = 'limit_clear_seq' RETURNING n`)
        await sql.query(
          `WITH old AS (DELETE FROM authd_limit_clears WHERE seq <= $1::bigint - $4::bigint)
           INSERT INTO authd_limit_clears (seq, target, at) VALUES ($1, $2, $3)`,
          [seq, JSON.stringify(target), at, LIMIT_CLEARS_KEPT],
        )
        await appendAuditTx(sql, audit)
        return seq!
      }),
    async limitClearsAfter(after) {
      const rows = await db.query<{ seq: number; target: LimitClearTarget; at: number }>(
        `SELECT seq, target, at FROM authd_limit_clears WHERE seq > $1 ORDER BY seq`,
        [after],
      )
      return rows.map((r): LimitClear => ({ seq: r.seq, target: r.target, at: r.at }))
    },

    // ---- the audit log ----
    async appendAudit(audit) {
      // one statement, its own transaction
      await appendAuditTx(db, audit)
    },
    async auditEvents(q: AuditQuery) {
      const where: string[] = []
      const values: unknown[] = []
      const add = (column: string, op: string, value: unknown): void => {
        values.push(value)
        where.push(`${column} ${op} $${values.length}`)
      }
      if (q.before !== undefined) add('seq', '<', q.before)
      if (q.userId !== undefined) add('user_id', '=', q.userId)
      if (q.event !== undefined) add('event', '=', q.event)
      if (q.since !== undefined) add('at', '>=', q.since)
      values.push(q.limit)
      const rows = await db.query<{ body: AuditEvent }>(
        `SELECT body FROM authd_audit ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT $${values.length}`,
        values,
      )
      return rows.map((r) => r.body)
    },
    async auditChain(walk) {
      // the anchor and every page in one snapshot (a read-only repeatable-read transaction on a
      // connection of its own): a retention sweep during a long walk is not half in it
      const conn = await db.lease()
      let failed: unknown
      try {
        await conn.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
        const [head] = await conn.query<{ anchor_seq: number; anchor_hash: string }>(`SELECT anchor_seq, anchor_hash FROM authd_audit_head`)
        const anchor: AuditAnchor = { seq: head!.anchor_seq, hash: head!.anchor_hash }
        // every kept event, by seq: an imported one the anchor should have removed shows as a break
        async function* events(): AsyncGenerator<AuditEvent> {
          let last = 0
          for (;;) {
            const page = (await conn.query<{ body: AuditEvent }>(`SELECT body FROM authd_audit WHERE seq > $1 ORDER BY seq LIMIT $2`, [last, CHAIN_PAGE])).map((r) => r.body)
            yield* page
            if (page.length < CHAIN_PAGE) return
            last = page[page.length - 1]!.seq
          }
        }
        const result = await walk(anchor, events())
        await conn.query('COMMIT')
        return result
      } catch (err) {
        failed = err
        throw err
      } finally {
        // a walk that failed leaves its transaction open: the connection is ended with it
        conn.release(failed)
      }
    },
    async sweepAudit(before) {
      let total = 0
      for (;;) {
        // a chunk per transaction, as on LMDB: the head's lock, which every append takes, is held
        // for one chunk at a time, never for the whole backlog
        const removed = await db.tx(async (sql) => {
          await sql.query(`SELECT seq FROM authd_audit_head FOR UPDATE`)
          // the oldest events, and of them only a run older than `before`: what remains must
          // still chain, whatever the times of those after the first that stays
          const oldest = await sql.query<{ seq: number; at: number }>(`SELECT seq, at FROM authd_audit ORDER BY seq LIMIT $1`, [AUDIT_SWEEP_CHUNK])
          let n = 0
          while (n < oldest.length && oldest[n]!.at < before) n++
          if (n === 0) return 0
          // the last event removed is the anchor
          const last = oldest[n - 1]!.seq
          const [{ hash }] = await sql.query<{ hash: string }>(`SELECT body->>'hash' AS hash FROM authd_audit WHERE seq = $1`, [last])
          await sql.query(`DELETE FROM authd_audit WHERE seq <= $1`, [last])
          await sql.query(`UPDATE authd_audit_head SET anchor_seq = $1, anchor_hash = $2`, [last, hash])
          return n
        })
        total += removed
        if (removed < AUDIT_SWEEP_CHUNK) return total
      }
    },

    // ---- meta ----
    schemaVersion: () => schemaVersionOf(db),
    async ping() {
      // the schema's own record: a database that answers without authd's schema, or without its
      // version yet (a restore under way), is not ready
      const rows = await db.query(`SELECT 1 FROM authd_meta WHERE name = 'schema_version'`)
      if (rows.length === 0) throw new AppError('STORE_UNAVAILABLE', { message: 'the database has no authd schema version (a restore under way?)' })
    },
    exportRecords: () => exportPg(db, PG_SCHEMA_VERSION),
    importRecords: (records, audit) => importPg(db, records, audit),
    // a commit is acknowledged once durable (synchronous_commit)
    flushed: async () => {},
    backup: async () => {
      throw new AppError('NO_BACKUP')
    },
    async close() {
      limiter.close()
      await db.end()
    },
  }
  return store

}
