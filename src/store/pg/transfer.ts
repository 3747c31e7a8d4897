/**
 * `authctl export` and `import` on PostgreSQL (README, "Export and import"): the whole store as
 * records of the Store's own shapes, so an export of either backend loads into the other and
 * the tokens issued before keep working.
 */
import { StoreError } from '../lmdb-store.js'
import { GENESIS } from '../audit-chain.js'
import { hashParamsKey, settleKeys, type AuditAnchor, type AuditEvent, type ExportRecord, type KeyRecord, type SessionRecord, type UserRecord } from '../store.js'
import type { Db, Sql } from './db.js'

/** rows per statement, both ways */
const BATCH = 500

/**
 * Every record, read in one snapshot (a repeatable-read transaction on a connection of its
 * own), page by page: meta, users, sessions, keys, secrets, the audit anchor, the events.
 */
export async function* exportPg(db: Db, schema: number): AsyncGenerator<ExportRecord> {
  const conn = await db.lease()
  let failed: unknown
  let done = false
  try {
    await conn.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    yield { type: 'meta', format: 1, schema, backend: 'postgres', exportedAt: new Date().toISOString() }
    for await (const record of pages<{ record: UserRecord }>(conn, 'authd_users', 'id', 'record')) yield { type: 'user', user: record.record }
    for await (const record of pages<{ record: SessionRecord }>(conn, 'authd_sessions', 'id', 'record')) yield { type: 'session', session: record.record }
    for await (const record of pages<{ record: KeyRecord }>(conn, 'authd_keys', 'kid', 'record')) yield { type: 'key', key: record.record }
    const secrets = await conn.query<{ name: 'device_key' | 'mfa_key'; value: string }>(
      `SELECT name, value FROM authd_meta WHERE name IN ('device_key', 'mfa_key') ORDER BY name`,
    )
    for (const s of secrets) yield { type: 'secret', name: s.name, value: s.value }
    const [head] = await conn.query<{ anchor_seq: number; anchor_hash: string }>(`SELECT anchor_seq, anchor_hash FROM authd_audit_head`)
    yield { type: 'audit_anchor', anchor: { seq: head!.anchor_seq, hash: head!.anchor_hash } }
    for await (const row of pages<{ body: AuditEvent }>(conn, 'authd_audit', 'seq', 'body')) yield { type: 'audit', event: row.body }
    await conn.query('COMMIT')
    done = true
  } catch (err) {
    failed = err
    throw err
  } finally {
    // a walk its consumer left before the end still holds its transaction
    if (!done && failed === undefined) failed = await settle(conn)
    conn.release(failed)
  }
}

/** ends an unfinished read transaction; undefined when the connection is clean again */
async function settle(conn: Sql): Promise<unknown> {
  try {
    await conn.query('ROLLBACK')
    return undefined
  } catch (err) {
    return err
  }
}

/** the rows of `table` in `key` order, a bounded page per statement (each page after the last key) */
async function* pages<R extends Record<string, unknown>>(conn: Sql, table: string, key: string, column: string): AsyncGenerator<R> {
  const select = `SELECT ${key} AS k, ${column} FROM ${table}`
  let rows = await conn.query<R & { k: unknown }>(`${select} ORDER BY ${key} LIMIT ${BATCH}`)
  for (;;) {
    yield* rows
    if (rows.length < BATCH) return
    rows = await conn.query<R & { k: unknown }>(`${select} WHERE ${key} > $1 ORDER BY ${key} LIMIT ${BATCH}`, [rows[rows.length - 1]!.k])
  }
}

/** the line of the first record of a batch that was not inserted (its id or another unique value was taken) */
function firstTaken(batch: Array<[number, { id: string }]>, inserted: Set<string>): number {
  const seen = new Set<string>()
  for (const [line, r] of batch) {
    if (!inserted.has(r.id) || seen.has(r.id)) return line
    seen.add(r.id)
  }
  return batch[0]![0]
}

const bad = (line: number, why: string): StoreError => new StoreError('BAD_EXPORT', `line ${line}: ${why}`)

const isString = (v: unknown): v is string => typeof v === 'string'
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const KEY_STATES = new Set(['next', 'active', 'retiring', 'retired'])

