/**
 * The periodic session sweep on a real store: sessions past their idle or absolute expiry are
 * deleted with their token entries, and live sessions lose the sealed successors whose reuse
 * grace has run out (a copy of the store and a used token must not lead to the live token).
 */
import t from 'tap'
import { familyHashOf, hashToken, openSuccessor, sweepExpiredSessions, withoutStaleSeals } from '../../src/core/sessions.js'
import type { SessionRecord, Store } from '../../src/store/store.js'
import { newSession as stored, openStore, policy, refresh, rotate, T0 } from '../helpers/refresh-store.js'

const newSession = async (store: Store, id: string, at = T0): Promise<string> => (await stored(store, { id, at })).token

t.test('expired sessions go, with every token entry; live ones stay', async (t) => {
  const store = await openStore(t)
  const idle = await newSession(store, 'idle')
  const old = await newSession(store, 'old', T0 - policy.absoluteTtlMs + 60_000)
  const live = await newSession(store, 'live')
  const now = T0 + policy.idleTtlMs // 'idle' unused for exactly idle_ttl; 'old' a minute past its absolute expiry
  await store.updateSession('old', (s) => ({ ...s, lastUsedAt: now - 1 }))
  await store.updateSession('live', (s) => ({ ...s, lastUsedAt: now - 1 }))
  t.equal(await sweepExpiredSessions(store, now, policy), 2)
  t.same(store.listSessions().map((s) => s.id), ['live'])
  for (const token of [idle, old]) t.equal(store.findSessionIdByRefreshHash(hashToken(token), familyHashOf(token)), undefined, 'no entry left')
  t.equal(store.findSessionIdByRefreshHash(hashToken(live), familyHashOf(live)), 'live')
})

t.test('sealed successors are dropped once their grace has run out, and only then', async (t) => {
  const store = await openStore(t)
  const rt0 = await newSession(store, 's')
  const rt1 = await rotate(store, rt0, T0)
  const rt2 = await rotate(store, rt1, T0 + 4_000)
  t.equal(store.getSession('s')!.rotations!.length, 2)

  // inside rt1's grace: rt0's seal is stale, rt1's is not
  const early = T0 + policy.reuseGraceMs + 1
  t.equal(await sweepExpiredSessions(store, early, policy), 0)
  t.same(store.getSession('s')!.rotations!.map((r) => r.hash), [hashToken(rt1)], "rt0's seal is gone")
  t.match(await refresh(store, rt1, early), { kind: 'grace', token: rt2 }, "rt1's grace still works")

  const late = T0 + 4_000 + policy.reuseGraceMs + 1
  await sweepExpiredSessions(store, late, policy)
  const s = store.getSession('s')!
  t.same(s.rotations, [], 'no seal left')
  t.notOk(JSON.stringify(s).includes('sealed'), 'nothing sealed in the record')
  t.equal(s.refreshHash, hashToken(rt2), 'the live token is untouched')
  t.equal((await refresh(store, rt2, late)).kind, 'rotated')
})

t.test('withoutStaleSeals: nothing to drop is undefined; an older version\'s seal is dropped too', async (t) => {
  const store = await openStore(t)
  const rt0 = await newSession(store, 's')
  const fresh = store.getSession('s')!
  t.equal(withoutStaleSeals(fresh, T0, policy), undefined, 'no rotation yet')
  const rt1 = await rotate(store, rt0, T0)
  const rotated = store.getSession('s')!
  t.equal(withoutStaleSeals(rotated, T0 + policy.reuseGraceMs, policy), undefined, 'at the edge of the grace')
  const legacy: SessionRecord = { ...rotated, rotations: undefined, sealedSuccessor: rotated.rotations![0]!.sealed, rotatedAt: T0 }
  t.equal(openSuccessor(rt0, legacy.sealedSuccessor!), rt1)
  const dropped = withoutStaleSeals(legacy, T0 + policy.reuseGraceMs + 1, policy)!
  t.equal(dropped.sealedSuccessor, undefined)
  t.same(dropped.rotations, [])
  const kept = withoutStaleSeals(legacy, T0 + 1, policy)!
  t.same(kept.rotations, [{ hash: hashToken(rt0), at: T0, sealed: legacy.sealedSuccessor }], 'a fresh one is moved to rotations, not lost')
})

t.test('the sweep decides again inside the write: a rotation since it read the list is kept', async (t) => {
  const store = await openStore(t)
  const rt0 = await newSession(store, 's')
  const rt1 = await rotate(store, rt0, T0)
  const now = T0 + policy.reuseGraceMs + 1
  // a store whose list is read before a rotation that lands before the sweep's write
  const racing: Store = Object.create(store) as Store
  let rt2 = ''
  racing.updateSession = async (id, change) => {
    rt2 = await rotate(store, rt1, now)
    return store.updateSession(id, change)
  }
  await sweepExpiredSessions(racing, now, policy)
  const s = store.getSession('s')!
  t.same(s.rotations!.map((r) => r.hash), [hashToken(rt1)], "the new rotation's seal stays: it is inside its grace")
  t.match(await refresh(store, rt1, now + 1), { kind: 'grace', token: rt2 })
})
