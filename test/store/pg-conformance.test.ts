/** The store conformance suite (conformance.ts) on PostgreSQL: each store on a database of its own. */
import t from 'tap'
import { openPgStore } from '../../src/store/pg/pg-store.js'
import { pgDatabase } from '../helpers/pg.js'
import { storeConformance } from './conformance.js'

await storeConformance(t, async () => {
  const db = await pgDatabase(t)
  if (db === null) throw new Error('no PostgreSQL')
  // the store with its own limiter, in the same database
  return openPgStore({ url: db.url, poolSize: 4 })
})
