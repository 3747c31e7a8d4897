/**
 * What is LMDB's own in store/lmdb-store.ts, beyond the conformance suite both backends pass
 * (lmdb-conformance.test.ts): its files and their modes, a data directory it cannot use, the
 * change counter /me relies on, the audit sweep in chunks, key lengths LMDB cannot hold, and the
 * backup file. The version tests (the change counter):
 *
 * The version meRead answers: /me keeps what it read while the version stays, so it must move
 * with every write that could change a session, a user or a key, made by any handle (authctl
 * writes from another process); reads leave it, and so do writes no /me depends on (an audit
 * event of a failed login, a limit clear), or a storm of failed logins would empty /me's cache.
 */
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { verifyChain } from '../../src/core/audit.js'
import { generateKey } from '../../src/core/keys.js'
import { commitFailure, openLmdbStore } from '../../src/store/lmdb-store.js'
import type { AuditDraft, Store } from '../../src/store/store.js'
import { draft } from '../helpers/audit.js'
import { ownerOnly } from '../helpers/file-modes.js'
import { fillUp, noSmallTmpfs, smallTmpfs } from '../helpers/full-disk.js'
import { nextRequest, session, user } from '../helpers/records.js'

// files and modes

// LMDB trusts its data file and can crash the whole process on a file that is not its own
t.test('refuses a data directory whose data.mdb is not an LMDB file, without opening it', async (t) => {
  const dir = t.testdir()
  writeFileSync(join(dir, 'data.mdb'), Buffer.alloc(8192, 0x41))
  await t.rejects(openLmdbStore({ path: dir }), { code: 'NOT_A_STORE', message: /data\.mdb is not an authd store/ })
})

t.test('refuses a data.mdb that is a directory or a FIFO, without reading it (a FIFO would block)', async (t) => {
  const asDir = t.testdir()
  mkdirSync(join(asDir, 'data.mdb'))
  await t.rejects(openLmdbStore({ path: asDir }), { code: 'NOT_A_STORE', message: /data\.mdb is not an authd store/ })
  const asFifo = join(t.testdir(), 'fifo')
  mkdirSync(asFifo)
  const made = spawnSync('mkfifo', [join(asFifo, 'data.mdb')])
  if (made.status !== 0) return void t.comment('no mkfifo here')
  await t.rejects(openLmdbStore({ path: asFifo }), { code: 'NOT_A_STORE', message: /data\.mdb is not an authd store/ })
})

t.test('opens a real store again after it was written and closed', async (t) => {
  const dir = t.testdir()
  const first = await openLmdbStore({ path: dir })
  await first.close()
  const again = await openLmdbStore({ path: dir })
  t.equal((await again.listUsers()).length, 0)
  await again.close()
})

t.test('opening a store whose files are 0644 (made under another umask, or copied in) makes them 0600', async (t) => {
  const dir = join(t.testdir(), 'data')
  await (await openLmdbStore({ path: dir })).close()
  for (const f of ['data.mdb', 'lock.mdb']) chmodSync(join(dir, f), 0o644)
  const store = await openLmdbStore({ path: dir })
  await store.close()
  ownerOnly(t, dir, ['data.mdb', 'lock.mdb'])
})

t.test('a data directory that holds other things, or is shared, keeps its mode', async (t) => {
  // a home directory or /srv named as store.path: only the store's files become 0600
  const home = join(t.testdir(), 'home')
  mkdirSync(home)
  chmodSync(home, 0o755)
  writeFileSync(join(home, 'notes.txt'), 'mine\n')
  await (await openLmdbStore({ path: home })).close()
  t.equal((statSync(home).mode & 0o7777).toString(8), '755', 'a directory with other files keeps 0755')
  t.equal((statSync(join(home, 'data.mdb')).mode & 0o777).toString(8), '600', 'the store file is 0600')
  // a shared directory with the sticky bit, as /tmp: never made 0700, even once it holds a store
  const shared = join(t.testdir(), 'shared')
  mkdirSync(shared)
  chmodSync(shared, 0o1777)
  await (await openLmdbStore({ path: shared })).close()
  await (await openLmdbStore({ path: shared })).close()
  t.equal((statSync(shared).mode & 0o7777).toString(8), '1777', 'a sticky directory keeps 1777')
})

