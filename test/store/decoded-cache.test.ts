/**
 * meRead decodes a session or a user only when its stored bytes changed: these show that a change
 * made through another handle (as authctl does from another process) is read on the next request,
 * that a deleted record reads as gone, and that what callers get cannot change what others read.
 *
 * "The next request": lmdb keeps a handle's read snapshot until a timer renews it, within a
 * millisecond of the last read, so a commit by another handle shows from the next turn of the
 * event loop after that, which is when the daemon's next request runs (README, "Administer with
 * authctl" asks for one second). Reading again at the very same instant as the commit may still
 * see the old snapshot, whatever the cache does: `nextRequest()` stands for the time between two
 * requests.
 */
import t from 'tap'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { MeRecord, Store } from '../../src/store/store.js'
import { nextRequest, session, user } from '../helpers/records.js'

// every record read, as /me reads them after any write anywhere
const me = async (store: Store, sid: string): Promise<MeRecord | undefined> => (await store.meRead([sid], NaN, new Set())).records.get(sid)

t.test('reads a change made through another handle on the next request', async (t) => {
  const dir = t.testdir()
  const daemon = await openLmdbStore({ path: dir })
  t.teardown(() => daemon.close())
  const admin = await openLmdbStore({ path: dir })
  t.teardown(() => admin.close())
  t.ok(await admin.createUser(user('u1', 'ann@example.com')))
  await admin.createSession(session('s1', 'u1'))
  await nextRequest()
  for (let i = 0; i < 3; i++) {
    const r = await me(daemon, 's1')
    t.equal(r?.user?.disabled, false)
    t.equal(r?.userId, 'u1')
  }
  await admin.updateUser('u1', (u) => ({ ...u, disabled: true }))
  await nextRequest()
  t.equal((await me(daemon, 's1'))?.user?.disabled, true, 'disabled at once')
  await admin.updateUser('u1', (u) => ({ ...u, disabled: false }))
  await nextRequest()
  t.equal((await me(daemon, 's1'))?.user?.disabled, false, 'enabled again at once')
  await admin.updateUser('u1', (u) => ({ ...u, mfa: { secret: 'S', enabledAt: 1, lastStep: 0, recoveryCodes: [] } }))
  await nextRequest()
  t.equal((await me(daemon, 's1'))?.user?.mfaEnabled, true, 'a second factor turned on')
  await admin.updateSession('s1', (s) => ({ ...s, lastUsedAt: 7 }))
  await nextRequest()
  t.equal((await me(daemon, 's1'))?.lastUsedAt, 7, 'a session used elsewhere')
  t.ok(await admin.revokeSession('s1'))
  await nextRequest()
  t.equal(await me(daemon, 's1'), undefined, 'a revoked session is gone at once')
  await admin.createSession(session('s1', 'u2'))
  await nextRequest()
  t.same(await me(daemon, 's1'), { userId: 'u2', expiresAt: 10, lastUsedAt: 1, user: undefined }, 'and a new record under the same key is read as it is')
  await admin.createSession(session('s2', 'u1'))
  t.ok(await admin.deleteUser('u1'))
  await nextRequest()
  t.equal(await me(daemon, 's2'), undefined, 'a deleted user takes its sessions')
})

t.test('what a caller gets cannot change what the next one reads', async (t) => {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  t.ok(await store.createUser(user('u1', 'ann@example.com')))
  await store.createSession(session('s1', 'u1'))
  const a = (await me(store, 's1'))!
  t.throws(() => {
    ;(a.user as { disabled: boolean }).disabled = true
  }, TypeError)
  a.userId = 'changed'
  const b = (await me(store, 's1'))!
  t.not(a, b)
  t.same(b, { userId: 'u1', expiresAt: 10, lastUsedAt: 1, user: { id: 'u1', email: 'ann@example.com', disabled: false, mfaEnabled: false } }, 'what is stored')
  const u = (await store.getUser('u1'))!
  u.disabled = true
  t.equal((await store.getUser('u1'))?.disabled, false, 'getUser gives a record of its own')
})
