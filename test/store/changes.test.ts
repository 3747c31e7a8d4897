/**
 * The version meRead answers: /me keeps what it read while the version stays, so it must move
 * with every write that could change a session, a user or a key, made by any handle (authctl
 * writes from another process); reads leave it, and so do writes no /me depends on (an audit
 * event of a failed login, a limit clear), or a storm of failed logins would empty /me's cache.
 */
import t from 'tap'
import { generateKey } from '../../src/core/keys.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { AuditDraft, Store } from '../../src/store/store.js'
import { nextRequest, session, user } from '../helpers/records.js'

const version = async (s: Store): Promise<number> => (await s.meRead([], NaN, new Set())).version
const failure: AuditDraft = { at: 1, event: 'login.failure', actor: 'api', userId: null, email: 'x@example.com', sessionId: null, ip: '203.0.113.7', userAgent: null, detail: { reason: 'unknown_user' } }

t.test('every kind of write moves the version, and reads do not', async (t) => {
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
    ['updateSession', (s) => s.updateSession('s2', (found) => ({ ...found, lastUsedAt: 6 }))],
    ['sweepSessions', (s) => s.sweepSessions(['s2'], () => 'delete')],
    ['finishMfaStep', (s) => s.finishMfaStep({ id: 'm1', expiresAt: 10 }, 'u1', 1, (u) => ({ action: 'use', user: u!, result: 0 }))],
    ['updateUserEndingSessions', (s) => s.updateUserEndingSessions('u1', (u) => u, 's1')],
    ['revokeSession', (s) => s.revokeSession('s1')],
    ['revokeUserSessions', (s) => s.revokeUserSessions('u2')],
    ['createSession again', (s) => s.createSession(session('s4', 'u1'))],
    ['revokeAllSessions', (s) => s.revokeAllSessions()],
    ['ensureActiveKey', (s) => s.ensureActiveKey(() => key)],
    ['putKey', (s) => s.putKey({ ...key, publicKeyPem: key.publicKeyPem })],
    ['rotateKey', (s) => s.rotateKey(next, 3)],
    ['deleteKey', (s) => s.deleteKey(key.kid)],
    ['deleteUser', (s) => s.deleteUser('u2')],
  ]
  let last = await version(store)
  for (const [name, write] of writes) {
    await write(store)
    const now = await version(store)
    t.ok(now !== last, `${name} moves it`)
    last = now
    await store.getUser('u1')
    await store.getSession('s2')
    await store.listKeys()
    await store.keysVersion()
    await store.meRead(['s1', 's2'], last, new Set())
    t.equal(await version(store), last, `reads after ${name} leave it`)
  }
})

t.test('writes no /me depends on leave the version: audit events alone, limit clears, secrets, the audit sweep', async (t) => {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  await store.createUser(user('u1', 'ann@example.com'))
  const before = await version(store)
  for (let i = 0; i < 5; i++) await store.appendAudit([failure])
  await store.refreshSession('unknown', () => ({ action: 'none', result: 0, audit: [failure] }))
  await store.finishMfaStep({ id: 'm1', expiresAt: 10 }, 'u1', 1, () => ({ action: 'none', result: 0, audit: [failure] }))
  await store.addLimitClear({ email: 'ann@example.com' }, 1, [failure])
  await store.ensureDeviceKey(() => 'device')
  await store.ensureMfaKey(() => 'mfa')
  await store.sweepAudit(2)
  t.equal(await version(store), before)
  t.equal((await store.auditEvents({ limit: 100 })).length, 0, 'the events were written (and swept)')
})

t.test('writes that change nothing leave the version', async (t) => {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  await store.createUser(user('u1', 'ann@example.com'))
  const before = await version(store)
  await store.createUser(user('u2', 'ann@example.com'))
  await store.updateUser('nobody', (u) => u)
  await store.revokeSession('nope')
  await store.revokeUserSessions('u1')
  await store.deleteKey('nope')
  await store.updateSession('nope', (s) => s)
  t.equal(await version(store), before)
})

t.test('a write through another handle shows on the next request, and only a write does', async (t) => {
  const dir = t.testdir()
  const daemon = await openLmdbStore({ path: dir })
  t.teardown(() => daemon.close())
  const admin = await openLmdbStore({ path: dir })
  t.teardown(() => admin.close())
  const before = await version(daemon)
  await nextRequest()
  t.equal(await version(daemon), before, 'nothing written, nothing moved')
  t.ok(await admin.createUser(user('u1', 'ann@example.com')))
  await nextRequest()
  const after = await version(daemon)
  t.not(after, before, "the other handle's write is seen")
  t.equal(await version(admin), after, 'both handles read the same version')
  await admin.updateUser('u1', (u) => ({ ...u, disabled: true }))
  await nextRequest()
  t.not(await version(daemon), after)
  t.equal((await daemon.getUser('u1'))?.disabled, true, 'with the write it stands for')
})

t.test('the version survives a reopen: it never goes back to a value already seen', async (t) => {
  const dir = t.testdir()
  const first = await openLmdbStore({ path: dir })
  await first.createUser(user('u1', 'ann@example.com'))
  await first.createUser(user('u2', 'bob@example.com'))
  const seen = await version(first)
  await first.close()
  const second = await openLmdbStore({ path: dir })
  t.teardown(() => second.close())
  t.equal(await version(second), seen)
  await second.deleteUser('u2')
  t.ok((await version(second)) > seen)
})

t.test("a write of this handle is in the very next meRead of its caller, however busy the loop", async (t) => {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  await store.createUser(user('u0', 'zero@example.com'))
  await store.createSession(session('s0', 'u0'))
  // a /me on every turn, as under load
  let spinning = true
  const spin = (): void => {
    if (!spinning) return
    void store.meRead(['s0'], NaN, new Set())
    setImmediate(spin)
  }
  spin()
  for (let i = 0; i < 20; i++) {
    const before = await store.meRead(['s0'], NaN, new Set())
    await store.updateUser('u0', (u) => ({ ...u, disabled: i % 2 === 0 }))
    const after = await store.meRead(['s0'], before.version, new Set(['s0']))
    t.not(after.version, before.version, `write ${i} moves the version at once`)
    t.equal(after.records.get('s0')?.user?.disabled, i % 2 === 0, `and its record is read again`)
  }
  spinning = false
})