t.test('an existing empty directory, or one holding a store, is made 0700', async (t) => {
  const empty = join(t.testdir(), 'empty')
  mkdirSync(empty)
  chmodSync(empty, 0o755)
  await (await openLmdbStore({ path: empty })).close()
  t.equal((statSync(empty).mode & 0o777).toString(8), '700', 'an empty directory becomes 0700')
  chmodSync(empty, 0o755)
  writeFileSync(join(empty, 'backup.mdb'), '')
  await (await openLmdbStore({ path: empty })).close()
  t.equal((statSync(empty).mode & 0o777).toString(8), '700', 'a directory holding a store becomes 0700 again')
})

// the change counter

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
    ['updateUserEndingSessions', (s) => s.updateUserEndingSessions('u1', (u) => ({ ...u, updatedAt: 7 }), 's1')],
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
  await store.updateUser('u1', (u) => u, [failure])
  await store.updateUserEndingSessions('u1', (u) => u, 'none', [failure])
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

// a data directory it cannot use, keys LMDB cannot hold, the sweep, the backup

t.test('a file where the data directory should be is refused in one sentence naming the path', async (t) => {
  const file = join(t.testdir(), 'data')
  writeFileSync(file, 'not a directory\n')
  await t.rejects(openLmdbStore({ path: file }), { name: 'AppError', code: 'DATA_DIR_NOT_DIRECTORY', message: `cannot use the data directory ${file}: a file is in the way (it must be a directory)` })
  await t.rejects(openLmdbStore({ path: join(file, 'below') }), { code: 'DATA_DIR_NOT_DIRECTORY' }, 'or in the way of one above it')
})

t.test('a data directory it may not write is refused as permission denied', { skip: process.getuid?.() === 0 ? 'root may write anywhere' : false }, async (t) => {
  const locked = join(t.testdir(), 'locked')
  mkdirSync(locked)
  chmodSync(locked, 0o500)
  t.teardown(() => chmodSync(locked, 0o700))
  await t.rejects(openLmdbStore({ path: join(locked, 'data') }), { code: 'DATA_DIR', message: /: permission denied \(run as the user that owns it\)$/ })
})

t.test('ids and emails longer than an LMDB key holds: reads find nothing, writes refuse with KEY_TOO_LONG', async (t) => {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  const long = 'x'.repeat(1001)
  t.equal(await store.getUser(long), undefined)
  t.equal(await store.getUserByEmail(`${long}@example.com`), undefined)
  t.equal(await store.getSession(long), undefined)
  t.same(await store.getSessions([long, 's1']), [undefined, undefined])
  await t.rejects(store.createUser(user('u1', `${long}@example.com`)), { name: 'AppError', code: 'KEY_TOO_LONG' })
  await t.rejects(store.createUser(user(long, 'ann@example.com')), { code: 'KEY_TOO_LONG' })
  t.ok(await store.createUser(user('u1', 'ann@example.com')))
  await t.rejects(store.updateUser('u1', (u) => ({ ...u, email: `${long}@example.com` })), { code: 'KEY_TOO_LONG' })
  t.equal((await store.getUser('u1'))!.email, 'ann@example.com', 'the refused change wrote nothing')
})

t.test('the audit sweep removes a backlog longer than one transaction takes, in chunks, and what remains verifies', async (t) => {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  const n = 2600 // two full chunks of 1024 and a part
  const drafts: AuditDraft[] = Array.from({ length: n }, (_, i) => draft(i))
  for (let i = 0; i < n; i += 500) await store.appendAudit(drafts.slice(i, i + 500))
  const cut = drafts[2400]!.at
  t.equal(await store.sweepAudit(cut), 2400, 'every event before the cut')
  await store.auditChain(async (anchor, events) => {
    t.equal(anchor.seq, 2400, 'the last one removed is the anchor')
    t.same(await verifyChain(anchor, events), { ok: true, events: 200 })
  })
  t.same((await store.auditEvents({ limit: 1000, userId: 'user-0' })).every((e) => e.seq > 2400), true, 'the index holds no removed event')
})

