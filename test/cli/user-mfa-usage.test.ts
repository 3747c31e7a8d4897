/**
 * authctl user mfa reset, and the usage errors of every command (--help, bad flags, config
 * errors, the data directory): split off user.test.ts.
 */
import t from 'tap'
import argon2 from 'argon2'
import { spawn } from 'node:child_process'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { AUTHCTL_BIN, lmdbOnly, openTestStore, storeEnv } from '../helpers/app.js'
import { ctlFor, PASSWORD, runCtl } from './run.js'

/**
 * authctl as the user nobody (the tests run as root, whom no file mode stops), without the test
 * runner's hooks in NODE_OPTIONS (they write where nobody may not)
 */
function asNobody(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn('runuser', ['-u', 'nobody', '--', 'env', '-u', 'NODE_OPTIONS', process.execPath, AUTHCTL_BIN, ...args], {
      cwd: '/',
      env: { PATH: process.env.PATH },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000)
    proc.on('error', reject)
    proc.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stderr })
    })
  })
}

const SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP'

/** turns a second factor on in the store, as a confirmed TOTP setup leaves it */
async function withFactor(dir: string, email: string): Promise<void> {
  const store = await openTestStore(null, dir)
  try {
    const user = (await store.getUserByEmail(email))!
    await store.updateUser(user.id, (u) => ({
      ...u,
      mfa: { secret: SECRET, enabledAt: Date.now(), lastStep: 1, recoveryCodes: ['recovery-hash-1', 'recovery-hash-2'] },
      mfaSetup: { secret: 'KRSXG5CTMVRXEZLUKRSXG5CTMVRXEZLU', createdAt: Date.now() },
    }))
  } finally {
    await store.close()
  }
}

async function storedUser(dir: string, email: string) {
  const store = await openTestStore(null, dir)
  try {
    return (await store.getUserByEmail(email))!
  } finally {
    await store.close()
  }
}

t.test('user show and list say whether the second factor is on, never its secret', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  const ann = (await ctl(['user', 'add', 'ann@example.com', '--password-stdin', '--json'], { input: `${PASSWORD}\n` })).json().user
  await ctl(['user', 'add', 'bob@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })
  t.equal(ann.mfaEnabled, false)
  await withFactor(dir, 'ann@example.com')

  const outputs = await Promise.all([['user', 'list'], ['user', 'list', '--json'], ['user', 'show', ann.id], ['user', 'show', ann.id, '--json']].map((a) => ctl(a)))
  for (const r of outputs) {
    t.equal(r.code, 0, r.stderr)
    t.notMatch(r.stdout + r.stderr, SECRET, 'the secret is never shown')
    t.notMatch(r.stdout, /recovery-hash|KRSXG5/, 'nor the recovery codes or a pending setup')
  }
  const [list, listJson, show, showJson] = outputs
  t.match(list!.stdout, /ann@example\.com +\S+ +no +on +0\n/)
  t.match(list!.stdout, /bob@example\.com +\S+ +no +off +0\n/)
  t.same(listJson!.json().users.map((u: { mfaEnabled: boolean }) => u.mfaEnabled), [true, false])
  t.match(show!.stdout, /\n2fa: +on\n$/)
  t.same(showJson!.json(), { user: { ...ann, mfaEnabled: true, updatedAt: showJson!.json().user.updatedAt } })
})

t.test('user mfa reset turns the factor off after asking, and refuses without --yes off a terminal', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  const ann = (await ctl(['user', 'add', 'ann@example.com', '--password-stdin', '--json'], { input: `${PASSWORD}\n` })).json().user
  await withFactor(dir, 'ann@example.com')

  const noYes = await ctl(['user', 'mfa', 'reset', 'ann@example.com'], { input: 'y\n' })
  t.equal(noYes.code, 2, 'without --yes and without a terminal it refuses, as user rm does')
  t.equal(
    noYes.stderr,
    `authctl: Will not reset the second factor of ann@example.com (${ann.id}), so that the password alone signs in without confirmation: pass --yes (standard input is not a terminal).\n`,
  )
  t.equal(noYes.stdout, '')
  t.not((await storedUser(dir, 'ann@example.com')).mfa, undefined, 'still on')

  const unknown = await ctl(['user', 'mfa', 'reset', 'ghost@example.com', '--yes'])
  t.equal(unknown.code, 1)
  t.equal(unknown.stderr, 'authctl: No user with email or id "ghost@example.com".\n')
  const unknownJson = await ctl(['user', 'mfa', 'reset', 'ghost@example.com', '--yes', '--json'])
  t.equal(unknownJson.code, 1)
  t.equal(unknownJson.stdout, '', '--json prints nothing on failure')

  const reset = await ctl(['user', 'mfa', 'reset', 'ANN@example.com', '--yes'])
  t.equal(reset.code, 0, reset.stderr)
  t.equal(reset.stdout, `Reset the second factor of ann@example.com (${ann.id}); its recovery codes are void and the password alone signs in.\n`)
  t.equal(reset.stderr, '')
  const after = await storedUser(dir, 'ann@example.com')
  t.equal(after.mfa, undefined, 'secret and recovery codes gone')
  t.equal(after.mfaSetup, undefined, 'and the unconfirmed setup')
  t.ok(await argon2.verify(after.passwordHash, PASSWORD), 'the password is untouched')

  const again = await ctl(['user', 'mfa', 'reset', ann.id, '--yes', '--json'])
  t.equal(again.code, 0)
  t.same(again.json(), { user: { ...ann, updatedAt: again.json().user.updatedAt }, wasEnabled: false, setupRemoved: false })
  const plain = await ctl(['user', 'mfa', 'reset', ann.id, '--yes'])
  t.equal(plain.stdout, `ann@example.com (${ann.id}) had no second factor; nothing to reset.\n`)

  // only a set-up not yet confirmed: removed, and said so
  const store = await openTestStore(null, dir)
  await store.updateUser(ann.id, (u) => ({ ...u, mfaSetup: { secret: 'KRSXG5CTMVRXEZLUKRSXG5CTMVRXEZLU', createdAt: Date.now() } }))
  await store.close()
  const setup = await ctl(['user', 'mfa', 'reset', ann.id, '--yes'])
  t.equal(setup.stdout, `ann@example.com (${ann.id}) had no second factor; removed the set-up not yet confirmed.\n`)
  t.equal((await storedUser(dir, 'ann@example.com')).mfaSetup, undefined, 'the set-up is gone')

  await withFactor(dir, 'ann@example.com')
  const json = await ctl(['user', 'mfa', 'reset', ann.id, '--yes', '--json'])
  t.match(json.json(), { user: { id: ann.id, mfaEnabled: false }, wasEnabled: true, setupRemoved: false })
  t.notMatch(json.stdout, SECRET)
})

