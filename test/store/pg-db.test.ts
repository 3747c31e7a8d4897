/**
 * The PostgreSQL store's connection layer (src/store/pg/db.ts): which failures mean "the database
 * cannot answer now" (STORE_UNAVAILABLE, answered 503 with Retry-After) and which are the
 * statement's own, and the retry of a transaction the database broke off to avoid a deadlock or a
 * serialization anomaly. The outage itself (a server gone and back) is pg-outage.test.ts's.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { AppError, isAppError } from '../../src/errors.js'
import { isUnavailable, openDb, sqlState, storeError, type Db } from '../../src/store/pg/db.js'
import { ownPgServer, pgDatabase } from '../helpers/pg.js'

/** an error as node-postgres gives it: a server's error carries its SQLSTATE in `code`, a socket's its errno */
const withCode = (code: unknown, message = `failed with ${String(code)}`): Error => Object.assign(new Error(message), { code })

t.test('sqlState: the code of an error as a string, or undefined', async (t) => {
  t.equal(sqlState(withCode('40001')), '40001')
  t.equal(sqlState(withCode('ECONNREFUSED')), 'ECONNREFUSED')
  t.equal(sqlState(withCode(40001)), undefined, 'a number is no SQLSTATE')
  t.equal(sqlState(new Error('no code')), undefined)
  t.equal(sqlState({ code: '23505' }), '23505', 'any object with a code')
  for (const nothing of [null, undefined, 'text', 42]) t.equal(sqlState(nothing), undefined, String(nothing))
})

