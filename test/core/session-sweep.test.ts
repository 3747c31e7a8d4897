/**
 * The periodic session sweep on a real store: sessions past their idle or absolute expiry are
 * deleted with their token entries, and live sessions lose the sealed successors whose reuse
 * grace has run out (a copy of the store and a used token must not lead to the live token).
 */
import t from 'tap'
import { familyHashOf, hashToken, isLive, openSuccessor, sweepExpiredSessions, withoutStaleSeals } from '../../src/core/sessions.js'
import type { Store } from '../../src/store/store.js'
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
  t.same((await store.listSessions()).map((s) => s.id), ['live'])
  for (const token of [idle, old]) t.equal(await store.findSessionIdByRefreshHash(hashToken(token), familyHashOf(token)), undefined, 'no entry left')
  t.equal(await store.findSessionIdByRefreshHash(hashToken(live), familyHashOf(live)), 'live')
})

t.test('sealed successors are dropped once their grace has run out, and only then', async (t) => {
  const store = await openStore(t)
  const rt0 = await newSession(store, 's')
  const rt1 = await rotate(store, rt0, T0)
  const rt2 = await rotate(store, rt1, T0 + 4_000)
  t.equal((await store.getSession('s'))!.rotations!.length, 2)

  // inside rt1's grace: rt0's seal is stale, rt1's is not
  const early = T0 + policy.reuseGraceMs + 1
  t.equal(await sweepExpiredSessions(store, early, policy), 0)
  const kept = (await store.getSession('s'))!.rotations!
  t.equal(kept.length, 1, "rt0's seal is gone")
  t.equal(openSuccessor(rt1, kept[0]!.sealed), rt2, "the one left is rt1's rotation")
  t.match(await refresh(store, rt1, early), { kind: 'grace', token: rt2 }, "rt1's grace still works")

  const late = T0 + 4_000 + policy.reuseGraceMs + 1
  await sweepExpiredSessions(store, late, policy)
  const s = (await store.getSession('s'))!
  t.same(s.rotations, [], 'no seal left')
  t.notOk(JSON.stringify(s).includes('sealed'), 'nothing sealed in the record')
  t.equal(s.refreshHash, hashToken(rt2), 'the live token is untouched')
  t.equal((await refresh(store, rt2, late)).kind, 'rotated')
})

t.test('withoutStaleSeals: nothing to drop is undefined; a seal past its grace is dropped', async (t) => {
  const store = await openStore(t)
  const rt0 = await newSession(store, 's')
  const fresh = (await store.getSession('s'))!
  t.equal(withoutStaleSeals(fresh, T0, policy), undefined, 'no rotation yet')
  const rt1 = await rotate(store, rt0, T0)
  const rotated = (await store.getSession('s'))!
  t.equal(withoutStaleSeals(rotated, T0 + policy.reuseGraceMs, policy), undefined, 'at the edge of the grace')
  t.equal(openSuccessor(rt0, rotated.rotations![0]!.sealed), rt1)
  const dropped = withoutStaleSeals(rotated, T0 + policy.reuseGraceMs + 1, policy)!
  t.same(dropped.rotations, [], 'past its grace the seal is dropped')
})

t.test('the sweep decides again inside the write: a rotation since it read the list is kept', async (t) => {
  const store = await openStore(t)
  const rt0 = await newSession(store, 's')
  const rt1 = await rotate(store, rt0, T0)
  const now = T0 + policy.reuseGraceMs + 1
  // a store whose list is read before a rotation that lands before the sweep's write
  const racing: Store = Object.create(store) as Store
  let rt2 = ''
  racing.sweepSessions = async (ids, change) => {
    rt2 = await rotate(store, rt1, now)
    return store.sweepSessions(ids, change)
  }
  await sweepExpiredSessions(racing, now, policy)
  const s = (await store.getSession('s'))!
  t.equal(s.rotations!.length, 1)
  t.equal(openSuccessor(rt1, s.rotations![0]!.sealed), rt2, "the new rotation's seal stays: it is inside its grace")
  t.match(await refresh(store, rt1, now + 1), { kind: 'grace', token: rt2 })
})

t.test('a session used between the read and the write of its chunk is not deleted', async (t) => {
  const store = await openStore(t)
  await newSession(store, 's')
  const now = T0 + policy.idleTtlMs
  const racing: Store = Object.create(store) as Store
  racing.sweepSessions = async (ids, change) => {
    await store.updateSession('s', (s) => ({ ...s, lastUsedAt: now - 1 }))
    return store.sweepSessions(ids, change)
  }
  t.equal(await sweepExpiredSessions(racing, now, policy), 0)
  t.ok(await store.getSession('s'), 'it lives')
})

/** `n` sessions of `users` users straight into the store, the first `expired` of them long expired */
async function seed(store: Store, n: number, expired: number, users = 7): Promise<void> {
  const writes: Promise<unknown>[] = []
  for (let i = 0; i < n; i++) {
    const at = i < expired ? T0 - policy.absoluteTtlMs - i : T0 + i
    writes.push(stored(store, { id: `s${String(i).padStart(5, '0')}`, userId: `u${i % users}`, at }))
  }
  await Promise.all(writes)
}

