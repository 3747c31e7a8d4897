/**
 * authctl export / import (README, "Export and import") with the real authctl and authd (built
 * dist/) on real stores (LMDB data directories, or PostgreSQL databases in the pg run): a store moved through an export keeps every record, and
 * the refresh cookies and access tokens issued before keep working on a daemon started on it.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { importStore } from '../../src/cli/commands/transfer.js'
import type { StoreDeps } from '../../src/cli/deps.js'
import { writeExportFile } from '../../src/cli/export-file.js'
import { adminDraft, verifyChain } from '../../src/core/audit.js'
import { call, CookieJar, ON_PG, openTestStore, storeLocation, TEST_BACKEND, type Reply } from '../helpers/app.js'
import { spawnDaemon } from '../helpers/daemon.js'
import { pgDatabase } from '../helpers/pg.js'
import { ctlFor, PASSWORD, runCtl } from './run.js'

const COOKIE = '__Host-authd_rt'

interface Signed {
  jar: CookieJar
  accessToken: string
}

function signed(res: Reply): Signed {
  if (res.status !== 200 && res.status !== 201) throw new Error(`sign-in failed: ${res.status} ${res.text}`)
  const jar = new CookieJar(COOKIE)
  jar.take(res)
  return { jar, accessToken: res.body.data.accessToken }
}

/** the file's records, without what differs between two exports of the same store */
function recordsOf(file: string): Array<Record<string, unknown>> {
  return readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((r) => r.type !== 'meta' && r.type !== 'end')
}