/** why a record cannot be taken, or undefined */
function problemOf(r: ExportRecord): string | undefined {
  switch (r.type) {
    case 'meta':
      return r.format === 1 ? undefined : `an export of format ${JSON.stringify(r.format)} (this version reads format 1)`
    case 'user': {
      const u = r.user as unknown as Record<string, unknown>
      return isObject(u) && isString(u.id) && u.id !== '' && isString(u.email) && u.email !== '' && isString(u.passwordHash) && isNumber(u.createdAt) && typeof u.disabled === 'boolean'
        ? undefined
        : 'not a user record'
    }
    case 'session': {
      const s = r.session as unknown as Record<string, unknown>
      return isObject(s) && isString(s.id) && isString(s.userId) && isString(s.refreshHash) && isNumber(s.createdAt) && isNumber(s.lastUsedAt) && isNumber(s.expiresAt) && isNumber(s.generation)
        ? undefined
        : 'not a session record'
    }
    case 'key': {
      const k = r.key as unknown as Record<string, unknown>
      return isObject(k) && isString(k.kid) && KEY_STATES.has(k.state as string) && isString(k.privateKeyPem) && isString(k.publicKeyPem) && isString(k.alg) ? undefined : 'not a key record'
    }
    case 'secret':
      return (r.name === 'device_key' || r.name === 'mfa_key') && isString(r.value) ? undefined : 'not a secret record'
    case 'audit_anchor':
      return isObject(r.anchor) && isNumber(r.anchor.seq) && isString(r.anchor.hash) ? undefined : 'not an audit anchor'
    case 'audit': {
      const e = r.event as unknown as Record<string, unknown>
      return isObject(e) && isNumber(e.seq) && isString(e.time) && !Number.isNaN(Date.parse(e.time)) && isString(e.event) && isString(e.hash) && isObject(e.detail)
        ? undefined
        : 'not an audit event'
    }
    default:
      return `an unknown record type ${JSON.stringify((r as { type?: unknown }).type)}`
  }
}

/**
 * The refresh-token hashes of an imported session to index, with their generations: the live
 * token, the ones replaced within the grace (each consecutive, the last one `previousHash`), and
 * the family (-1), through which any older token is still recognised.
 */
function tokensOf(s: SessionRecord): Array<[string, number]> {
  const tokens = new Map<string, number>([[s.refreshHash, s.generation]])
  const rotations = s.rotations ?? []
  rotations.forEach((r, i) => {
    if (!tokens.has(r.hash)) tokens.set(r.hash, Math.max(0, s.generation - (rotations.length - i)))
  })
  if (s.previousHash !== null && s.previousHash !== undefined && !tokens.has(s.previousHash)) tokens.set(s.previousHash, Math.max(0, s.generation - 1))
  if (s.familyHash !== undefined && !tokens.has(s.familyHash)) tokens.set(s.familyHash, -1)
  return [...tokens]
}

/**
 * Loads an export into a store without users, in one transaction: all or nothing. The keys,
 * secrets, sessions and audit log a store without users may hold (a daemon started on it
 * before made its key and secrets) are replaced by the export's, so that what was issued under
 * the exported store keeps working.
 */