t.test('the sweep of a big store works in bounded chunks, letting the event loop turn between them', async (t) => {
  const store = await openStore(t)
  await seed(store, 3000, 2500)
  const now = T0 + 3000
  // every record the sweep reads or writes, counted per stretch between two turns of the loop
  const counting: Store = Object.create(store) as Store
  let stretch = 0
  let longest = 0
  const touched = (k: number): void => {
    stretch += k
    longest = Math.max(longest, stretch)
  }
  counting.listSessions = async (u) => { const r = await store.listSessions(u); touched(r.length); return r } // prettier-ignore
  counting.sessionEntries = async (o) => { const r = await store.sessionEntries(o); touched(r.length); return r } // prettier-ignore
  counting.getSession = (id) => { touched(1); return store.getSession(id) } // prettier-ignore
  counting.sweepSessions = (ids, change) => { touched(ids.length); return store.sweepSessions(ids, change) } // prettier-ignore
  let turns = 0
  let sweeping = true
  const turn = (): void => {
    turns++
    stretch = 0
    if (sweeping) setImmediate(turn)
  }
  setImmediate(turn)
  const deleted = await sweepExpiredSessions(counting, now, policy, { chunk: 200 })
  sweeping = false
  t.equal(deleted, 2500)
  t.equal((await store.sessionEntries({ limit: 10_000 })).length, 500, 'the live ones stay')
  t.ok((await store.sessionEntries({ limit: 10_000 })).every((e) => isLive(e, now, policy)))
  t.ok(longest <= 2 * 200, `no stretch between two turns of the loop touched more than two chunks (longest: ${longest})`)
  t.ok(turns >= 3000 / 200 - 1, `the loop turned between the chunks (${turns} turns)`)
})

t.test('a chunk boundary loses nothing: every expired session goes, whatever the chunk size', async (t) => {
  for (const chunk of [1, 7, 100, 1000]) {
    const store = await openStore(t)
    await seed(store, 120, 60, 3)
    t.equal(await sweepExpiredSessions(store, T0 + 200, policy, { chunk }), 60, `chunk ${chunk}`)
    t.equal((await store.sessionEntries({ limit: 1000 })).length, 60)
  }
})

t.test('a user beyond max_per_user (a store from before it) is trimmed by the sweep, oldest last use first, in chunks', async (t) => {
  const store = await openStore(t)
  // u0: 1000 live sessions; u1 and u2: 10 each
  await Promise.all(Array.from({ length: 1000 }, (_, i) => stored(store, { id: `a${String(i).padStart(4, '0')}`, userId: 'u0', at: T0 + i })))
  for (const u of ['u1', 'u2']) await Promise.all(Array.from({ length: 10 }, (_, i) => stored(store, { id: `${u}-${i}`, userId: u, at: T0 + i })))
  let pauses = 0
  const deleted = await sweepExpiredSessions(store, T0 + 2000, { ...policy, maxPerUser: 50 }, { chunk: 100, pause: async () => void pauses++ })
  t.equal(deleted, 950)
  t.same((await store.listSessions('u0')).map((s) => s.id).sort(), Array.from({ length: 50 }, (_, i) => `a0${950 + i}`), 'the 50 most recently used stay')
  t.equal(await store.countSessions('u1'), 10)
  t.equal(await store.countSessions('u2'), 10)
  t.ok(pauses >= 950 / 100, `in chunks (${pauses} pauses)`)
  t.equal(await sweepExpiredSessions(store, T0 + 2000, { ...policy, maxPerUser: 50 }), 0, 'nothing more to do')
})

t.test('the last user the sweep walks is trimmed too: a store of one user, and a user beyond the bound whose id sorts last', async (t) => {
  const policy5 = { ...policy, maxPerUser: 5 }
  const alone = await openStore(t)
  await Promise.all(Array.from({ length: 8 }, (_, i) => stored(alone, { id: `s${i}`, userId: 'only', at: T0 + i })))
  t.equal(await sweepExpiredSessions(alone, T0 + 100, policy5), 3, 'the one user of the store')
  t.same((await alone.listSessions('only')).map((s) => s.id).sort(), ['s3', 's4', 's5', 's6', 's7'], 'its five most recently used stay')

  const store = await openStore(t)
  for (const u of ['a-user', 'b-user']) await Promise.all(Array.from({ length: 3 }, (_, i) => stored(store, { id: `${u}-${i}`, userId: u, at: T0 + i })))
  await Promise.all(Array.from({ length: 7 }, (_, i) => stored(store, { id: `z${i}`, userId: 'z-user', at: T0 + i })))
  t.equal(await sweepExpiredSessions(store, T0 + 100, policy5, { chunk: 4 }), 2, 'the last user walked, over chunk boundaries')
  t.same((await store.listSessions('z-user')).map((s) => s.id).sort(), ['z2', 'z3', 'z4', 'z5', 'z6'])
  t.equal(await store.countSessions('a-user'), 3)
})
