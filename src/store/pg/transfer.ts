/**
 * `authctl export` and `import` on PostgreSQL (README, "Export and import"): the whole store as
 * records of the Store's own shapes, so an export of either backend loads into the other and
 * the tokens issued before keep working.
 */
import { AppError } from '../../errors.js'
import { earlierTokenHashes, readImport } from '../import-records.js'
import { EXPORT_FORMAT, hashParamsKey, settleKeys, type Audit, type AuditEvent, type ExportRecord, type ImportCounts, type KeyRecord, type SessionRecord, type UserRecord } from '../store.js'
import { appendAuditTx } from './audit-append.js'
import type { Db, Sql } from './db.js'

/** rows per statement, both ways */
const BATCH = 500

/**
 * Every record, read in one snapshot (a repeatable-read transaction on a connection of its
 * own), page by page: meta, users, sessions, keys, secrets, the used mfaTokens, the audit
 * anchor, the events.
 */
export async function* exportPg(db: Db, schema: number): AsyncGenerator<ExportRecord> {
  const conn = await db.lease()
  let failed: unknown
  let done = false
  try {
    await conn.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    yield { type: 'meta', format: EXPORT_FORMAT, schema, backend: 'postgres', exportedAt: new Date().toISOString() }
    for await (const record of pages<{ record: UserRecord }>(conn, 'authd_users', 'id', 'record')) yield { type: 'user', user: record.record }
    for await (const record of pages<{ record: SessionRecord }>(conn, 'authd_sessions', 'id', 'record')) yield { type: 'session', session: record.record }
    for await (const record of pages<{ record: KeyRecord }>(conn, 'authd_keys', 'kid', 'record')) yield { type: 'key', key: record.record }
    const secrets = await conn.query<{ name: 'device_key' | 'mfa_key'; value: string }>(
      `SELECT name, value FROM authd_meta WHERE name IN ('device_key', 'mfa_key') ORDER BY name`,
    )
    for (const s of secrets) yield { type: 'secret', name: s.name, value: s.value }
    // the used mfaTokens: one used just before the export is not used again after the import
    let used = await conn.query<{ expires_at: number; id: string }>(`SELECT expires_at, id FROM authd_mfa_used ORDER BY expires_at, id LIMIT ${BATCH}`)
    for (;;) {
      for (const u of used) yield { type: 'mfa_used', id: u.id, expiresAt: u.expires_at }
      if (used.length < BATCH) break
      const last = used[used.length - 1]!
      used = await conn.query(`SELECT expires_at, id FROM authd_mfa_used WHERE (expires_at, id) > ($1, $2) ORDER BY expires_at, id LIMIT ${BATCH}`, [last.expires_at, last.id])
    }
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

/**
 * The token hashes an imported session is found by, with their generations: the live token's,
 * those replaced within the grace, and the family's (-1), through which any older one is known.
 */
function tokensOf(s: SessionRecord): Array<[string, number]> {
  const tokens: Array<[string, number]> = [[s.refreshHash, s.generation]]
  earlierTokenHashes(s).forEach((h, i) => tokens.push([h, s.generation - 1 - i]))
  tokens.push([s.familyHash, -1])
  return tokens
}

/** `rows` in slices of BATCH */
function* slices<T>(rows: readonly T[]): Generator<T[]> {
  for (let i = 0; i < rows.length; i += BATCH) yield rows.slice(i, i + BATCH)
}

/**
 * Loads an export into a store without users, in one transaction: all or nothing. The export is
 * read and checked whole first (store/import-records.ts). What a store without users may hold (a
 * daemon started on it made its key and secrets, logged failed logins) is replaced by the
 * export's, so the keys, sessions and audit log are the export's alone, and what was issued under
 * the exported store keeps working.
 */
export async function importPg(db: Db, records: AsyncIterable<ExportRecord>, audit?: (counts: ImportCounts) => Audit): Promise<ImportCounts> {
  const notEmpty = (): AppError => new AppError('NOT_EMPTY', { params: { store: 'the database' } })
  // refused before the export is read, and again inside the transaction (a user added meanwhile)
  if ((await db.query(`SELECT 1 FROM authd_users LIMIT 1`)).length > 0) throw notEmpty()
  const set = await readImport(records)
  const conn = await db.lease()
  let failed: unknown
  try {
    await conn.query('BEGIN')
    // no user can be created meanwhile, and a second import waits for this one
    await conn.query('LOCK TABLE authd_users IN SHARE ROW EXCLUSIVE MODE')
    if ((await conn.query(`SELECT 1 FROM authd_users LIMIT 1`)).length > 0) throw notEmpty()
    await conn.query(`SELECT n FROM authd_counters WHERE name = 'keys_version' FOR UPDATE`)
    await conn.query(`SELECT seq FROM authd_audit_head FOR UPDATE`)
    const replacedAuditEvents = Number((await conn.query(`SELECT count(*) AS n FROM authd_audit`))[0].n)
    for (const table of ['authd_sessions', 'authd_keys', 'authd_mfa_used', 'authd_audit', 'authd_hash_tally']) await conn.query(`DELETE FROM ${table}`)

    for (const batch of slices(set.users)) {
      await conn.query(
        `INSERT INTO authd_users (id, email, disabled, mfa_enabled, record)
         SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::boolean[], $5::json[])`,
        [batch.map((u) => u.id), batch.map((u) => u.email), batch.map((u) => u.disabled), batch.map((u) => u.mfa !== undefined), batch.map((u) => JSON.stringify(u))],
      )
    }
    const tally = new Map<string, number>()
    for (const u of set.users) tally.set(hashParamsKey(u.passwordHash), (tally.get(hashParamsKey(u.passwordHash)) ?? 0) + 1)
    await conn.query(`INSERT INTO authd_hash_tally (params, n) SELECT * FROM unnest($1::text[], $2::bigint[])`, [[...tally.keys()], [...tally.values()]])

    for (const batch of slices(set.sessions)) {
      await conn.query(
        `INSERT INTO authd_sessions (id, user_id, created_at, last_used_at, expires_at, sealed, record)
         SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::boolean[], $7::json[])`,
        [
          batch.map((s) => s.id),
          batch.map((s) => s.userId),
          batch.map((s) => s.createdAt),
          batch.map((s) => s.lastUsedAt),
          batch.map((s) => s.expiresAt),
          batch.map((s) => (s.rotations?.length ?? 0) > 0),
          batch.map((s) => JSON.stringify(s)),
        ],
      )
      const tokens = batch.flatMap((s) => tokensOf(s).map(([hash, generation]) => [hash, s.id, generation] as const))
      await conn.query(
        `INSERT INTO authd_session_tokens (hash, session_id, generation) SELECT * FROM unnest($1::text[], $2::text[], $3::integer[])`,
        [tokens.map((t) => t[0]), tokens.map((t) => t[1]), tokens.map((t) => t[2])],
      )
    }

    // a store of before one stored active key could hold two: the one that signs stays active
    const actives = set.keys.filter((k) => k.state === 'active')
    const settled = new Map(actives.length > 1 ? settleKeys(actives, Date.now()).map((k) => [k.kid, k]) : [])
    const keys = set.keys.map((k) => settled.get(k.kid) ?? k)
    for (const k of [...keys.filter((k) => k.state !== 'active'), ...keys.filter((k) => k.state === 'active')]) {
      await conn.query(`INSERT INTO authd_keys (kid, state, record) VALUES ($1, $2, $3)`, [k.kid, k.state, JSON.stringify(k)])
    }
    await conn.query(`UPDATE authd_counters SET n = n + 1 WHERE name = 'keys_version'`)

    for (const [name, value] of Object.entries(set.secrets)) {
      await conn.query(`INSERT INTO authd_meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`, [name, value])
    }
    for (const batch of slices(set.mfaUsed)) {
      await conn.query(`INSERT INTO authd_mfa_used (expires_at, id) SELECT * FROM unnest($1::bigint[], $2::text[])`, [batch.map((u) => u.expiresAt), batch.map((u) => u.id)])
    }

    // the events as they are, each under its seq: whether they chain (their hashes are the
    // export's, their seqs in order and without gaps) is for `authctl audit verify` to say
    for (const batch of slices(set.events)) {
      await conn.query(
        `INSERT INTO authd_audit (seq, at, event, user_id, body) SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::json[])`,
        [batch.map((e) => e.seq), batch.map((e) => Date.parse(e.time)), batch.map((e) => e.event), batch.map((e) => e.userId), batch.map((e) => JSON.stringify(e))],
      )
    }
    // the seqs go on after the highest
    await conn.query(`UPDATE authd_audit_head SET seq = $1, hash = $2, anchor_seq = $3, anchor_hash = $4`, [set.head.seq, set.head.hash, set.anchor.seq, set.anchor.hash])
    const counts = { users: set.users.length, sessions: set.sessions.length, keys: set.keys.length, replacedAuditEvents }
    // the import's own event, in its transaction (the head is locked since the start)
    await appendAuditTx(conn, audit?.(counts) ?? [])
    await conn.query('COMMIT')
    return counts
  } catch (err) {
    failed = err
    throw err
  } finally {
    conn.release(failed)
  }
}
