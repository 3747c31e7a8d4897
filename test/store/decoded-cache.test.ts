/**
 * getUser / getSession decode a record only when its stored bytes changed: these show that a
 * change made through another handle (as authctl does from another process) is read on the next
 * request, that a deleted record reads as gone, and that callers never share an object.
 *
 * "The next request": lmdb keeps a handle's read snapshot until a timer renews it, within a
 * millisecond of the last read, so a commit by another handle shows from the next turn of the
 * event loop after that, which is when the daemon's next request runs (README, "Administer with authctl" asks for one
 * second). Reading again at the very same instant as the commit may still see the old snapshot,
 * whatever the cache does: `nextRequest()` stands for the time between two requests.
 */
import t from 'tap'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { nextRequest, session, user } from '../helpers/records.js'

t.test('reads a change made through another handle on the next request', async (t) => {
  const dir = t.testdir()
  const daemon = await openLmdbStore({ path: dir })
  t.teardown(() => daemon.close())
  const admin = await openLmdbStore({ path: dir })
  t.teardown(() => admin.close())
  t.ok(await admin.createUser(user('u1', 'ann@example.com')))
  await admin.createSession(session('s1', 'u1'))
  for (let i = 0; i < 3; i++) {
    t.equal(daemon.getUser('u1')?.disabled, false)
    t.equal(daemon.getSession('s1')?.userId, 'u1')
  }
  await admin.updateUser('u1', (u) => ({ ...u, disabled: true }))
  await nextRequest()
  t.equal(daemon.getUser('u1')?.disabled, true, 'disabled at once')
  t.equal(daemon.getUserByEmail('ann@example.com')?.disabled, true, 'by email too')
  await admin.updateUser('u1', (u) => ({ ...u, disabled: false }))
  await nextRequest()
  t.equal(daemon.getUser('u1')?.disabled, false, 'enabled again at once')
  t.ok(await admin.revokeSession('s1'))
  await nextRequest()
  t.equal(daemon.getSession('s1'), undefined, 'a revoked session is gone at once')
  await admin.createSession(session('s1', 'u2'))
  await nextRequest()
  t.equal(daemon.getSession('s1')?.userId, 'u2', 'and a new record under the same key is read as it is')
  t.ok(await admin.deleteUser('u1'))
  await nextRequest()
  t.equal(daemon.getUser('u1'), undefined, 'a deleted user is gone at once')
})

t.test('gives every caller its own object', async (t) => {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  t.ok(await store.createUser(user('u1', 'ann@example.com')))
  const a = store.getUser('u1')!
  a.disabled = true
  a.email = 'changed@example.com'
  const b = store.getUser('u1')!
  t.not(a, b)
  t.same(b, user('u1', 'ann@example.com'), 'what is stored, not what a caller did to its copy')
})