t.test('a backup never replaces what is at its file when the copy is put in place: a file, or a dangling symlink', async (t) => {
  const base = t.testdir()
  const store = await openLmdbStore({ path: join(base, 'data') })
  t.teardown(() => store.close())
  await store.createUser(user('u1', 'ann@example.com'))
  const out = join(base, 'backups')
  mkdirSync(out)
  // a file there (as one made while the copy ran: the store checks nothing before the copy)
  const file = join(out, 'older.mdb')
  writeFileSync(file, 'an older backup')
  await t.rejects(store.backup(file), { name: 'AppError', code: 'BACKUP_EXISTS', message: `${file} already exists: a backup never overwrites a file, choose a new name.` })
  t.equal(readFileSync(file, 'utf8'), 'an older backup', 'the file is untouched')
  // a symlink to nowhere: written through, the backup would land where it points
  const link = join(out, 'link.mdb')
  const target = join(base, 'elsewhere.mdb')
  symlinkSync(target, link)
  await t.rejects(store.backup(link), { name: 'AppError', code: 'BACKUP_EXISTS' })
  t.ok(lstatSync(link).isSymbolicLink(), 'the symlink is still a symlink')
  t.equal(readlinkSync(link), target, 'to where it pointed')
  t.notOk(existsSync(target), 'and nothing was written where it points')
  t.same(readdirSync(out).sort(), ['link.mdb', 'older.mdb'], 'no temporary directory is left')
})

t.test('a backup is one 0600 file that opens as the same store, and leaves no temporary directory', async (t) => {
  const base = t.testdir()
  const dir = join(base, 'data')
  const store = await openLmdbStore({ path: dir })
  t.teardown(() => store.close())
  await store.createUser(user('u1', 'ann@example.com'))
  await store.createSession(session('s1', 'u1'))
  const out = join(base, 'backups')
  mkdirSync(out)
  const file = join(out, 'authd.mdb')
  await store.backup(file)
  t.same(readdirSync(out), ['authd.mdb'], 'only the file')
  t.equal((statSync(file).mode & 0o777).toString(8), '600')
  // a data directory holding it as data.mdb is the restored store
  const restored = join(base, 'restored')
  mkdirSync(restored)
  copyFileSync(file, join(restored, 'data.mdb'))
  const again = await openLmdbStore({ path: restored })
  t.teardown(() => again.close())
  t.match(await again.getUser('u1'), { email: 'ann@example.com' })
  t.match(await again.getSession('s1'), { userId: 'u1' })
  t.notOk(existsSync(join(dir, 'authd.mdb')), 'nothing written into the data directory')
})

t.test('a failed commit is named as the disk said it; an I/O error on a full filesystem as the full disk it is', { skip: noSmallTmpfs() }, async (t) => {
  const page = ': Attempting to write page at position 57344, size 20480, blocks 5, buffer sizes 4096 4096 4096'
  const enospc = Object.assign(new Error(`No space left on device${page}`), { code: 28 })
  const eio = Object.assign(new Error(`Input/output error${page}`), { code: 5 })
  const roomy = t.testdir()
  t.equal(commitFailure(enospc, roomy), 'No space left on device')
  t.equal(commitFailure(eio, roomy), 'Input/output error', 'with room: the I/O error it was')
  const mnt = smallTmpfs(t, '400k')
  if (mnt === undefined) return
  fillUp(t, mnt)
  t.equal(commitFailure(eio, mnt), 'No space left on device (Input/output error)', 'on a full filesystem')
  t.equal(commitFailure(new Error('MDB_MAP_FULL: Environment mapsize limit reached'), mnt), 'MDB_MAP_FULL: Environment mapsize limit reached', 'no errno: as it was')
})