/** a store with users (one disabled), sessions and a rotated key, made through authd and authctl */
async function populated(t: Test, dir: string) {
  mkdirSync(dir, { mode: 0o700 })
  const daemon = await spawnDaemon(t, dir)
  const ann = signed(await call(daemon.url, 'POST', '/api/auth/register', { json: { email: 'ann@example.com', password: PASSWORD } }))
  const bob = signed(await call(daemon.url, 'POST', '/api/auth/register', { json: { email: 'bob@example.com', password: PASSWORD } }))
  signed(await call(daemon.url, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } }))
  const ctl = ctlFor(dir)
  t.equal((await ctl(['user', 'add', 'cat@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  t.equal((await ctl(['user', 'disable', 'cat@example.com'])).code, 0)
  t.equal((await ctl(['keys', 'rotate', '--now'])).code, 0)
  return { daemon, ann, bob }
}

t.test('export, then import into a new data directory: the same store, and tokens issued before keep working', async (t) => {
  const base = t.testdir()
  const src = join(base, 'src')
  const { daemon, ann, bob } = await populated(t, src)
  const before = ctlFor(src)
  const file = join(base, 'authd.export')
  const exported = await before(['export', file, '--json'])
  t.equal(exported.code, 0, exported.stderr)
  t.equal(exported.stderr, '')
  const doc = exported.json()
  t.match(doc, { file, backend: TEST_BACKEND, users: 3, sessions: 3, keys: 2, bytes: statSync(file).size })
  t.equal(doc.auditEvents, recordsOf(file).filter((r) => r.type === 'audit').length, 'the audit log is in it')
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by its owner only: it holds hashes and private keys')
  await daemon.stop()

  // into a data directory that does not exist yet
  const dst = join(base, 'dst')
  const after = ctlFor(dst, { cwd: base })
  const imported = await after(['import', file, '--json'])
  t.equal(imported.code, 0, imported.stderr)
  t.equal(imported.stderr, ON_PG ? '' : `authctl: created a new store in ${dst}\n`, 'the new store is named on stderr')
  t.same(imported.json(), { file, store: await storeLocation(dst), users: 3, sessions: 3, keys: 2, replacedAuditEvents: 0 })

  for (const args of [['user', 'list'], ['sessions', 'list'], ['keys', 'list']]) {
    const a = (await before([...args, '--json'])).json()
    const b = (await after([...args, '--json'])).json()
    t.same(b, a, `${args.join(' ')}: the same`)
  }
  // the whole store, record for record: exported again, the same file but the import's own event
  const again = join(base, 'again.export')
  t.equal((await after(['export', again])).code, 0)
  const original = recordsOf(file)
  const copy = recordsOf(again)
  t.same(copy.slice(0, -1), original, 'every record as it was exported')
  t.match(copy.at(-1), { type: 'audit', event: { event: 'admin.import', actor: `authctl:${userInfo().username}`, detail: { users: 3, sessions: 3, keys: 2 } } })

  const verify = await after(['audit', 'verify', '--json'])
  t.same(verify.json(), { ok: true, events: copy.filter((r) => r.type === 'audit').length }, 'the imported chain and the import event verify')

  const moved = await spawnDaemon(t, dst)
  for (const [name, s] of [['ann', ann], ['bob', bob]] as const) {
    const me = await call(moved.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${s.accessToken}` } })
    t.equal(me.status, 200, `${name}'s access token from before the export verifies`)
    const refreshed = await call(moved.url, 'POST', '/api/auth/refresh', { headers: s.jar.header() })
    t.equal(refreshed.status, 200, `${name}'s refresh cookie from before the export refreshes`)
  }
  t.equal((await after(['user', 'show', 'cat@example.com', '--json'])).json().user.disabled, true, 'a disabled user stays disabled')
  const annAgain = await call(moved.url, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  t.equal(annAgain.status, 200, 'the password hashes came along')
})

t.test('one VM to several: exported from LMDB, imported into PostgreSQL, tokens issued before work on a daemon there', { skip: ON_PG && 'runs in the LMDB run only: it moves an LMDB store into PostgreSQL' }, async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const base = t.testdir()
  const src = join(base, 'src')
  const { daemon, ann, bob } = await populated(t, src)
  const file = join(base, 'authd.export')
  t.equal((await ctlFor(src)(['export', file])).code, 0)
  await daemon.stop()

  // the config change of the README: store.backend and store.url (here through the environment)
  const PG = { AUTHD_STORE_BACKEND: 'postgres', AUTHD_STORE_URL: db.url }
  const pg = (args: string[]) => runCtl(args, { cwd: base, env: PG })
  const imported = await pg(['import', file, '--json'])
  t.equal(imported.code, 0, imported.stderr)
  t.match(imported.json(), { file, users: 3, sessions: 3, keys: 2 })
  for (const args of [['user', 'list'], ['sessions', 'list'], ['keys', 'list']]) {
    t.same((await pg([...args, '--json'])).json(), (await ctlFor(src)([...args, '--json'])).json(), `${args.join(' ')}: the same`)
  }
  const again = join(base, 'again.export')
  t.equal((await pg(['export', again])).code, 0)
  t.same(recordsOf(again).slice(0, -1), recordsOf(file), 'every record as it was exported from LMDB')
  t.same((await pg(['audit', 'verify', '--json'])).json().ok, true)
  t.equal((await pg(['import', file])).code, 1, 'a second import is refused: the database has users now')

  const moved = await spawnDaemon(t, base, { env: PG })
  for (const [name, s] of [['ann', ann], ['bob', bob]] as const) {
    const me = await call(moved.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${s.accessToken}` } })
    t.equal(me.status, 200, `${name}'s access token from before the move verifies`)
    const refreshed = await call(moved.url, 'POST', '/api/auth/refresh', { headers: s.jar.header() })
    t.equal(refreshed.status, 200, `${name}'s refresh cookie from before the move refreshes`)
  }
})

t.test('export never writes over an existing file', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  t.equal((await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  const existing = join(dir, 'existing.export')
  writeFileSync(existing, 'an older export', { mode: 0o644 })
  const r = await ctl(['export', existing])
  t.equal(r.code, 1)
  t.equal(r.stdout, '')
  t.equal(r.stderr, `authctl: ${existing} already exists: an export never overwrites a file, choose a new name.\n`)
  t.equal(readFileSync(existing, 'utf8'), 'an older export', 'untouched')
  t.equal(statSync(existing).mode & 0o777, 0o644)

  const missing = await ctl(['export', join(dir, 'no', 'such', 'x.export')])
  t.equal(missing.code, 1)
  t.equal(missing.stderr, `authctl: Directory ${join(dir, 'no', 'such')} does not exist.\n`)
  const relative = await ctl(['export', 'relative.export'])
  t.equal(relative.code, 0, 'a relative name is taken from the working directory')
  t.match(relative.stdout, `Exported the store to ${join(dir, 'relative.export')}: 1 user, 0 sessions, `)
  t.equal((await ctl(['export'])).code, 2, 'the file is required')
  // a name ending in a slash names a directory: no file is made under the name without it
  const slashed = await ctl(['export', 'out/'])
  t.equal(slashed.code, 1)
  t.equal(slashed.stderr, `authctl: ${join(dir, 'out')} is a directory.\n`)
  t.notOk(existsSync(join(dir, 'out')), 'no file out')
})

t.test("import into a store without users that has audit events of its own: they are replaced, counted and said", async (t) => {
  const base = t.testdir()
  const src = join(base, 'src')
  const dst = join(base, 'dst')
  mkdirSync(src, { mode: 0o700 })
  mkdirSync(dst, { mode: 0o700 })
  t.equal((await ctlFor(src, { cwd: base })(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  const file = join(base, 'store.export')
  t.equal((await ctlFor(src, { cwd: base })(['export', file])).code, 0)
  const after = ctlFor(dst, { cwd: base })
  // what an admin may have done on the new store first
  t.equal((await after(['keys', 'rotate'])).code, 0)
  t.equal((await after(['limits', 'clear', '192.0.2.1'])).code, 0)
  const r = await after(['import', file])
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, "\nThe store's own 2 audit events (from before the import) were replaced by the export's log; its admin.import event says so.\n")
  const events = (await after(['audit', 'list', '--json'])).json().events as Array<{ event: string; detail: Record<string, unknown> }>
  t.same(events.map((e) => e.event), ['admin.import', 'admin.user.add'], "the export's log and the import, newest first")
  t.match(events[0]!.detail, { users: 1, replacedAuditEvents: 2 })
  t.equal((await after(['audit', 'verify'])).code, 0, 'one chain')
})

t.test('import refuses a store that already has users, and writes nothing', async (t) => {
  const base = t.testdir()
  const src = join(base, 'src')
  const ctlSrc = ctlFor(src, { cwd: base })
  t.equal((await ctlSrc(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  const file = join(base, 'authd.export')
  t.equal((await ctlSrc(['export', file])).code, 0)
  const dst = join(base, 'dst')
  const ctl = ctlFor(dst, { cwd: base })
  t.equal((await ctl(['user', 'add', 'zed@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  const auditBefore = (await ctl(['audit', 'list', '--json'])).json()
  const r = await ctl(['import', file])
  t.equal(r.code, 1)
  t.equal(r.stdout, '')
  t.equal(r.stderr, `authctl: Cannot import ${file}: the store at ${await storeLocation(dst)} already has users (import only into a new, empty store); nothing was written.\n`)
  t.same((await ctl(['user', 'list', '--json'])).json().users.map((u: { email: string }) => u.email), ['zed@example.com'])
  t.same((await ctl(['audit', 'list', '--json'])).json(), auditBefore, 'no event either')
})

t.test('import refuses a damaged or truncated file, naming the line, and creates nothing', async (t) => {
  const base = t.testdir()
  const src = join(base, 'src')
  const ctlSrc = ctlFor(src, { cwd: base })
  for (const email of ['ann@example.com', 'bob@example.com']) {
    t.equal((await ctlSrc(['user', 'add', email, '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  }
  const file = join(base, 'authd.export')
  t.equal((await ctlSrc(['export', file])).code, 0)
  const lines = readFileSync(file, 'utf8').split('\n')
  const dst = join(base, 'dst')
  const ctl = ctlFor(dst, { cwd: base })

  const garbled = join(base, 'garbled.export')
  writeFileSync(garbled, [...lines.slice(0, 2), lines[2]!.slice(0, 20) + '#' + lines[2]!.slice(21), ...lines.slice(3)].join('\n'))
  const g = await ctl(['import', garbled])
  t.equal(g.code, 1)
  t.equal(g.stderr, `authctl: Cannot import ${garbled}: line 3 is not a JSON record: the file is damaged or was cut short; nothing was written.\n`)

  const cut = join(base, 'cut.export')
  writeFileSync(cut, readFileSync(file).subarray(0, Buffer.byteLength(lines.slice(0, 3).join('\n')) - 7))
  const c = await ctl(['import', cut])
  t.equal(c.code, 1)
  t.equal(c.stderr, `authctl: Cannot import ${cut}: line 3 is not a JSON record: the file is damaged or was cut short; nothing was written.\n`)

  const atBreak = join(base, 'at-break.export')
  writeFileSync(atBreak, lines.slice(0, 3).join('\n') + '\n')
  const b = await ctl(['import', atBreak])
  t.equal(b.code, 1)
  t.equal(b.stderr, `authctl: Cannot import ${atBreak}: line 3 is the last, and it is not the end line: the file was cut short; nothing was written.\n`)

  // a record the store cannot take: the store names its line
  const bad = join(base, 'bad.export')
  const user = JSON.parse(lines[1]!)
  delete user.user.passwordHash
  writeFileSync(bad, [lines[0], JSON.stringify(user), ...lines.slice(2)].join('\n'))
  const s = await ctl(['import', bad])
  t.equal(s.code, 1)
  // every record checked before the store is opened: none is made
  t.match(s.stderr, new RegExp(`^authctl: Cannot import ${bad}: line 2 of the export: .*passwordHash.*; nothing was written\\.\\n$`))
  if (!ON_PG) t.notOk(existsSync(dst), 'no data directory was made')
  // a duplicate found only across records, late in the file: refused before the store is opened too
  const twice = join(base, 'twice.export')
  writeFileSync(twice, [lines[0], lines[1], lines[1], ...lines.slice(2)].join('\n').replace(/"records":(\d+)/, (_, n: string) => `"records":${Number(n) + 1}`))
  const d = await ctl(['import', twice])
  t.equal(d.code, 1)
  t.match(d.stderr, new RegExp(`^authctl: Cannot import ${twice}: line 3 of the export: a second user with the id .*; nothing was written\\.\\n$`))
  if (!ON_PG) t.notOk(existsSync(dst), 'no data directory was made')
  if (ON_PG) t.same((await ctl(['user', 'list', '--json'])).json().users, [], 'nothing was imported')

  const none = await ctlFor(join(base, 'other'), { cwd: base })(['import', join(base, 'no-such.export')])
  t.equal(none.code, 1)
  t.equal(none.stderr, `authctl: No file ${join(base, 'no-such.export')}.\n`)
  t.notOk(existsSync(join(base, 'other')), 'no data directory was made for a file that is no export')

  // emails a store could not have: refused before the store is opened, naming the line
  for (const [email, why] of [
    ['ANN@example.com', 'is not in the canonical form a store keeps ("ann@example.com")'],
    ['no-at-sign', 'it must contain exactly one @'],
    ['evil\u202e@example.com', 'it contains an invisible or direction-changing character (U+202E)'],
  ]) {
    const odd = join(base, 'odd-email.export')
    const record = JSON.parse(lines[1]!)
    record.user.email = email
    writeFileSync(odd, [lines[0], JSON.stringify(record), ...lines.slice(2)].join('\n'))
    const dir = join(base, 'odd-email')
    const o = await ctlFor(dir, { cwd: base })(['import', odd])
    t.equal(o.code, 1, email)
    t.equal(o.stderr, `authctl: Cannot import ${odd}: line 2 of the export: a user whose email ${why}; nothing was written.\n`)
    t.notOk(existsSync(dir), 'no data directory was made')
  }

  // a named pipe holding a whole export: refused before it is read (a second read would wait forever)
  const fifo = join(base, 'authd.fifo')
  t.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo')
  const piped = await ctlFor(join(base, 'from-fifo'), { cwd: base })(['import', fifo])
  t.equal(piped.code, 1)
  t.equal(piped.stderr, `authctl: Cannot import ${fifo}: it is not a regular file (an export is read twice: save it to a file first); nothing was written.\n`)
  t.notOk(existsSync(join(base, 'from-fifo')), 'no data directory was made')
})

t.test('export and import explain themselves with --help', async (t) => {
  const ctl = ctlFor(t.testdir())
  const e = await ctl(['export', '--help'])
  t.equal(e.code, 0)
  t.match(e.stdout, /Usage: authctl export \[options\] <file>/)
  t.match(e.stdout, /never overwritten/)
  const i = await ctl(['import', '--help'])
  t.equal(i.code, 0)
  t.match(i.stdout, /Usage: authctl import \[options\] <file>/)
  t.match(i.stdout, /empty store/)
})

t.test('import writes its admin.import in the import’s own write: a store that could take no other write after it still has the event', async (t) => {
  // in process, on the test's backend: a store whose every write but the import's fails, as if
  // authctl died the moment the import committed
  const base = t.testdir()
  const src = join(base, 'src')
  mkdirSync(src, { mode: 0o700 })
  const source = await openTestStore(t, src)
  await source.createUser({ id: 'u1', email: 'ann@example.com', passwordHash: 'x', createdAt: 1, updatedAt: 1, disabled: false }, [adminDraft('admin.user.add', { at: 1, userId: 'u1', email: 'ann@example.com' })])
  const file = join(base, 'authd.export')
  await writeExportFile(file, source.exportRecords())
  const dst = join(base, 'dst')
  mkdirSync(dst, { mode: 0o700 })
  const store = await openTestStore(t, dst)
  const crashed = (): Promise<never> => Promise.reject(new Error('authctl died after the import'))
  const dying = new Proxy(store, { get: (s, name) => (name === 'appendAudit' ? crashed : (s as unknown as Record<string | symbol, unknown>)[name]) })
  const deps = { cwd: base, now: () => Date.UTC(2025, 2, 4), store: dying, close: async () => {} } as unknown as StoreDeps & { close(): Promise<void> }
  const doc = await importStore(deps, { file }, async () => deps)
  t.match(doc, { users: 1, sessions: 0, keys: 0 })
  const events = (await store.auditEvents({ limit: 10 })).reverse()
  t.same(events.map((e) => [e.seq, e.event]), [
    [1, 'admin.user.add'],
    [2, 'admin.import'],
  ])
  t.same(events[1]!.detail, { users: 1, sessions: 0, keys: 0, replacedAuditEvents: 0 })
  t.same(await store.auditChain(verifyChain), { ok: true, events: 2 })
})
