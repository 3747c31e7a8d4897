/**
 * The LMDB store under the session use-cases: email uniqueness and refresh rotation decided
 * inside one write transaction (so concurrency cannot break them), revocation removing every
 * token of a session, and what the data file holds.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { decideRefresh, familyHashOf, hashToken } from '../../src/core/sessions.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { UserRecord } from '../../src/store/store.js'
import { newSession, openStore, policy, refresh, rotate, T0 } from '../helpers/refresh-store.js'

function user(id: string, email: string): UserRecord {
  return { id, email, passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA', createdAt: T0, updatedAt: T0, disabled: false }
}

t.test('50 concurrent createUser of one email: exactly one wins', async (t) => {
  const store = await openStore(t)
  const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.createUser(user(`u${i}`, 'race@example.com'))))
  t.equal(results.filter(Boolean).length, 1)
  const winner = results.indexOf(true)
  t.equal((await store.getUserByEmail('race@example.com'))?.id, `u${winner}`, 'the email index names the winner')
  t.same((await store.listUsers()).map((u) => u.id), [`u${winner}`], 'and no loser left a record behind')
})

t.test('concurrent refreshes of one token rotate once; the rest get the same successor', async (t) => {
  const store = await openStore(t)
  const { id, token } = await newSession(store)
  const outs = await Promise.all(Array.from({ length: 20 }, () => refresh(store, token)))
  const kinds = outs.map((o) => o.kind)
  t.equal(kinds.filter((k) => k === 'rotated').length, 1, 'one rotation')
  t.equal(kinds.filter((k) => k === 'grace').length, 19, 'nineteen grace answers')
  const tokens = new Set(outs.map((o) => ('token' in o ? o.token : '')))
  t.equal(tokens.size, 1, 'one successor')
  const [successor] = tokens
  const s = (await store.getSession(id))!
  t.equal(s.generation, 1)
  t.equal(s.refreshHash, hashToken(successor!))
  t.equal(s.previousHash, hashToken(token))
})

t.test('concurrent refreshes past the grace: one rotation, and the rest end the session', async (t) => {
  const store = await openStore(t)
  const { id, token } = await newSession(store)
  const zero = { ...policy, reuseGraceMs: 0 }
  const outs = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      store.refreshSession(hashToken(token), (s) => decideRefresh(s, { token, hash: hashToken(token) }, { now: T0 + i, policy: zero })),
    ),
  )
  const kinds = outs.map((o) => o.kind)
  t.equal(kinds.filter((k) => k === 'rotated').length, 1, 'never two rotations')
  t.ok(kinds.includes('reuse'))
  t.equal(await store.getSession(id), undefined, 'the session ended')
})

t.test('a reuse removes the session and every refresh token it ever had', async (t) => {
  const store = await openStore(t)
  await store.createUser(user('u1', 'a@example.com'))
  const { id, token: rt0 } = await newSession(store)
  const other = await newSession(store)
  const rt1 = await rotate(store, rt0)
  const rt2 = await rotate(store, rt1)
  const rt3 = await rotate(store, rt2)
  for (const tok of [rt0, rt1, rt2, rt3]) t.equal(await store.findSessionIdByRefreshHash(hashToken(tok)), id)

  const out = await refresh(store, rt0, T0 + 60_000)
  t.equal(out.kind, 'reuse')
  t.equal(await store.getSession(id), undefined)
  for (const tok of [rt0, rt1, rt2, rt3]) {
    t.equal(await store.findSessionIdByRefreshHash(hashToken(tok)), undefined, 'no hash of the session is left')
    t.equal((await refresh(store, tok)).kind, 'unknown')
  }
  t.same((await store.listSessions('u1')).map((s) => s.id), [other.id], 'the index holds only the other session')
  t.equal(await store.countSessions('u1'), 1)
})

t.test('reuse is detected for every token a session ever had, through its family', async (t) => {
  const store = await openStore(t)
  const { id, token } = await newSession(store)
  const chain = [token]
  for (let i = 0; i < 40; i++) chain.push(await rotate(store, chain[chain.length - 1]!, T0 + i))
  t.equal((await store.getSession(id))!.generation, 40)
  t.equal(await store.findSessionIdByRefreshHash(hashToken(chain[0]!)), undefined, 'the token itself is no longer indexed')
  t.equal(await store.findSessionIdByRefreshHash(hashToken(chain[0]!), familyHashOf(chain[0]!)), id, 'its family is')
  const other = await newSession(store)
  t.equal((await refresh(store, chain[0]!, T0 + 60_000)).kind, 'reuse', 'the login token, 40 rotations on')
  t.equal(await store.getSession(id), undefined)
  t.equal(await store.findSessionIdByRefreshHash(hashToken(chain[40]!), familyHashOf(chain[40]!)), undefined, 'the family went with the session')
  t.equal((await refresh(store, chain[40]!, T0 + 60_000)).kind, 'unknown')
  t.ok(await store.getSession(other.id), 'another session untouched')
})

t.test('revokeSession and revokeUserSessions remove the sessions and their token entries', async (t) => {
  const store = await openStore(t)
  const a = await newSession(store, { userId: 'u1' })
  const b = await newSession(store, { userId: 'u1' })
  const c = await newSession(store, { userId: 'u2' })
  const a1 = await rotate(store, a.token)
  t.equal(await store.revokeSession(a.id), true)
  t.equal(await store.revokeSession(a.id), false, 'twice is harmless')
  for (const tok of [a.token, a1]) t.equal(await store.findSessionIdByRefreshHash(hashToken(tok)), undefined)
  t.equal(await store.revokeUserSessions('u1'), 1)
  t.equal(await store.findSessionIdByRefreshHash(hashToken(b.token)), undefined)
  t.equal(await store.countSessions('u1'), 0)
  t.equal(await store.findSessionIdByRefreshHash(hashToken(c.token)), c.id, "another user's session stays")
})

t.test('the data file never holds a refresh token, and a stored hash does not work as one', async (t) => {
  const dir = t.testdir()
  const store = await openLmdbStore({ path: dir })
  t.teardown(() => store.close())
  const { token: rt0 } = await newSession(store)
  const rt1 = await rotate(store, rt0)
  const rt2 = await rotate(store, rt1)
  await store.flushed()
  const file = readFileSync(join(dir, 'data.mdb'))
  for (const tok of [rt0, rt1, rt2]) {
    t.equal(file.indexOf(tok), -1, 'not as text')
    t.equal(file.indexOf(Buffer.from(tok, 'base64url')), -1, 'not as bytes')
  }
  t.not(file.indexOf(hashToken(rt2)), -1, 'the hash is there (the search works)')
  t.equal((await refresh(store, hashToken(rt2))).kind, 'unknown', 'presenting the stored hash gets nowhere')
})
