/**
 * Store.changes(): the counter /me polls instead of re-reading the keys, the session and the
 * user. It must move with every write, made by any handle (authctl writes from another process),
 * and with nothing else.
 */
import t from 'tap'
import { generateKey } from '../../src/core/keys.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { Store } from '../../src/store/store.js'
import { nextRequest, session, user } from '../helpers/records.js'

t.test('every kind of write moves the counter, and reads do not', async (t) => {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  const key = generateKey('ES256', 1)
  const next = generateKey('ES256', 2)
  const writes: [string, (s: Store) => Promise<unknown>][] = [
    ['createUser', (s) => s.createUser(user('u1', 'ann@example.com'))],
    ['createUser of a second user', (s) => s.createUser(user('u2', 'bob@example.com'))],
    ['updateUser', (s) => s.updateUser('u1', (u) => ({ ...u, disabled: true }))],
    ['createSession', (s) => s.createSession(session('s1', 'u1'))],
    ['createSession of another', (s) => s.createSession(session('s2', 'u1'))],
    ['createSession of a third', (s) => s.createSession(session('s3', 'u2'))],
    ['refreshSession', (s) => s.refreshSession('h-s1', (found) => ({ action: 'rotate', session: { ...found!, lastUsedAt: 5, refreshHash: 'h-s1b', generation: 1 }, result: true }))],
    ['revokeSession', (s) => s.revokeSession('s1')],
    ['revokeUserSessions', (s) => s.revokeUserSessions('u1')],
    ['revokeAllSessions', (s) => s.revokeAllSessions()],
    ['ensureActiveKey', (s) => s.ensureActiveKey(() => key)],
    ['putKey', (s) => s.putKey({ ...key, publicKeyPem: key.publicKeyPem })],
    ['rotateKey', (s) => s.rotateKey(next, 3)],
    ['deleteKey', (s) => s.deleteKey(key.kid)],
    ['deleteUser', (s) => s.deleteUser('u2')],
  ]
  let last = store.changes()
  for (const [name, write] of writes) {
    await write(store)
    const now = store.changes()
    t.ok(now !== last, `${name} moves it`)
    last = now
    store.getUser('u1')
    store.getSession('s2')
    store.listKeys()
    store.keysVersion()
    t.equal(store.changes(), last, `reads after ${name} leave it`)
  }
})

t.test('a write through another handle shows on the next request, and only a write does', async (t) => {
  const dir = t.testdir()
  const daemon = await openLmdbStore({ path: dir })
  t.teardown(() => daemon.close())
  const admin = await openLmdbStore({ path: dir })
  t.teardown(() => admin.close())
  const before = daemon.changes()
  await nextRequest()
  t.equal(daemon.changes(), before, 'nothing written, nothing moved')
  t.ok(await admin.createUser(user('u1', 'ann@example.com')))
  await nextRequest()
  const after = daemon.changes()
  t.not(after, before, "the other handle's write is seen")
  t.equal(admin.changes(), after, 'both handles read the same counter')
  await admin.updateUser('u1', (u) => ({ ...u, disabled: true }))
  await nextRequest()
  t.not(daemon.changes(), after)
  t.equal(daemon.getUser('u1')?.disabled, true, 'with the write it stands for')
})

t.test('the counter survives a reopen: it never goes back to a value already seen', async (t) => {
  const dir = t.testdir()
  const first = await openLmdbStore({ path: dir })
  await first.createUser(user('u1', 'ann@example.com'))
  await first.createUser(user('u2', 'bob@example.com'))
  const seen = first.changes()
  await first.close()
  const second = await openLmdbStore({ path: dir })
  t.teardown(() => second.close())
  t.equal(second.changes(), seen)
  await second.revokeAllSessions()
  t.ok(second.changes() > seen)
})

t.test('the counter is read once per turn of the event loop, and again after a write of this handle', async (t) => {
  const dir = t.testdir()
  const store = await openLmdbStore({ path: dir })
  t.teardown(() => store.close())
  const { open } = await import('lmdb')
  const raw = open({ path: dir, noSubdir: false, maxDbs: 16, compression: false })
  t.teardown(() => raw.close())
  const meta = raw.openDB({ name: 'meta' })

  // a commit by another process in the middle of a turn: the turn keeps the value it read
  // (lmdb's own read snapshot does the same), the next turn reads the new one
  const first = store.changes()
  meta.putSync('changes', first + 10)
  t.equal(store.changes(), first, 'one turn, one value')
  await nextRequest()
  t.equal(store.changes(), first + 10, 'the next turn reads it again')

  // this handle's own write: the turn that resolves it may have read the counter before the
  // commit (here a callback reads it every turn); the write's caller still sees the new value
  let spinning = true
  const spin = (): void => {
    if (!spinning) return
    store.changes()
    setImmediate(spin)
  }
  spin()
  for (let i = 0; i < 20; i++) {
    const before = store.changes()
    await store.createUser(user(`u${i}`, `user${i}@example.com`))
    t.equal(store.changes(), before + 1, `write ${i} is seen by its caller at once`)
  }
  spinning = false
})
