/**
 * Store.updateUserEndingSessions: a password change's one write. The user's record changes and
 * every other session of theirs ends, with its token entries, in the same transaction; a change
 * that throws leaves everything as it was.
 */
import t from 'tap'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { session, user } from '../helpers/records.js'

t.test("changes the user and ends every session of theirs but the one kept, and no one else's", async (t) => {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  await store.createUser(user('u1', 'ann@example.com'))
  await store.createUser(user('u2', 'bob@example.com'))
  for (const id of ['s1', 's2', 's3']) await store.createSession(session(id, 'u1'))
  await store.createSession(session('b1', 'u2'))
  const before = (await store.meRead([], NaN, new Set())).version
  const r = await store.updateUserEndingSessions('u1', (u) => ({ ...u, passwordHash: '$argon2id$v=19$m=8,t=1,p=1$c2FsdA$aGFzaA', updatedAt: 9 }), 's2')
  t.equal(r?.ended, 2)
  t.equal(r?.user.passwordHash, '$argon2id$v=19$m=8,t=1,p=1$c2FsdA$aGFzaA')
  t.equal((await store.getUser('u1'))?.updatedAt, 9)
  t.same((await store.listSessions('u1')).map((s) => s.id), ['s2'])
  t.same((await store.sessionEntries({ userId: 'u1', limit: 10 })).map((e) => e.id), ['s2'], 'the index follows')
  t.equal(await store.findSessionIdByRefreshHash('h-s1'), undefined, "an ended session's token entry is gone")
  t.equal(await store.findSessionIdByRefreshHash('h-s2'), 's2')
  t.same((await store.listSessions('u2')).map((s) => s.id), ['b1'])
  t.not((await store.meRead([], NaN, new Set())).version, before, "the version /me relies on moved")
  t.equal(await store.updateUserEndingSessions('nobody', (u) => u, 's2'), undefined, 'an unknown user')
})

t.test('a change that throws (the password changed meanwhile) writes nothing and ends no session', async (t) => {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  await store.createUser(user('u1', 'ann@example.com'))
  for (const id of ['s1', 's2']) await store.createSession(session(id, 'u1'))
  const stored = await store.getUser('u1')
  await t.rejects(
    store.updateUserEndingSessions('u1', () => {
      throw new Error('changed meanwhile')
    }, 's1'),
    { message: 'changed meanwhile' },
  )
  t.same(await store.getUser('u1'), stored)
  t.same((await store.listSessions('u1')).map((s) => s.id).sort(), ['s1', 's2'], 'no session ended')
})