t.test('isUnavailable: the database cannot answer now, by SQLSTATE class or code, socket errno or node-postgres message', async (t) => {
  const unavailable: Array<[string, unknown]> = [
    ['the store said so already', new AppError('STORE_UNAVAILABLE', { message: 'the database did not answer' })],
    // classes: connection exception, insufficient resources, operator intervention, system error
    ['08006 connection failure', withCode('08006')],
    ['53300 too many connections', withCode('53300')],
    ['57014 a statement past its timeout', withCode('57014')],
    ['57P01 the server shutting down', withCode('57P01')],
    ['58030 an I/O error', withCode('58030')],
    // single codes
    ['25006 a read-only standby', withCode('25006')],
    ['55P03 a lock past its timeout', withCode('55P03')],
    ['40001 serialization failure', withCode('40001')],
    ['40P01 deadlock', withCode('40P01')],
    ['28000 no such role', withCode('28000')],
    ['28P01 a wrong password', withCode('28P01')],
    ['3D000 no such database', withCode('3D000')],
    // a database without authd's schema (a restore under way)
    ['42P01 no such table', withCode('42P01')],
    ['3F000 no such schema', withCode('3F000')],
    // the socket
    ...['ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'ECONNABORTED'].map((c): [string, unknown] => [c, withCode(c)]),
    // node-postgres's own words for a connection that ended or cannot be had
    ['connection terminated', new Error('Connection terminated unexpectedly')],
    ['not queryable', new Error('Client has encountered a connection error and is not queryable')],
    ['pool timeout', new Error('timeout exceeded when trying to connect')],
    ['read timeout', new Error('Query read timeout')],
  ]
  for (const [why, err] of unavailable) t.ok(isUnavailable(err), why)
  const own: Array<[string, unknown]> = [
    ['23505 unique violation', withCode('23505')],
    ['42601 a syntax error', withCode('42601')],
    ['42883 no such function (also a wrong argument type)', withCode('42883')],
    ['22P02 invalid text', withCode('22P02')],
    ['25P02 a transaction aborted before', withCode('25P02')],
    ['a class prefix only', withCode('08')],
    ['another AppError', new AppError('NOT_FOUND')],
    ['a plain error', new Error('something else')],
    ['not an error', 'Connection terminated'],
    ['nothing', undefined],
  ]
  for (const [why, err] of own) t.notOk(isUnavailable(err), why)
})

t.test('storeError: an unreachable database becomes STORE_UNAVAILABLE, with the cause kept; anything else is left as it is', async (t) => {
  const refused = withCode('ECONNREFUSED', 'connect ECONNREFUSED /run/postgresql/.s.PGSQL.5432')
  const e = storeError(refused)
  t.ok(isAppError(e))
  t.match(e, { code: 'STORE_UNAVAILABLE', status: 503, message: 'the database is unavailable: connect ECONNREFUSED /run/postgresql/.s.PGSQL.5432' })
  t.equal((e as { cause?: unknown }).cause, refused, 'the cause, for the log')
  const already = new AppError('STORE_UNAVAILABLE', { message: 'the database did not answer within 3000 ms (operation)' })
  t.equal(storeError(already), already, 'a STORE_UNAVAILABLE is not wrapped again')
  const own = withCode('23505', 'duplicate key value violates unique constraint')
  t.equal(storeError(own), own, "a statement's own error is the caller's")
  const other = new AppError('NOT_FOUND')
  t.equal(storeError(other), other)
})

/** a transaction the database breaks off as it would a serialization anomaly or a deadlock, for real */
const brokenOff = (code: '40001' | '40P01'): string => `DO $$ BEGIN RAISE EXCEPTION 'broken off' USING ERRCODE = '${code}'; END $$`

async function db(t: Test): Promise<Db | null> {
  const database = await pgDatabase(t)
  if (!database) return null
  const d = openDb({ url: database.url, poolSize: 2, queryTimeoutMs: 2000 })
  t.teardown(() => d.end())
  await d.query('CREATE TABLE counted (n int)')
  return d
}

t.test('a transaction the database breaks off (40001, 40P01) runs again from its start, and commits once', async (t) => {
  const d = await db(t)
  if (!d) return
  for (const code of ['40001', '40P01'] as const) {
    let runs = 0
    const value = await d.tx(async (sql) => {
      runs++
      await sql.query('INSERT INTO counted VALUES ($1)', [runs])
      if (runs < 3) await sql.query(brokenOff(code))
      return (await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM counted'))[0]!.n
    })
    t.equal(runs, 3, `${code}: run three times`)
    t.equal(value, (await d.query<{ n: number }>('SELECT count(*)::int AS n FROM counted'))[0]!.n, `${code}: the third run saw only its own insert on top of what was committed`)
    t.same((await d.query<{ n: number }>('SELECT n FROM counted ORDER BY n DESC LIMIT 1')).map((r) => r.n), [3], `${code}: only the run that committed left its row`)
    await d.query('DELETE FROM counted')
  }
})

t.test('a transaction broken off every time is given up after four runs, as the database unavailable (503), nothing committed', async (t) => {
  const d = await db(t)
  if (!d) return
  let runs = 0
  await t.rejects(
    d.tx(async (sql) => {
      runs++
      await sql.query('INSERT INTO counted VALUES (1)')
      await sql.query(brokenOff('40P01'))
    }),
    { code: 'STORE_UNAVAILABLE' },
  )
  t.equal(runs, 4)
  t.same(await d.query('SELECT * FROM counted'), [], 'nothing committed')
  // the pool is healthy after it
  t.same(await d.query('SELECT 1 AS one'), [{ one: 1 }])
})

t.test("a statement's own error is not retried and rolls its transaction back", async (t) => {
  const d = await db(t)
  if (!d) return
  let runs = 0
  await t.rejects(
    d.tx(async (sql) => {
      runs++
      await sql.query('INSERT INTO counted VALUES (1)')
      await sql.query('SELECT 1 / 0')
    }),
    { code: '22012' },
  )
  t.equal(runs, 1)
  t.same(await d.query('SELECT * FROM counted'), [], 'rolled back')
})

t.test('a single statement the database breaks off runs again too', async (t) => {
  const d = await db(t)
  if (!d) return
  // a sequence counts the runs: nextval is not rolled back with the statement
  await d.query('CREATE SEQUENCE runs')
  await d.query("CREATE FUNCTION third_time() RETURNS bigint LANGUAGE plpgsql AS $$ DECLARE n bigint := nextval('runs'); BEGIN IF n < 3 THEN RAISE EXCEPTION 'broken off' USING ERRCODE = '40001'; END IF; RETURN n; END $$")
  t.same(await d.query('SELECT third_time() AS n'), [{ n: 3 }], 'the third run answered')
})

/** PGPASSWORD and PGPASSFILE as `env` says for the length of the test (node-postgres reads them per connection) */
function passwordEnv(t: Test, env: { PGPASSWORD?: string; PGPASSFILE?: string }): void {
  const kept = { PGPASSWORD: process.env.PGPASSWORD, PGPASSFILE: process.env.PGPASSFILE }
  for (const k of ['PGPASSWORD', 'PGPASSFILE'] as const) {
    if (env[k] === undefined) delete process.env[k]
    else process.env[k] = env[k]
  }
  t.teardown(() => {
    for (const k of ['PGPASSWORD', 'PGPASSFILE'] as const) {
      if (kept[k] === undefined) delete process.env[k]
      else process.env[k] = kept[k]
    }
  })
}

const sockets = (): number => process.getActiveResourcesInfo().filter((r) => r === 'PipeWrap' || r === 'TCPSocketWrap').length

t.test('a role that needs a password, given none (no URL password, PGPASSWORD or ~/.pgpass): a sentence saying where to put it, and the connection ended at once', async (t) => {
  const server = await ownPgServer(t)
  if (!server) return
  await server.roleWithPassword('authd_pw', 'copper-lantern-58')
  passwordEnv(t, { PGPASSFILE: join(t.testdir(), 'none') })
  const before = sockets()
  const db = openDb({ url: server.url('authd_pw').replace('postgres@', 'authd_pw@'), poolSize: 2, queryTimeoutMs: 5000 })
  const err = await db.query('SELECT 1').then(() => null, (e: unknown) => e)
  await db.end()
  t.ok(isAppError(err) && err.code === 'STORE_UNAVAILABLE', 'the database unavailable (503 to a request; exit 1 from authctl and at start)')
  t.equal((err as Error).message, 'the database asks for a password and none is given: put it in store.url, PGPASSWORD or ~/.pgpass')
  // the server waits a minute (authentication_timeout) for a password that never comes: the
  // socket left open kept authctl and a failed start alive that long
  await new Promise((r) => setTimeout(r, 200))
  t.equal(sockets(), before, 'no socket to the server left open')
})

t.test('~/.pgpass (PGPASSFILE) gives the password, read without a warning on stderr; a wrong one there is a wrong password', async (t) => {
  const server = await ownPgServer(t)
  if (!server) return
  await server.roleWithPassword('authd_pw', 'copper-lantern-58')
  const dir = t.testdir()
  const file = join(dir, 'pgpass')
  writeFileSync(file, '*:*:authd_pw:authd_pw:copper-lantern-58\n', { mode: 0o600 })
  passwordEnv(t, { PGPASSFILE: file })
  const warnings: string[] = []
  const heard = (w: Error): void => void warnings.push(w.message)
  process.on('warning', heard)
  t.teardown(() => process.off('warning', heard))
  const url = server.url('authd_pw').replace('postgres@', 'authd_pw@')
  const db = openDb({ url, poolSize: 2, queryTimeoutMs: 5000 })
  t.same(await db.query('SELECT current_user AS who'), [{ who: 'authd_pw' }])
  await db.end()
  await new Promise((r) => setImmediate(r))
  t.same(warnings, [], 'no DeprecationWarning (node-postgres warns when it reads ~/.pgpass itself)')

  writeFileSync(file, '*:*:authd_pw:authd_pw:wrong-password-1\n', { mode: 0o600 })
  const wrong = openDb({ url, poolSize: 2, queryTimeoutMs: 5000 })
  const err = await wrong.query('SELECT 1').then(() => null, (e: unknown) => e)
  await wrong.end()
  t.ok(isAppError(err) && err.code === 'STORE_UNAVAILABLE')
  t.match((err as Error).message, /password authentication failed for user "authd_pw"/)
})
