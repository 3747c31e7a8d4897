/**
 * Case 6 on PostgreSQL — crash durability with store.backend = "postgres": the crash case
 * (crash.mjs) against a durable throwaway database (lib/pg.mjs). kill -9 of authd under load; after
 * each, the database is read directly (every record whole and indexed, every acknowledged write
 * present), then a new daemon serves the same sessions and refuses the logged-out ones.
 */
import * as crash from './crash.mjs'
import { onPostgres } from '../lib/pg.mjs'

export const id = 'crash-pg'
export const title = 'Crash durability on PostgreSQL'

export const run = (ctx) => onPostgres(ctx.say, (store) => crash.run({ ...ctx, store }))
