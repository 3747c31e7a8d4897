/**
 * store/open.ts: the config picks the backend. LMDB opens in store.path with no limiter of its
 * own (the daemon keeps one in process); PostgreSQL is loaded only when asked for, and its
 * limiter is the one the daemon counts in. The PostgreSQL store itself is mocked here (its own
 * tests run it on a real server).
 */
import t from 'tap'
import type { StoreConfig } from '../../src/config/types.js'
import { asyncLimiter, createRateLimiter } from '../../src/core/rate-limiter.js'
import { type RateLimiter } from '../../src/store/rate-limit.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { openStore } from '../../src/store/open.js'
import { addUser, testConfig } from '../helpers/app.js'

const lmdb = (path: string): StoreConfig => ({ backend: 'lmdb', path, url: '', poolSize: 10 })

t.test('lmdb: the store in store.path, named by its directory, and no limiter', async (t) => {
  const dir = t.testdir()
  const { store, limiter } = await openStore(lmdb(dir))
  t.teardown(() => store.close())
  t.equal(store.backend, 'lmdb')
  t.equal(store.location, dir)
  t.equal(limiter, null)
})

t.test('postgres: openPgStore gets the URL and pool size; its store and limiter are handed back', async (t) => {
  const real = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => real.close())
  const limiter = asyncLimiter(createRateLimiter({ maxKeys: 1000, now: () => 0 }))
  const asked: unknown[] = []
  const { openStore: open } = await t.mockImport<typeof import('../../src/store/open.js')>('../../src/store/open.js', {
    '../../src/store/pg/pg-store.js': {
      openPgStore: async (opts: unknown) => {
        asked.push(opts)
        return { store: real, limiter }
      },
    },
  })
  const opened = await open({ backend: 'postgres', path: '/nowhere', url: 'postgres://authd@db/authd', poolSize: 3 })
  t.match(asked, [{ url: 'postgres://authd@db/authd', poolSize: 3 }])
  t.equal(opened.store, real)
  t.equal(opened.limiter, limiter)
})

t.test('the daemon counts in the limiter openStore gives (PostgreSQL), else in its own', async (t) => {
  const dir = t.testdir()
  const real = await openLmdbStore({ path: dir })
  const mem = asyncLimiter(createRateLimiter({ maxKeys: 1000, now: Date.now }))
  let consumed = 0
  const db: RateLimiter = { ...mem, consume: (entries) => (consumed++, mem.consume(entries)) }
  const { createServices } = await t.mockImport<typeof import('../../src/daemon/services.js')>('../../src/daemon/services.js', {
    '../../src/store/open.js': { openStore: async () => ({ store: real, limiter: db }) },
  })
  const services = await createServices(testConfig(dir), { processMetrics: false })
  t.teardown(() => services.close())
  t.equal(services.limiter, db)
  t.equal(services.memoryLimiter, null, 'no limiter in process')
  await addUser(services, 'ann@example.com', 'correct horse battery')
  await services.auth.admitLogin({ ip: '203.0.113.1', ipKey: '203.0.113.1', userAgent: '' })
  t.equal(consumed, 1, 'a login is counted in the database’s limiter')

  const { createServices: unmocked } = await import('../../src/daemon/services.js')
  const plain = await unmocked(testConfig(t.testdir()), { processMetrics: false })
  t.teardown(() => plain.close())
  t.not(plain.memoryLimiter, null, 'LMDB: the limiter is in process')
  await plain.auth.admitLogin({ ip: '203.0.113.1', ipKey: '203.0.113.1', userAgent: '' })
  t.equal(plain.memoryLimiter!.size(), 1, 'and its size is there to read')
})