export async function importPg(db: Db, records: AsyncIterable<ExportRecord>): Promise<{ users: number; sessions: number; keys: number }> {
  const conn = await db.lease()
  let failed: unknown
  try {
    await conn.query('BEGIN')
    // no user can be created meanwhile, and a second import waits for this one
    await conn.query('LOCK TABLE authd_users IN SHARE ROW EXCLUSIVE MODE')
    if ((await conn.query(`SELECT 1 FROM authd_users LIMIT 1`)).length > 0) throw new StoreError('NOT_EMPTY', 'the store already has users: import loads into an empty store only')
    await conn.query(`SELECT n FROM authd_counters WHERE name = 'keys_version' FOR UPDATE`)
    await conn.query(`SELECT seq FROM authd_audit_head FOR UPDATE`)
    await conn.query(`DELETE FROM authd_sessions`)
    await conn.query(`DELETE FROM authd_keys`)
    await conn.query(`DELETE FROM authd_audit`)
    await conn.query(`DELETE FROM authd_hash_tally`)

    const counts = { users: 0, sessions: 0, keys: 0 }
    const keys: KeyRecord[] = []
    const tally = new Map<string, number>()
    let users: Array<[number, UserRecord]> = []
    let sessions: Array<[number, SessionRecord]> = []
    let events: AuditEvent[] = []
    let anchor: AuditAnchor = GENESIS
    let last: AuditAnchor | undefined
    let line = 0

    const flushUsers = async (): Promise<void> => {
      if (users.length === 0) return
      const rows = await conn.query<{ id: string }>(
        `INSERT INTO authd_users (id, email, disabled, mfa_enabled, record)
         SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::boolean[], $5::json[])
         ON CONFLICT DO NOTHING RETURNING id`,
        [users.map(([, u]) => u.id), users.map(([, u]) => u.email), users.map(([, u]) => u.disabled), users.map(([, u]) => u.mfa !== undefined), users.map(([, u]) => JSON.stringify(u))],
      )
      if (rows.length < users.length) throw bad(firstTaken(users, new Set(rows.map((r) => r.id))), 'a user whose id or email an earlier record has')
      users = []
    }
    const flushSessions = async (): Promise<void> => {
      if (sessions.length === 0) return
      const batch = sessions.map(([, s]) => s)
      const rows = await conn.query<{ id: string }>(
        `INSERT INTO authd_sessions (id, user_id, created_at, last_used_at, expires_at, sealed, record)
         SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::boolean[], $7::json[])
         ON CONFLICT DO NOTHING RETURNING id`,
        [
          batch.map((s) => s.id),
          batch.map((s) => s.userId),
          batch.map((s) => s.createdAt),
          batch.map((s) => s.lastUsedAt),
          batch.map((s) => s.expiresAt),
          batch.map((s) => (s.rotations?.length ?? 0) > 0 || s.sealedSuccessor !== undefined),
          batch.map((s) => JSON.stringify(s)),
        ],
      )
      if (rows.length < batch.length) throw bad(firstTaken(sessions, new Set(rows.map((r) => r.id))), 'a session whose id an earlier record has')
      // a hash twice in one statement cannot be upserted: the last session naming it keeps it
      const tokens = [...new Map(batch.flatMap((s) => tokensOf(s).map(([hash, generation]) => [hash, { hash, generation, id: s.id }] as const))).values()]
      await conn.query(
        `INSERT INTO authd_session_tokens (hash, session_id, generation)
         SELECT * FROM unnest($1::text[], $2::text[], $3::integer[])
         ON CONFLICT (hash) DO UPDATE SET session_id = EXCLUDED.session_id, generation = EXCLUDED.generation`,
        [tokens.map((t) => t.hash), tokens.map((t) => t.id), tokens.map((t) => t.generation)],
      )
      sessions = []
    }
    const flushEvents = async (): Promise<void> => {
      if (events.length === 0) return
      await conn.query(
        `INSERT INTO authd_audit (seq, at, event, user_id, body)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::json[])`,
        [events.map((e) => e.seq), events.map((e) => Date.parse(e.time)), events.map((e) => e.event), events.map((e) => e.userId ?? null), events.map((e) => JSON.stringify(e))],
      )
      events = []
    }

    for await (const r of records) {
      line++
      const problem = isObject(r) ? problemOf(r) : 'not a record'
      if (problem !== undefined) throw bad(line, problem)
      if (line === 1 && r.type !== 'meta') throw bad(line, 'the first record is not the export\'s meta record')
      switch (r.type) {
        case 'user':
          users.push([line, r.user])
          tally.set(hashParamsKey(r.user.passwordHash), (tally.get(hashParamsKey(r.user.passwordHash)) ?? 0) + 1)
          counts.users++
          if (users.length >= BATCH) await flushUsers()
          break
        case 'session':
          sessions.push([line, r.session])
          counts.sessions++
          if (sessions.length >= BATCH) await flushSessions()
          break
        case 'key':
          keys.push(r.key)
          counts.keys++
          break
        case 'secret':
          await conn.query(`INSERT INTO authd_meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`, [r.name, r.value])
          break
        case 'audit_anchor':
          anchor = r.anchor
          break
        case 'audit':
          if (r.event.seq !== (last ?? anchor).seq + 1) throw bad(line, `audit event ${r.event.seq} does not follow event ${(last ?? anchor).seq}`)
          last = { seq: r.event.seq, hash: r.event.hash }
          events.push(r.event)
          if (events.length >= BATCH) await flushEvents()
          break
      }
    }
    if (line === 0) throw bad(1, 'an empty export')
    await flushUsers()
    await flushSessions()
    await flushEvents()

    // a store of before one key per state could hold two stored active: the one that signs stays so
    const actives = keys.filter((k) => k.state === 'active')
    const settled = actives.length > 1 ? new Map(settleKeys(actives, Date.now()).map((k) => [k.kid, k])) : new Map<string, KeyRecord>()
    const stored = keys.map((k) => settled.get(k.kid) ?? k)
    for (const k of [...stored.filter((k) => k.state !== 'active'), ...stored.filter((k) => k.state === 'active')]) {
      await conn.query(
        `INSERT INTO authd_keys (kid, state, record) VALUES ($1, $2, $3) ON CONFLICT (kid) DO UPDATE SET state = EXCLUDED.state, record = EXCLUDED.record`,
        [k.kid, k.state, JSON.stringify(k)],
      )
    }
    await conn.query(`UPDATE authd_counters SET n = n + 1 WHERE name = 'keys_version'`)
    const tallied = [...tally].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    await conn.query(`INSERT INTO authd_hash_tally (params, n) SELECT * FROM unnest($1::text[], $2::bigint[])`, [tallied.map(([k]) => k), tallied.map(([, n]) => n)])
    const head = last ?? anchor
    await conn.query(`UPDATE authd_audit_head SET seq = $1, hash = $2, anchor_seq = $3, anchor_hash = $4`, [head.seq, head.hash, anchor.seq, anchor.hash])
    await conn.query('COMMIT')
    return counts
  } catch (err) {
    failed = err
    throw err
  } finally {
    conn.release(failed)
  }
}
