/**
 * Every file authd or authctl creates in the data directory is 0600 whatever the umask: the store
 * holds password hashes and private keys. The real programs run under umask 022 (children inherit
 * it), and every file found in the directory afterwards is stat'ed.
 */
import { chmodSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { call, spawnDaemon } from '../helpers/app.js'
import { ctlFor, PASSWORD } from '../cli/run.js'

process.umask(0o022)

/** every file under `dir` (recursively) with its permission bits in octal */
function modes(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue
    const file = join(entry.parentPath, entry.name)
    out[file.slice(dir.length + 1)] = (statSync(file).mode & 0o777).toString(8)
  }
  return out
}

function ownerOnly(t: Test, dir: string, expected: string[]): void {
  const found = modes(dir)
  t.same(Object.keys(found).sort(), [...expected].sort(), 'the files in the data directory')
  for (const [file, mode] of Object.entries(found)) t.equal(mode, '600', `${file} is 0600`)
  t.equal((statSync(dir).mode & 0o777).toString(8), '700', 'the directory is 0700')
}

t.test('store files created by authd under umask 022 are 0600', async (t) => {
  const dir = join(t.testdir(), 'data')
  mkdirSync(dir) // the programs run in it
  const daemon = await spawnDaemon(t, dir)
  t.equal((await call(daemon.url, 'POST', '/api/auth/register', { json: { email: 'ann@example.com', password: PASSWORD } })).status, 201)
  ownerOnly(t, dir, ['data.mdb', 'lock.mdb'])
  t.equal(await daemon.stop(), 0)
  ownerOnly(t, dir, ['data.mdb', 'lock.mdb'])
})

t.test('store files and backups created by authctl under umask 022 are 0600', async (t) => {
  const dir = join(t.testdir(), 'data')
  mkdirSync(dir)
  const ctl = ctlFor(dir)
  const add = await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })
  t.equal(add.code, 0, add.stderr)
  const backup = await ctl(['backup', join(dir, 'backup.mdb')])
  t.equal(backup.code, 0, backup.stderr)
  ownerOnly(t, dir, ['data.mdb', 'lock.mdb', 'backup.mdb'])
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
