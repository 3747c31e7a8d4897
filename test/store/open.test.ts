/**
 * store/open.ts: the config's store.backend picks the store, and only that backend's module is
 * loaded (the PostgreSQL client is not loaded for LMDB, nor LMDB for PostgreSQL). What each is
 * handed is exactly its part of the config, and a store that fails to open fails openStore: no
 * falling back to the other. test/daemon/open-store.test.ts has the daemon's side (which limiter
 * it counts in); the PostgreSQL store is mocked here (its own tests run it on a real server).
 */
import t, { type Test } from 'tap'
import type { StoreConfig } from '../../src/config/types.js'
import { asyncLimiter, createRateLimiter } from '../../src/core/rate-limiter.js'
import { AppError } from '../../src/errors.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { Store } from '../../src/store/store.js'
import { user } from '../helpers/records.js'

type OpenModule = typeof import('../../src/store/open.js')

/**
 * open.ts with both backends' modules mocked: `loaded` says which of them it imported (tap builds
 * a mocked module when it is imported, reading its exports then).
 */
async function mockedOpen(t: Test, backends: { pg?: (opts: unknown) => Promise<unknown>; lmdb?: (opts: unknown) => Promise<Store> }) {
  const loaded: string[] = []
  const { openStore } = await t.mockImport<OpenModule>('../../src/store/open.js', {
    '../../src/store/pg/pg-store.js': {
      get openPgStore() {
        loaded.push('pg')
        return backends.pg ?? (() => Promise.reject(new Error('PostgreSQL asked for')))
      },
    },
    '../../src/store/lmdb-store.js': {
      get openLmdbStore() {
        loaded.push('lmdb')
        return backends.lmdb ?? (() => Promise.reject(new Error('LMDB asked for')))
      },
    },
  })
  return { openStore, loaded }
}

t.test('lmdb: a real store in store.path, whatever url and pool size say; no limiter', async (t) => {
  const dir = t.testdir()
  const { openStore } = await import('../../src/store/open.js')
  const { store, limiter } = await openStore({ backend: 'lmdb', path: dir, url: 'postgres://authd@db/authd', poolSize: 3 })
  t.teardown(() => store.close())
  t.equal(store.backend, 'lmdb')
  t.equal(store.location, dir)
  t.equal(limiter, null)
  t.ok(await store.createUser(user('u1', 'ann@example.com')))
  await store.close()
  const again = await openLmdbStore({ path: dir })
  t.teardown(() => again.close())
  t.equal((await again.getUser('u1'))?.email, 'ann@example.com', 'written in that directory')
})

t.test('lmdb: openLmdbStore is given the path alone, and PostgreSQL’s module is never loaded', async (t) => {
  const asked: unknown[] = []
  const fake = { backend: 'lmdb' } as Store
  const { openStore, loaded } = await mockedOpen(t, { lmdb: async (opts) => (asked.push(opts), fake) })
  const opened = await openStore({ backend: 'lmdb', path: '/var/lib/authd', url: 'postgres://authd@db/authd', poolSize: 3 }, { log: { warn: () => {} } })
  t.same(asked, [{ path: '/var/lib/authd' }])
  t.equal(opened.store, fake)
  t.equal(opened.limiter, null)
  t.same(loaded, ['lmdb'])
})

t.test('postgres: openPgStore is given the url, the pool size and the log, not the path; LMDB’s module is never loaded', async (t) => {
  const real = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => real.close())
  const limiter = asyncLimiter(createRateLimiter({ maxKeys: 10, now: () => 0 }))
  const asked: unknown[] = []
  const { openStore, loaded } = await mockedOpen(t, { pg: async (opts) => (asked.push(opts), { store: real, limiter }) })
  const log = { warn: () => {} }
  const cfg: StoreConfig = { backend: 'postgres', path: '/nowhere', url: 'postgres://authd@db/authd', poolSize: 3 }
  const opened = await openStore(cfg, { log })
  t.equal(asked.length, 1)
  t.same(asked[0], { url: 'postgres://authd@db/authd', poolSize: 3, log })
  t.equal((asked[0] as { log: unknown }).log, log, 'the very log the caller gave: the store’s warnings reach it')
  t.same(Object.keys(opened).sort(), ['limiter', 'store'])
  t.equal(opened.store, real)
  t.equal(opened.limiter, limiter, 'the database’s limiter is handed on')
  t.same(loaded, ['pg'])
})

t.test('a store that fails to open fails openStore with its error: no falling back to the other backend', async (t) => {
  const down = new AppError('STORE_UNAVAILABLE')
  const pg = await mockedOpen(t, { pg: () => Promise.reject(down) })
  await t.rejects(pg.openStore({ backend: 'postgres', path: t.testdir(), url: 'postgres://authd@db/authd', poolSize: 3 }), down)
  t.same(pg.loaded, ['pg'])
  const broken = new Error('MDB_INVALID')
  const lmdb = await mockedOpen(t, { lmdb: () => Promise.reject(broken) })
  await t.rejects(lmdb.openStore({ backend: 'lmdb', path: t.testdir(), url: 'postgres://authd@db/authd', poolSize: 3 }), broken)
  t.same(lmdb.loaded, ['lmdb'])
})
