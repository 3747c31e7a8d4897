/**
 * Opens the store the config names: LMDB in `store.path`, or PostgreSQL at `store.url` with the
 * rate limiter that counts in the same database (every instance on it counts on the same
 * windows). Nothing above src/store/ knows which backend it got; the PostgreSQL client is loaded
 * only when it is the one asked for (and LMDB's likewise).
 */
import type { StoreConfig } from '../config/types.js'
import type { RateLimiter } from './rate-limit.js'
import type { Store } from './store.js'

export interface OpenStoreOptions {
  /** where the PostgreSQL store says what it had to work around (a lost connection, a slow query) */
  log?: { warn(obj: object, msg: string): void }
}

export interface OpenedStore {
  store: Store
  /** the database's limiter (PostgreSQL); null where the daemon keeps its own in process (LMDB) */
  limiter: RateLimiter | null
}

export async function openStore(cfg: StoreConfig, opts: OpenStoreOptions = {}): Promise<OpenedStore> {
  if (cfg.backend === 'postgres') {
    const { openPgStore } = await import('./pg/pg-store.js')
    const { store, limiter } = await openPgStore({ url: cfg.url, poolSize: cfg.poolSize, log: opts.log })
    return { store, limiter }
  }
  const { openLmdbStore } = await import('./lmdb-store.js')
  return { store: await openLmdbStore({ path: cfg.path }), limiter: null }
}
