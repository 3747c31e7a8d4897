/** The store conformance suite (conformance.ts) on LMDB: each store in its own temp directory. */
import { join } from 'node:path'
import t from 'tap'
import { asyncLimiter, createRateLimiter } from '../../src/core/rate-limiter.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { storeConformance } from './conformance.js'

const base = t.testdir()
let n = 0
await storeConformance(t, async () => ({
  store: await openLmdbStore({ path: join(base, `store-${++n}`) }),
  // the daemon's limiter on LMDB: in process
  limiter: asyncLimiter(createRateLimiter({ maxKeys: 1000, now: () => performance.now() })),
}))
