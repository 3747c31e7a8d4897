/**
 * Case 7 on PostgreSQL — refresh races with store.backend = "postgres", over two daemons on one
 * database (refresh-races.mjs): a logout on one and a refresh of the same token on the other at
 * the same instant, and 20 refreshes of one token spread over both. Never two live successors;
 * nothing of a session works on either daemon after its logout was answered 200.
 */
import * as races from './refresh-races.mjs'
import { onPostgres } from '../lib/pg.mjs'

export const id = 'races-pg'
export const title = 'Refresh races on PostgreSQL (two daemons)'

export const run = (ctx) => onPostgres(ctx.say, (store) => races.run({ ...ctx, store }))
