/**
 * The database away (README, "Several instances on PostgreSQL"): every call that needs it
 * rejects with STORE_UNAVAILABLE within the deadline, never hangs and never ends the
 * process; once the database is back the store works again by itself, and nothing it had
 * acknowledged is lost.
 */
import { createConnection, createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import pg from 'pg'
import t from 'tap'
import { limitKey } from '../../src/store/rate-limit.js'
import { openPgStore } from '../../src/store/pg/pg-store.js'
import type { UserRecord } from '../../src/store/store.js'
import { ownPgServer, pgDatabase } from '../helpers/pg.js'

const T0 = 1_700_000_000_000
/** the store's error when its database cannot be reached (answered 503) */
const UNAVAILABLE = { name: 'AppError', code: 'STORE_UNAVAILABLE' }
const user = (id: string): UserRecord => ({ id, email: `${id}@example.com`, passwordHash: 'x', createdAt: T0, updatedAt: T0, disabled: false })

/** how long `p` took to settle, and how */
async function timed<T>(p: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const start = performance.now()
  try {
    const value = await p
    return { ms: performance.now() - start, value }
  } catch (error) {
    return { ms: performance.now() - start, error }
  }
}

/** calls `fn` every 100 ms until it resolves, for at most `ms`; how long it took, or undefined */
async function until(fn: () => Promise<unknown>, ms: number): Promise<number | undefined> {
  const start = performance.now()
  while (performance.now() - start < ms) {
    try {
      await fn()
      return performance.now() - start
    } catch {
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  return undefined
}

t.test('the server stopped: STORE_UNAVAILABLE within 5 s; started: works again within 5 s, nothing lost', async (t) => {
  const server = await ownPgServer(t)
  if (!server) return
  const warnings: string[] = []
  const { store, limiter } = await openPgStore({ url: server.url(), poolSize: 4, log: { warn: (_obj, msg) => warnings.push(msg) } })
  t.teardown(() => store.close())
  t.equal(await store.createUser(user('before')), true, 'acknowledged before the outage')
  // the pool's connections open when the server goes: idle ones, and one inside a write (waiting
  // for a row another connection holds)
  await Promise.all(Array.from({ length: 4 }, (_, i) => store.getUser(`warm-${i}`)))
  const holder = new pg.Client({ connectionString: server.url() })
  holder.on('error', () => {})
  await holder.connect()
  await holder.query(`BEGIN; SELECT 1 FROM authd_users WHERE id = 'before' FOR UPDATE`)
  const inFlight = timed(store.updateUser('before', (u) => ({ ...u, disabled: true })))
  await new Promise((r) => setTimeout(r, 200))

  await server.stop()
  const cut = await inFlight
  t.match(cut.error, UNAVAILABLE, 'a write in flight: STORE_UNAVAILABLE')
  t.ok(cut.ms < 5000, `a write in flight: answered in ${Math.round(cut.ms)} ms`)
  const calls: Array<[string, () => Promise<unknown>]> = [
    ['a read', () => store.getUser('before')],
    ['a write', () => store.createUser(user('during'))],
    ['a refresh', () => store.refreshSession('h', () => ({ action: 'none', result: 0 }))],
    [
      'a refresh with its charge (one statement)',
      () =>
        store.refreshSession('h', () => ({ action: 'none', result: 0 }), undefined, {
          limiter,
          entries: [{ key: limitKey('refresh_ip', 'x'), rule: { count: 5, windowMs: 60_000, text: '5/1m' } }],
          refused: () => -1,
        }),
    ],
    ['/me', () => store.meRead(['s1'], 0, new Set())],
    ['the limiter', () => limiter.consume([{ key: limitKey('a', 'x'), rule: { count: 5, windowMs: 60_000, text: '5/1m' } }])],
    ['ping', () => store.ping()],
  ]
  for (const [name, call] of calls) {
    const r = await timed(call())
    t.match(r.error, UNAVAILABLE, `${name}: STORE_UNAVAILABLE`)
    t.ok(r.ms < 5000, `${name}: answered in ${Math.round(r.ms)} ms`)
  }
  t.ok(warnings.length >= 1 && warnings.length <= 2, 'the lost connections were logged, once')

  await server.start()
  const back = await until(() => store.ping(), 5000)
  t.ok(back !== undefined, `working again ${Math.round(back ?? -1)} ms after the server came back`)
  t.match(await store.getUser('before'), { email: 'before@example.com', disabled: false }, 'the acknowledged write is there, the cut one is not')
  t.equal(await store.getUser('during'), undefined, 'the refused write is not')
  t.equal(await store.createUser(user('after')), true)
  t.ok((await limiter.consume([{ key: limitKey('a', 'x'), rule: { count: 5, windowMs: 60_000, text: '5/1m' } }])).ok)
})

t.test('a database that stops answering (a frozen connection): STORE_UNAVAILABLE at the deadline, not a hang', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  // a loopback proxy to the server's socket that can stop passing bytes either way
  let frozen = false
  const held: Array<[Socket, Socket]> = []
  const proxy = createServer((client) => {
    const upstream = createConnection(join(db.host, '.s.PGSQL.5432'))
    held.push([client, upstream])
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
    client.on('data', (b) => frozen || upstream.write(b))
    upstream.on('data', (b) => frozen || client.write(b))
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const pair of held) for (const s of pair) s.destroy()
    proxy.close()
  })
  const port = (proxy.address() as { port: number }).port
  const { store } = await openPgStore({ url: `postgres://postgres@127.0.0.1:${port}/${db.database}`, poolSize: 2, queryTimeoutMs: 1000 })
  t.teardown(() => store.close())
  t.equal(await store.createUser(user('before')), true)

  frozen = true
  for (const [name, call] of [
    ['a read', () => store.getUser('before')],
    ['a write', () => store.createUser(user('during'))],
  ] as Array<[string, () => Promise<unknown>]>) {
    const r = await timed(call())
    t.match(r.error, UNAVAILABLE, `${name}: STORE_UNAVAILABLE`)
    t.ok(r.ms >= 900 && r.ms < 5000, `${name}: given up after ${Math.round(r.ms)} ms`)
  }

  frozen = false
  const back = await until(() => store.getUser('before'), 5000)
  t.ok(back !== undefined, 'answers again once bytes flow (the frozen connections were dropped)')
  t.equal((await store.getUser('before'))?.email, 'before@example.com')
})

t.test("a database that answers without authd's schema (a restore under way): STORE_UNAVAILABLE and not ready, not a statement's error; back once the schema is", async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const { store } = await openPgStore({ url: db.url, poolSize: 2 })
  t.teardown(() => store.close())
  t.equal(await store.createUser(user('before')), true)
  await store.ping()
  const admin = new pg.Client({ host: db.host, user: 'postgres', database: db.database })
  await admin.connect()
  t.teardown(() => admin.end())
  await admin.query('ALTER SCHEMA public RENAME TO public_saved')
  await admin.query('CREATE SCHEMA public')
  await t.rejects(store.ping(), UNAVAILABLE, 'the readiness probe: not ready')
  await t.rejects(store.getUser('before'), UNAVAILABLE, 'a read')
  await t.rejects(store.createUser(user('during')), UNAVAILABLE, 'a write')
  await admin.query('DROP SCHEMA public')
  await admin.query('ALTER SCHEMA public_saved RENAME TO public')
  await store.ping()
  // the tables there, not yet filled (a restore's data still to come)
  await admin.query(`DELETE FROM authd_meta WHERE name = 'schema_version' RETURNING value`).then(async ({ rows }) => {
    await t.rejects(store.ping(), UNAVAILABLE, 'no schema version yet: not ready')
    await admin.query(`INSERT INTO authd_meta (name, value) VALUES ('schema_version', $1)`, [rows[0].value])
  })
  await store.ping()
  t.equal((await store.getUser('before'))?.email, 'before@example.com', 'nothing lost')
})