t.test('on a real terminal, user mfa reset asks, and only y resets', { skip: process.platform !== 'linux' && 'needs script(1) from util-linux' }, async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })
  await withFactor(dir, 'ann@example.com')
  const onTerminal = async (answer: string): Promise<{ code: number | null; seen: string }> => {
    const proc = spawn('script', ['-qfec', `${process.execPath} ${AUTHCTL_BIN} user mfa reset ann@example.com --data ${dir}`, '/dev/null'], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, TERM: 'dumb', ...(await storeEnv(dir)) },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    t.teardown(() => {
      if (proc.exitCode === null) proc.kill('SIGKILL')
    })
    let seen = ''
    proc.stdout.on('data', (c: Buffer) => (seen += c.toString()))
    proc.stderr.on('data', (c: Buffer) => (seen += c.toString()))
    const exited = new Promise<number | null>((r) => proc.on('close', r))
    for (let i = 0; i < 300 && !seen.includes('[y/N] '); i++) await new Promise((r) => setTimeout(r, 50))
    proc.stdin.write(`${answer}\r`)
    const code = await exited
    proc.stdin.end()
    return { code, seen }
  }
  const no = await onTerminal('n')
  t.match(no.seen, /Reset the second factor of ann@example\.com \([\w-]+\), so that the password alone signs in\? \[y\/N\] /)
  t.equal(no.code, 1, no.seen)
  t.match(no.seen, /Cancelled: did not reset the second factor/)
  t.not((await storedUser(dir, 'ann@example.com')).mfa, undefined, 'still on')
  const yes = await onTerminal('y')
  t.equal(yes.code, 0, yes.seen)
  t.match(yes.seen, /Reset the second factor of ann@example\.com/)
  t.equal((await storedUser(dir, 'ann@example.com')).mfa, undefined)
})

