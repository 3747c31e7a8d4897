/**
 * The stress cases on PostgreSQL (store.backend = "postgres"): a throwaway server of the case's
 * own, started as the tests start theirs (test/helpers/pg-server.mjs) but durable (commits
 * flushed to disk, as in production), on a Unix socket only, and removed when the case ends (or,
 * through the tests' keeper process, when this process dies). And the store read directly after
 * a crash, as store-peek.mjs reads an LMDB one.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { destroyServerSync, findPgBin, initServer, pgUrl } from '../../test/helpers/pg-server.mjs'

const KEEPER = fileURLToPath(new URL('../../test/helpers/pg-keeper.mjs', import.meta.url))

/**
 * Runs `use(store)` against a fresh PostgreSQL server; `store.env` puts a daemon on it. Without
 * the server binaries the case is not measured, and says why.
 */
export async function onPostgres(say, use) {
  const bin = findPgBin()
  if ('missing' in bin) return { status: 'NOT MEASURED', figures: [], note: bin.missing.replace('the PostgreSQL tests skip', 'not measured') }
  // in the temp directory itself: the server's user cannot enter the run's private directory
  const dir = mkdtempSync(join(tmpdir(), 'authd-stress-pg-'))
  spawn(process.execPath, [KEEPER, 'watch', String(process.pid), dir, bin.bin], { detached: true, stdio: 'ignore' }).unref()
  try {
    const t0 = performance.now()
    const sock = await initServer(bin, dir, { durable: true })
    const url = pgUrl(sock, 'postgres')
    say(`PostgreSQL ${bin.version} ready in ${Math.round(performance.now() - t0)} ms (durable, Unix socket)`)
    return await use({ backend: 'postgres', url, env: { AUTHD_STORE_BACKEND: 'postgres', AUTHD_STORE_URL: url }, inspect: () => inspectPgStore(url) })
  } finally {
    destroyServerSync(bin, dir)
  }
}

/**
 * Everything in the store, with the consistency problems found (the same shape and checks as
 * store-peek.mjs's inspectStore): a record unlike its columns, a session without its user, a
 * session whose live refresh hash or token family does not lead back to it.
 */
export async function inspectPgStore(url) {
  const db = new pg.Client({ connectionString: url })
  await db.connect()
  try {
    const users = new Map()
    const emails = new Map()
    const problems = []
    const userFields = ['id', 'email', 'passwordHash', 'createdAt', 'updatedAt', 'disabled']
    for (const row of (await db.query('SELECT id, email, disabled, record FROM authd_users')).rows) {
      const u = row.record
      users.set(row.id, u)
      emails.set(row.email, row.id)
      if (userFields.some((f) => u?.[f] === undefined)) problems.push(`user ${row.id} lacks fields`)
      if (u.id !== row.id || u.email !== row.email || u.disabled !== row.disabled) problems.push(`user ${row.id}: record and columns differ`)
      if (typeof u.passwordHash !== 'string' || !u.passwordHash.startsWith('$argon2id$')) problems.push(`user ${row.id} has a partial hash`)
    }
    const sessions = new Map()
    const sessionFields = ['id', 'userId', 'createdAt', 'lastUsedAt', 'expiresAt', 'refreshHash', 'generation']
    for (const row of (await db.query('SELECT id, user_id, expires_at, record FROM authd_sessions')).rows) {
      const s = row.record
      sessions.set(row.id, s)
      if (sessionFields.some((f) => s?.[f] === undefined)) problems.push(`session ${row.id} lacks fields`)
      if (s.id !== row.id || s.userId !== row.user_id || s.expiresAt !== Number(row.expires_at)) problems.push(`session ${row.id}: record and columns differ`)
      if (!users.has(row.user_id)) problems.push(`session ${row.id} of a missing user`)
    }
    const refresh = new Map()
    for (const row of (await db.query('SELECT hash, session_id FROM authd_session_tokens')).rows) refresh.set(row.hash, row.session_id)
    for (const [id, s] of sessions) {
      if (refresh.get(s.refreshHash) !== id) problems.push(`session ${id}: live refresh hash not indexed`)
      if (s.familyHash !== undefined && refresh.get(s.familyHash) !== id) problems.push(`session ${id}: its token family not indexed`)
    }
    for (const [hash, sid] of refresh) if (!sessions.has(sid)) problems.push(`refresh hash ${hash.slice(0, 8)}… of a missing session`)
    return { users, emails, sessions, refresh, problems }
  } finally {
    await db.end()
  }
}
