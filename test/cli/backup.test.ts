import t from 'tap'
import { spawnSync } from 'node:child_process'
import { existsSync, lstatSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, lmdbOnly } from '../helpers/app.js'
import { spawnDaemon } from '../helpers/daemon.js'
import { onTestMachine, readmeBlock, systemctlLine, testUser, withoutComment, writeSudo } from '../helpers/readme.js'
import { fillUp, noSmallTmpfs, smallTmpfs } from '../helpers/full-disk.js'
import { ctlFor, PASSWORD } from './run.js'

// the daemon serves a stream of logins from one address during the backup
const ENV = { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '100000/1m' }

/** authctl backup copies an LMDB store's file; on PostgreSQL it refuses, naming pg_dump (store-backends.test.ts) */
const LMDB_ONLY = lmdbOnly('authctl backup copies the LMDB file (a PostgreSQL store is backed up with pg_dump)')

/** the README's restore (Back up and restore #2), and the backup it restores */
const restore = readmeBlock('Back up and restore #2').text.split('\n')
const RESTORED = / \/var\/backups\/authd\/(authd-\d{4}-\d\d-\d\d\.mdb) /.exec(restore.join('\n'))?.[1] ?? 'the README names no backup to restore'

t.test('a backup taken while the daemon serves logins restores, as the README does it, to a store where those users log in', { skip: LMDB_ONLY }, async (t) => {
  const base = t.testdir()
  const live = join(base, 'live')
  mkdirSync(live, { mode: 0o700 })
  let daemon = await spawnDaemon(t, live, { env: ENV })
  const ctl = ctlFor(live)
  const emails = ['ann@example.com', 'bob@example.com', 'cat@example.com']
  const tokens = new Map<string, string>()
  for (const email of emails) {
    const r = await call(daemon.url, 'POST', '/api/auth/register', { json: { email, password: PASSWORD } })
    t.equal(r.status, 201)
    tokens.set(email, r.body.data.accessToken)
  }

  // logins, two at a time, until the backup is done (bounded in count)
  let backupDone = false
  let logins = 0
  const failures: number[] = []
  const loop = async (): Promise<void> => {
    for (let i = 0; i < 400 && !backupDone; i++) {
      const r = await call(daemon.url, 'POST', '/api/auth/login', { json: { email: emails[i % emails.length], password: PASSWORD } })
      if (r.status === 200) logins++
      else failures.push(r.status)
    }
  }
  const loops = [loop(), loop()]
  await new Promise((r) => setTimeout(r, 150))
  // named as the backup the README restores
  const file = join(base, RESTORED)
  const backup = await ctl(['backup', file, '--json'])
  const loginsDuringBackup = logins
  backupDone = true
  await Promise.all(loops)
  t.equal(backup.code, 0, backup.stderr)
  t.same(failures, [], 'every login succeeded while the backup ran')
  t.ok(loginsDuringBackup > 0, `the daemon was serving logins (${loginsDuringBackup} before the backup finished)`)
  const doc = backup.json()
  t.equal(doc.file, file)
  t.equal(doc.bytes, statSync(file).size)
  t.ok(statSync(file).isFile(), 'one file')
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by its owner only: it holds hashes and private keys')

  // a user made after the backup is not in it
  t.equal((await ctl(['user', 'add', 'late@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)

  // restore as the README does it: its lines as written, the VM's /var/lib/authd this daemon's
  // store and /var/backups/authd this test's directory (test/helpers/readme.ts); systemctl stop and
  // start: this daemon stopped with SIGTERM, and started again on the same directory
  const places = { etc: join(base, 'etc'), lib: live, backups: base, ...testUser() }
  const sudo = writeSudo(join(base, 'sbin'))
  for (const line of restore) {
    const systemctl = systemctlLine(line)
    if (systemctl?.action === 'stop') t.equal(await daemon.stop(), 0, line)
    else if (systemctl?.action === 'start') daemon = await spawnDaemon(t, live, { env: ENV })
    // smoke needs the proxy's public_url: the README walk runs it (test/readme-blocks.test.ts)
    else if (/ smoke /.test(line)) continue
    else if (withoutComment(line) !== '') {
      const r = spawnSync('bash', ['-euo', 'pipefail', '-c', onTestMachine(line, places)], { encoding: 'utf8', env: { ...process.env, PATH: `${sudo}:${process.env.PATH}` } })
      t.equal(r.status, 0, `${line}: ${r.stderr}`)
    }
  }
  const second = daemon
  t.equal(statSync(join(live, 'data.mdb')).mode & 0o777, 0o600, 'the restored store file')
  t.ok(existsSync(join(`${live}.before-restore`, 'data.mdb')), 'the store before the restore is kept beside it')
  for (const email of emails) {
    const r = await call(second.url, 'POST', '/api/auth/login', { json: { email, password: PASSWORD } })
    t.equal(r.status, 200, `${email} logs in on the restored store`)
    const me = await call(second.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${r.body.data.accessToken}` } })
    t.equal(me.body.data.email, email)
    // the signing keys came along: a token issued before the backup still verifies
    const old = await call(second.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${tokens.get(email)}` } })
    t.equal(old.status, 200, `${email}: an access token from before the backup verifies on the restored store`)
  }
  const late = await call(second.url, 'POST', '/api/auth/login', { json: { email: 'late@example.com', password: PASSWORD } })
  t.equal(late.status, 401, 'the store is the copy at backup time')
  const users = await ctlFor(live)(['user', 'list', '--json'])
  t.same(users.json().users.map((u: { email: string }) => u.email).sort(), emails)
  const before = await ctlFor(`${live}.before-restore`)(['user', 'list', '--json'])
  t.same(before.json().users.map((u: { email: string }) => u.email).sort(), [...emails, 'late@example.com'].sort(), 'the store swapped out holds the later user')
})

t.test('backup refuses to overwrite a file and names a missing directory', { skip: LMDB_ONLY }, async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  t.equal((await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  const existing = join(dir, 'existing.mdb')
  writeFileSync(existing, 'an older backup')
  const over = await ctl(['backup', existing])
  t.equal(over.code, 1)
  t.equal(over.stderr, `authctl: ${existing} already exists: a backup never overwrites a file, choose a new name.\n`)
  t.equal(statSync(existing).size, 'an older backup'.length, 'untouched')

  // a symlink to nowhere is an existing entry: written through, the backup would land where it points
  const link = join(dir, 'link.mdb')
  const target = join(dir, 'elsewhere.mdb')
  symlinkSync(target, link)
  const dangling = await ctl(['backup', link])
  t.equal(dangling.code, 1)
  t.equal(dangling.stderr, `authctl: ${link} already exists: a backup never overwrites a file, choose a new name.\n`)
  t.ok(lstatSync(link).isSymbolicLink(), 'the symlink is untouched')
  t.notOk(existsSync(target), 'nothing was written where it points')

  const missing = await ctl(['backup', join(dir, 'no', 'such', 'b.mdb')])
  t.equal(missing.code, 1)
  t.equal(missing.stderr, `authctl: Directory ${join(dir, 'no', 'such')} does not exist.\n`)

  const relative = await ctl(['backup', 'relative.mdb'])
  t.equal(relative.code, 0, 'a relative name is taken from the working directory')
  t.equal(relative.stdout, `Backed up the store to ${join(dir, 'relative.mdb')} (${statSync(join(dir, 'relative.mdb')).size} bytes, ${/(\d+) ms/.exec(relative.stdout)?.[1]} ms).\nIt holds password hashes and private keys: keep it as private as the data directory.\n`)

  const noArg = await ctl(['backup'])
  t.equal(noArg.code, 2)
})

t.test('what the file system refuses a backup or an export is said as a sentence, exit 1, and leaves nothing behind', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  t.equal((await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  const long = join(dir, 'x'.repeat(300))
  writeFileSync(join(dir, 'a-file'), 'not a directory')
  // two links that point at each other
  symlinkSync('loop-b', join(dir, 'loop-a'))
  symlinkSync('loop-a', join(dir, 'loop-b'))
  // /proc is there, and takes no new file: not a missing directory
  const cases: Array<[string, string[], string]> = [
    ['export, a name too long', ['export', long], `authctl: The name ${long} is too long for the file system.\n`],
    ['export into /proc', ['export', '/proc/authd.export'], 'authctl: Cannot create /proc/authd.export: its directory takes no new files.\n'],
    ['export under a file', ['export', join(dir, 'a-file', 'store.export')], `authctl: ${join(dir, 'a-file')} is not a directory.\n`],
    ['export through a loop of links', ['export', join(dir, 'loop-a', 'store.export')], `authctl: The symbolic links of ${join(dir, 'loop-a', 'store.export')} go round in a loop.\n`],
    ['import of a loop of links', ['import', join(dir, 'loop-a')], `authctl: The symbolic links of ${join(dir, 'loop-a')} go round in a loop.\n`],
  ]
  if (LMDB_ONLY === false) {
    cases.push(
      ['backup, a name too long', ['backup', long], `authctl: The name ${long} is too long for the file system.\n`],
      ['backup into /proc', ['backup', '/proc/authd.mdb'], 'authctl: Cannot create /proc/authd.mdb: its directory takes no new files.\n'],
      ['backup under a file', ['backup', join(dir, 'a-file', 'store.mdb')], `authctl: ${join(dir, 'a-file')} is not a directory.\n`],
      ['backup through a loop of links', ['backup', join(dir, 'loop-a', 'store.mdb')], `authctl: The symbolic links of ${join(dir, 'loop-a', 'store.mdb')} go round in a loop.\n`],
    )
  }
  for (const [name, args, stderr] of cases) {
    const r = await ctl(args)
    t.equal(r.code, 1, `${name}: exit 1`)
    t.equal(r.stderr, stderr, `${name}: the sentence`)
    t.equal(r.stdout, '', `${name}: nothing on stdout`)
  }
})

t.test('a backup or export onto a full disk says so, exit 1, and leaves no file or temporary directory', { skip: noSmallTmpfs() }, async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  t.equal((await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  const mnt = smallTmpfs(t, '40k')
  if (mnt === undefined) return
  fillUp(t, mnt)

  const exported = await ctl(['export', join(mnt, 'store.export')])
  t.equal(exported.code, 1, 'export: exit 1')
  t.equal(exported.stderr, `authctl: No space left on the device for ${join(mnt, 'store.export')}: nothing was exported.\n`)
  if (LMDB_ONLY === false) {
    const backedUp = await ctl(['backup', join(mnt, 'store.mdb')])
    t.equal(backedUp.code, 1, 'backup: exit 1')
    t.equal(backedUp.stderr, `authctl: No space left on the device for ${join(mnt, 'store.mdb')}: nothing was backed up.\n`)
  }
  t.same(readdirSync(mnt), ['filler'], 'nothing left on the full disk')
})

t.test('a data directory behind a link to nowhere, or a loop of links, is said as a sentence', { skip: LMDB_ONLY }, async (t) => {
  const dir = t.testdir()
  // /var/lib/authd linked to a volume that is not mounted
  symlinkSync(join(dir, 'unmounted', 'authd'), join(dir, 'dangling'))
  symlinkSync('loop-b', join(dir, 'loop-a'))
  symlinkSync('loop-a', join(dir, 'loop-b'))
  const cases: Array<[string, string]> = [
    [join(dir, 'dangling'), 'a symbolic link on its path points to nothing (a volume not mounted?)'],
    [join(dir, 'loop-a'), 'the symbolic links on its path go round in a loop'],
  ]
  for (const [data, why] of cases) {
    // user add may make a new store: it gets as far as making the directory
    const r = await ctlFor(data, { cwd: dir })(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })
    t.equal(r.code, 1, `${data}: exit 1`)
    t.equal(r.stderr, `authctl: Cannot use the data directory ${data}: ${why}.\n`)
  }
  t.notOk(existsSync(join(dir, 'unmounted')), 'nothing made where the link points')
})