t.test('usage: --help on every command, bad flags and config errors exit 2', async (t) => {
  const dir = t.testdir()
  const commands = [
    [],
    ['user'],
    ['user', 'add'],
    ['user', 'list'],
    ['user', 'show'],
    ['user', 'disable'],
    ['user', 'enable'],
    ['user', 'passwd'],
    ['user', 'rm'],
    ['user', 'mfa'],
    ['user', 'mfa', 'reset'],
    ['keys'],
    ['keys', 'list'],
    ['keys', 'rotate'],
    ['keys', 'revoke'],
    ['sessions'],
    ['sessions', 'list'],
    ['sessions', 'revoke'],
    ['smoke'],
    ['backup'],
  ]
  await Promise.all(
    commands.map(async (cmd) => {
      const r = await runCtl([...cmd, '--help'], { cwd: dir })
      t.equal(r.code, 0, `${cmd.join(' ')} --help exits 0`)
      t.match(r.stdout, new RegExp(`^Usage: authctl${cmd.map((c) => ` ${c}`).join('')} `), `${cmd.join(' ')} --help`)
      t.match(r.stdout, /--json/, 'shows the global options')
      t.match(r.stdout, /--data <dir>/)
    }),
  )

  const bare = await runCtl([], { cwd: dir })
  t.equal(bare.code, 2, 'no command is a usage error')
  t.match(bare.stderr, /Usage: authctl/)

  const unknown = await runCtl(['frobnicate'], { cwd: dir })
  t.equal(unknown.code, 2)
  t.equal(unknown.stderr, "authctl: Unknown command 'frobnicate'.\n")

  const badFlag = await runCtl(['user', 'list', '--bogus', '--data', dir], { cwd: dir })
  t.equal(badFlag.code, 2)
  t.equal(badFlag.stderr, "authctl: Unknown option '--bogus'.\n")

  const badConfig = await runCtl(['user', 'list', '--data', dir], { cwd: dir, env: { AUTHD_TOKENS_ACCESS_TTL: 'soon' } })
  t.equal(badConfig.code, 2)
  t.match(badConfig.stderr, /^authctl: Config: tokens\.access_ttl .*"soon".*\n$/)
  t.equal(badConfig.stderr.split('\n').length, 2, 'one line')

  const missingFile = await runCtl(['user', 'list', '--config', `${dir}/nope.toml`], { cwd: dir })
  t.equal(missingFile.code, 2)
  t.match(missingFile.stderr, /nope\.toml/)

  // the data directory as the command line or AUTHD_DATA names it: LMDB's
  await t.test('a data directory that is missing, a file, or broken, and AUTHD_DATA', { skip: lmdbOnly('store.path names an LMDB data directory (a PostgreSQL store is store.url)') }, async (t) => {
    const noStore = await runCtl(['user', 'list', '--data', `${dir}/typo`], { cwd: dir })
    t.equal(noStore.code, 2)
    t.equal(noStore.stderr, `authctl: No authd data directory at ${dir}/typo: pass --data or set store.path (authd creates it on first start).\n`)

    writeFileSync(join(dir, 'a-file'), 'x')
    // --data naming a file (or a path below one), for every command, user add (which may create
    // the directory) included: authd's sentence, exit 2 (regression: the others said there was no
    // data directory, user add exited 1)
    for (const data of [`${dir}/a-file`, `${dir}/a-file/below`]) {
      for (const args of [['user', 'list'], ['keys', 'list', '--json'], ['user', 'add', 'ann@example.com', '--password-stdin']]) {
        const notDir = await runCtl([...args, '--data', data], { cwd: dir, input: 'a long enough passphrase\n' })
        t.equal(notDir.code, 2, `${args.join(' ')} --data ${data}`)
        t.equal(notDir.stderr, `authctl: Cannot use the data directory ${data}: a file is in the way (it must be a directory).\n`, 'one sentence, no --debug hint')
        t.equal(notDir.stdout, '')
      }
    }
    t.equal(readFileSync(join(dir, 'a-file'), 'utf8'), 'x', 'the file is untouched')

    // a data.mdb or lock.mdb that is a directory: no store, said as a sentence (it was raw EISDIR)
    for (const name of ['data.mdb', 'lock.mdb']) {
      const broken = join(dir, `broken-${name}`)
      mkdirSync(join(broken, name), { recursive: true })
      const plain = await runCtl(['user', 'list', '--data', broken], { cwd: dir })
      t.equal(plain.code, 1, name)
      t.equal(plain.stderr, `authctl: ${join(broken, name)} is not an authd store (not an LMDB data file).\n`, name)
    }

    const empty = join(dir, 'empty')
    mkdirSync(join(empty, 'lost+found'), { recursive: true })
    const fromEnv = await runCtl(['user', 'list', '--json'], { cwd: dir, env: { AUTHD_DATA: empty } })
    t.equal(fromEnv.code, 0, 'AUTHD_DATA names the data directory (a new filesystem\'s lost+found in it is no file of anyone\'s)')
    t.same(fromEnv.json(), { users: [] })

    // a store of another user's (0700, as authd makes it): authd's sentence, not the directory's
    // listing refused (regression: the check for files other than a store's ran first)
    const owned = join(dir, 'owned')
    t.equal((await runCtl(['user', 'add', 'ann@example.com', '--password-stdin', '--data', owned], { cwd: dir, input: `${PASSWORD}\n` })).code, 0)
    chmodSync(owned, 0o700)
    const root = process.getuid?.() === 0
    if (!root) chmodSync(owned, 0o000)
    t.teardown(() => chmodSync(owned, 0o700))
    const other = root ? await asNobody(['user', 'list', '--data', owned]) : await runCtl(['user', 'list', '--data', owned], { cwd: dir })
    t.equal(other.stderr, `authctl: Cannot use the data directory ${owned}: permission denied (run as the user that owns it).\n`)
    t.equal(other.code, 1, 'the operation failed, as for authd')
  })
})
