import { spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import t from 'tap'
import { ownPgServer, pgDatabase } from './pg.js'
import { findPgBin } from './pg-server.mjs'

const FIXTURE = fileURLToPath(new URL('./fixtures/pg-user.ts', import.meta.url))
const AFTER = fileURLToPath(new URL('./pg-after.mjs', import.meta.url))

async function query(url: string, sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await client.query(sql, params)
  } finally {
    await client.end()
  }
}

/** runs a node program the way tap runs this file (same loader), with extra environment */
function runNode(file: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, file], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

t.test('two databases are separate', async (t) => {
  const a = await pgDatabase(t)
  if (!a) return
  const b = await pgDatabase(t)
  if (!b) return
  t.not(a.database, b.database)
  t.equal(a.host, b.host, 'one shared server')
  await query(a.url, 'CREATE TABLE only_in_a (x int)')
  await query(a.url, 'INSERT INTO only_in_a VALUES (1)')
  t.same((await query(a.url, 'SELECT x FROM only_in_a')).rows, [{ x: 1 }])
  t.same((await query(b.url, "SELECT to_regclass('only_in_a') AS t")).rows, [{ t: null }], 'the table is not in the other database')
})

t.test('a database is dropped when its test ends', async (t) => {
  let name = ''
  let skipped = false
  await t.test('uses a database', async (t) => {
    const db = await pgDatabase(t)
    if (!db) return void (skipped = true)
    name = db.database
    // a connection left open does not keep it
    const open = new pg.Client({ connectionString: db.url })
    open.on('error', () => {})
    await open.connect()
    t.equal((await open.query('SELECT current_database() AS d')).rows[0].d, name)
  })
  if (skipped) return
  const other = await pgDatabase(t)
  if (!other) return
  const found = await query(other.url, 'SELECT 1 FROM pg_database WHERE datname = $1', [name])
  t.equal(found.rowCount, 0, `${name} is gone`)
})

t.test('a private server: stopped, connections fail; started again, they work and the data is kept', async (t) => {
  const server = await ownPgServer(t)
  if (!server) return
  await query(server.url(), 'CREATE TABLE kept (x int)')
  await query(server.url(), 'INSERT INTO kept VALUES (7)')
  const shared = await pgDatabase(t)
  await server.stop()
  await t.rejects(query(server.url(), 'SELECT 1'), 'a connection fails while it is stopped')
  if (shared) t.same((await query(shared.url, 'SELECT 1 AS one')).rows, [{ one: 1 }], 'the shared server is not affected')
  await server.start()
  t.same((await query(server.url(), 'SELECT x FROM kept')).rows, [{ x: 7 }])
})

t.test('processes attaching at once share one server, and it is gone with its files after the run', async (t) => {
  if ('missing' in findPgBin()) return void t.plan(0, 'no PostgreSQL server binaries')
  const base = mkdtempSync(join(tmpdir(), 'authd-pg-test-'))
  t.teardown(() => rmSync(base, { recursive: true, force: true }))
  chmodSync(base, 0o755)
  const shared = join(base, 'shared')
  const out = join(base, 'out')
  const runs = await Promise.all([1, 2, 3].map(() => runNode(FIXTURE, { AUTHD_TEST_PG_SHARED: shared, PG_USER_OUT: out })))
  for (const r of runs) t.equal(r.code, 0, 'the test process passes', { output: r.stdout + r.stderr })
  const dbs = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { host: string; database: string })
  t.equal(dbs.length, 3)
  t.equal(new Set(dbs.map((d) => d.host)).size, 1, 'one server')
  t.equal(new Set(dbs.map((d) => d.database)).size, 3, 'a database each')
  // the test processes are gone; the keeper waits a moment for more, until the after hook
  const keeper = JSON.parse(readFileSync(join(shared, 'keeper.json'), 'utf8')) as { pid: number }
  const postmaster = Number(readFileSync(join(shared, 'srv', 'data', 'postmaster.pid'), 'utf8').split('\n')[0])
  t.ok(alive(postmaster), 'the server runs between test files')
  const after = await runNode(AFTER, { AUTHD_TEST_PG_SHARED: shared })
  t.equal(after.code, 0, 'the after hook succeeds', { output: after.stderr })
  t.notOk(alive(keeper.pid), 'the keeper has exited')
  t.notOk(alive(postmaster), 'the server has stopped')
  t.notOk(existsSync(shared), 'its files are removed')
})

t.test('without the server binaries a PostgreSQL test skips, saying how to install them; under TEST_REQUIRE_POSTGRES=1 it fails', async (t) => {
  const out = join(mkdtempSync(join(tmpdir(), 'authd-pg-test-')), 'out')
  t.teardown(() => rmSync(join(out, '..'), { recursive: true, force: true }))
  const skipped = await runNode(FIXTURE, { TEST_PG_BINDIR: '', PG_USER_OUT: out, TEST_REQUIRE_POSTGRES: '' })
  t.equal(skipped.code, 0, 'the test process passes', { output: skipped.stdout + skipped.stderr })
  t.match(skipped.stdout, /# SKIP PostgreSQL server binaries \(initdb, pg_ctl\) not found: the PostgreSQL tests skip \(install them: apt-get install postgresql\)/)
  const required = await runNode(FIXTURE, { TEST_PG_BINDIR: '', PG_USER_OUT: out, TEST_REQUIRE_POSTGRES: '1' })
  t.not(required.code, 0, 'the test process fails')
  t.match(required.stdout, /not ok .*TEST_REQUIRE_POSTGRES=1 requires them/)
  t.notOk(existsSync(out), 'no database was handed out')
})
