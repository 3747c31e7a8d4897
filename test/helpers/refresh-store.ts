/**
 * Sessions on a real LMDB store as authd makes them, and their refresh decided in the store's
 * write transaction as the refresh endpoint does: shared by the store and session-sweep tests.
 */
import type { Test } from 'tap'
import { decideRefresh, familyHashOf, hashToken, newRefreshToken, type RefreshOutcome, type SessionPolicy } from '../../src/core/sessions.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { SessionRecord, Store } from '../../src/store/store.js'

export const policy: SessionPolicy = { idleTtlMs: 3_600_000, absoluteTtlMs: 86_400_000, reuseGraceMs: 10_000 }
export const T0 = 1_700_000_000_000

/** a store in a temp dir, closed with the test */
export async function openStore(t: Test): Promise<Store> {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  return store
}

/** a session created at `at` */
export async function newSession(store: Store, opts: { userId?: string; id?: string; at?: number } = {}): Promise<{ id: string; token: string }> {
  const { userId = 'u1', id = `s${Math.random().toString(36).slice(2)}`, at = T0 } = opts
  const token = newRefreshToken()
  const s: SessionRecord = {
    id,
    userId,
    createdAt: at,
    lastUsedAt: at,
    expiresAt: at + policy.absoluteTtlMs,
    ip: '127.0.0.1',
    userAgent: 'test',
    refreshHash: hashToken(token),
    previousHash: null,
    rotatedAt: null,
    generation: 0,
    familyHash: familyHashOf(token),
    rotations: [],
    amr: ['pwd'],
  }
  await store.createSession(s)
  return { id, token }
}

export const refresh = (store: Store, token: string, now = T0): Promise<RefreshOutcome> =>
  store.refreshSession(hashToken(token), (s) => decideRefresh(s, { token, hash: hashToken(token) }, { now, policy }), familyHashOf(token))

/** refreshes `token`, which must rotate; the successor */
export async function rotate(store: Store, token: string, now = T0): Promise<string> {
  const out = await refresh(store, token, now)
  if (out.kind !== 'rotated') throw new Error(`expected a rotation, got ${out.kind}`)
  return out.token
}
