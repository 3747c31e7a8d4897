/**
 * Case 3 on PostgreSQL — the rate limiter with store.backend = "postgres" (limiter.mjs), whose
 * counters are in the database: exactly five hashes for 50 concurrent wrong logins spread over two
 * daemons, a bound on the verifications per account across both, a 429 that costs no hash while
 * the box hashes flat out, distributed stuffing in metrics and logs, and a flood of distinct keys
 * that leaves the daemon's memory alone and refuses nobody.
 */
import * as limiter from './limiter.mjs'
import { onPostgres } from '../lib/pg.mjs'

export const id = 'limiter-pg'
export const title = 'Rate limiter on PostgreSQL'

export const run = (ctx) => onPostgres(ctx.say, (store) => limiter.run({ ...ctx, store }))
