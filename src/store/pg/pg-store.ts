/**
 * PLACEHOLDER (helper A): the PostgreSQL store is written by another change, which replaces this
 * file whole. Until then opening one loads the client (so a missing install says so) and fails
 * with a sentence.
 */
import type { RateLimiter } from '../../core/rate-limiter.js'
import { StoreError, type Store, type StoreErrorCode } from '../store.js'

export interface PgStoreOptions {
  url: string
  poolSize: number
  queryTimeoutMs?: number
  log?: { warn(obj: object, msg: string): void }
}

export async function openPgStore(_opts: PgStoreOptions): Promise<{ store: Store; limiter: RateLimiter }> {
  await import('pg')
  throw new StoreError('NOT_BUILT' as StoreErrorCode, 'this build of authd has no PostgreSQL store yet (store.backend = "postgres")')
}
