/** The store conformance suite (conformance.ts) on LMDB: each store in its own temp directory. */
import { join } from 'node:path'
import t from 'tap'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { storeConformance } from './conformance.js'

const base = t.testdir()
let n = 0
await storeConformance(t, () => openLmdbStore({ path: join(base, `store-${++n}`) }))
