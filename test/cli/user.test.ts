import t from 'tap'
import argon2 from 'argon2'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { AUTHCTL_BIN, lmdbOnly, ON_PG, openTestStore, storeEnv } from '../helpers/app.js'
import { ctlFor, PASSWORD, runCtl } from './run.js'

const ID = /^[A-Za-z0-9_-]{22}$/

t.test('user add creates a user from --password-stdin and prints it as fields or JSON', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  const added = await ctl(['user', 'add', ' Ann@Example.COM ', '--password-stdin'], { input: `${PASSWORD}\n` })
  t.equal(added.code, 0, added.stderr)
  t.match(added.stdout, /^id: +[A-Za-z0-9_-]{22}\nemail: +ann@example\.com\nUser created\.\n$/)
  // the test's directory was empty: this add made the store, and says where (LMDB only)
  t.equal(added.stderr, ON_PG ? '' : `authctl: created a new store in ${dir}\n`)

  const json = await ctl(['user', 'add', 'bob@example.com', '--password-stdin', '--json'], { input: `${PASSWORD}\r\n` })
  t.equal(json.code, 0, json.stderr)
  t.equal(json.stderr, '', 'the store exists now: nothing on stderr')
  const doc = json.json()
  t.match(doc, { user: { id: ID, email: 'bob@example.com', disabled: false, sessions: 0 } })
  t.match(doc.user.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

  // the stored hash is of exactly the line given: the \r\n is not part of the password
  const store = await openTestStore(t, dir)
  const bob = (await store.getUserByEmail('bob@example.com'))!
  t.equal(bob.id, doc.user.id)
  t.ok(await argon2.verify(bob.passwordHash, PASSWORD))
  t.notOk(await argon2.verify(bob.passwordHash, `${PASSWORD}\r`))
  t.match(bob.passwordHash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
})

t.test('user add that creates a new store says where, on stderr, once', { skip: lmdbOnly('an LMDB store is a directory authctl may create') }, async (t) => {
  const dir = t.testdir()
  // a relative --data, as after the README's quick start: the line names the absolute directory
  const first = await runCtl(['user', 'add', 'ann@example.com', '--password-stdin', '--json', '--data', 'data'], { cwd: dir, input: `${PASSWORD}\n` })
  t.equal(first.code, 0, first.stderr)
  t.equal(first.stderr, `authctl: created a new store in ${join(dir, 'data')}\n`)
  t.equal(first.json().user.email, 'ann@example.com', '--json: stdout is still the one JSON document')
  const again = await runCtl(['user', 'add', 'bob@example.com', '--password-stdin', '--data', 'data'], { cwd: dir, input: `${PASSWORD}\n` })
  t.equal(again.code, 0, again.stderr)
  t.equal(again.stderr, '', 'the store existed: no line')
  // a store that existed but is refused an add (a taken email) says nothing about creating
  const taken = await runCtl(['user', 'add', 'ann@example.com', '--password-stdin', '--data', 'data'], { cwd: dir, input: `${PASSWORD}\n` })
  t.equal(taken.stderr, 'authctl: A user with email ann@example.com already exists.\n')

  // an add refused into a store not made yet makes none: the email and password are checked first
  const refused: Array<[string, string[], string, number]> = [
    ['invalid email', ['user', 'add', 'not-an-email', '--password-stdin'], `${PASSWORD}\n`, 1],
    ['short password', ['user', 'add', 'c@example.com', '--password-stdin'], 'short\n', 1],
    ['white space alone', ['user', 'add', 'c@example.com', '--password-stdin'], '          \n', 1],
    ['common password', ['user', 'add', 'c@example.com', '--password-stdin'], 'password123\n', 1],
    ['no terminal and no --password-stdin', ['user', 'add', 'c@example.com'], `${PASSWORD}\n`, 2],
  ]
  for (const [name, args, input, code] of refused) {
    const r = await runCtl([...args, '--data', 'fresh'], { cwd: dir, input })
    t.equal(r.code, code, `${name}: ${r.stderr}`)
    t.notMatch(r.stderr, /created a new store/, `${name}: no store made`)
    t.notOk(existsSync(join(dir, 'fresh')), `${name}: no data directory`)
  }
})

t.test('user add refuses bad input with one sentence and exit 1, or exit 2 for usage', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  t.equal((await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)

  const cases: Array<[string, string[], string, number, RegExp]> = [
    ['taken, in another case and Unicode form', ['user', 'add', 'ＡＮＮ@example.com', '--password-stdin'], `${PASSWORD}\n`, 1, /^authctl: A user with email ann@example\.com already exists\.\n$/],
    ['invalid email', ['user', 'add', 'not-an-email', '--password-stdin'], `${PASSWORD}\n`, 1, /^authctl: "not-an-email" is not a valid email address: it must contain exactly one @\.\n$/],
    ['short password', ['user', 'add', 'c@example.com', '--password-stdin'], 'short\n', 1, /^authctl: Password must be at least 8 characters\.\n$/],
    ['common password', ['user', 'add', 'c@example.com', '--password-stdin'], 'password123\n', 1, /^authctl: Password is too common\.\n$/],
    ['empty standard input', ['user', 'add', 'c@example.com', '--password-stdin'], '', 1, /^authctl: No password was given on standard input\.\n$/],
    ['no terminal and no --password-stdin', ['user', 'add', 'c@example.com'], `${PASSWORD}\n`, 2, /^authctl: Standard input is not a terminal: pass --password-stdin/],
    ['a password as an argument', ['user', 'add', 'c@example.com', PASSWORD], '', 2, /^authctl: Too many arguments/],
    ['unknown flag', ['user', 'add', 'c@example.com', '--password', 'x'], '', 2, /^authctl: Unknown option '--password'\.\n$/],
    ['missing email', ['user', 'add'], '', 2, /^authctl: Missing required argument 'email'\.\n$/],
  ]
  for (const [name, args, input, code, stderr] of cases) {
    const r = await ctl(args, { input })
    t.equal(r.code, code, `${name}: exit ${code}`)
    t.match(r.stderr, stderr, `${name}: stderr`)
    t.equal(r.stdout, '', `${name}: nothing on stdout`)
  }
  const list = await ctl(['user', 'list', '--json'])
  t.same(list.json().users.map((u: { email: string }) => u.email), ['ann@example.com'], 'nothing else was created')
})

t.test('what was typed is echoed with the characters a terminal would act on or hide escaped', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  t.equal((await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  const cases: Array<[string, string[], string, number]> = [
    // a right-to-left override would show the address backwards after it
    ['an email with a right-to-left override', ['user', 'add', 'a\u202eb@example.com', '--password-stdin'], 'authctl: "a\\u202eb@example.com" is not a valid email address: it contains an invisible or direction-changing character (U+202E).\n', 1],
    ['a reference with a zero-width space and an escape sequence', ['user', 'show', 'x\u200by\u001b[31m'], 'authctl: No user with email or id "x\\u200by\\u001b[31m".\n', 1],
    ['a limits target with a line separator', ['limits', 'clear', 'a\u2028b'], 'authctl: "a\\u2028b" is neither an email address nor an IP address.\n', 2],
    ['an unknown command (commander\'s own message)', ['bad\u202ecmd'], "authctl: Unknown command 'bad\\u202ecmd'.\n", 2],
  ]
  for (const [name, args, stderr, code] of cases) {
    const r = await ctl(args, { input: `${PASSWORD}\n` })
    t.equal(r.code, code, `${name}: exit ${code}`)
    t.equal(r.stderr, stderr, `${name}: stderr`)
  }
})

t.test('user add and passwd refuse a password of white space alone, as register does', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  const ann = (await ctl(['user', 'add', 'ann@example.com', '--password-stdin', '--json'], { input: `${PASSWORD}\n` })).json().user
  // long enough for passwords.min_length, but register and login take it for no password at all
  for (const blank of [' '.repeat(10), '\t'.repeat(12), '\u3000'.repeat(9)]) {
    const add = await ctl(['user', 'add', 'bob@example.com', '--password-stdin'], { input: `${blank}\n` })
    t.equal(add.code, 1, `add ${JSON.stringify(blank)}: exit 1, a refused password`)
    t.equal(add.stderr, 'authctl: The password is white space alone: no one could sign in with it.\n')
    t.equal(add.stdout, '')
    const passwd = await ctl(['user', 'passwd', 'ann@example.com', '--password-stdin'], { input: `${blank}\n` })
    t.equal(passwd.code, 1, `passwd ${JSON.stringify(blank)}: exit 1`)
    t.equal(passwd.stderr, 'authctl: The password is white space alone: no one could sign in with it.\n')
    t.equal(passwd.stdout, '')
  }
  const list = await ctl(['user', 'list', '--json'])
  t.same(list.json().users.map((u: { email: string }) => u.email), ['ann@example.com'], 'no user was created')
  const store = await openTestStore(t, dir)
  t.ok(await argon2.verify((await store.getUser(ann.id))!.passwordHash, PASSWORD), 'the password is unchanged')
  // spaces around other characters are part of a password, as in register
  t.equal((await ctl(['user', 'add', 'cat@example.com', '--password-stdin'], { input: `  ${PASSWORD}  \n` })).code, 0)
})

t.test('user list and show: a table by default, one JSON document with --json', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  const empty = await ctl(['user', 'add', 'zoe@example.com', '--password-stdin', '--json'], { input: PASSWORD })
  t.equal(empty.code, 0, 'a password without a trailing newline is read to the end of input')
  await ctl(['user', 'add', 'amy@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })
  const zoe = empty.json().user

  const table = await ctl(['user', 'list'])
  t.equal(table.code, 0)
  const lines = table.stdout.trimEnd().split('\n')
  t.match(lines[0], /^ID +EMAIL +CREATED +DISABLED +2FA +SESSIONS$/)
  t.equal(lines.length, 3)
  t.match(lines[1], new RegExp(`^${zoe.id} +zoe@example\\.com +\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ +no +off +0$`), 'oldest first')
  t.match(lines[2], /^[A-Za-z0-9_-]{22} +amy@example\.com /)

  const json = await ctl(['user', 'list', '--json'])
  const users = json.json().users
  t.same(users.map((u: { email: string }) => u.email), ['zoe@example.com', 'amy@example.com'])
  t.same(Object.keys(users[0]).sort(), ['createdAt', 'disabled', 'email', 'id', 'mfaEnabled', 'sessions', 'updatedAt'])

  const byEmail = await ctl(['user', 'show', 'ZOE@example.com'])
  t.equal(byEmail.code, 0)
  t.match(byEmail.stdout, new RegExp(`^id: +${zoe.id}\\nemail: +zoe@example\\.com\\ncreated: .*\\nupdated: .*\\ndisabled: +no\\nsessions: +0\\n2fa: +off\\n$`))
  const byId = await ctl(['user', 'show', zoe.id, '--json'])
  t.same(byId.json(), { user: zoe })

  const unknown = await ctl(['user', 'show', 'nobody@example.com', '--json'])
  t.equal(unknown.code, 1)
  t.equal(unknown.stderr, 'authctl: No user with email or id "nobody@example.com".\n')
  t.equal(unknown.stdout, '', '--json prints nothing on failure')

  const emptyDir = join(dir, 'empty')
  mkdirSync(emptyDir)
  const none = await ctlFor(emptyDir)(['user', 'list'])
  t.equal(none.stdout, 'No users.\n')
})

t.test('user disable, enable, passwd and rm, with their error cases', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  const ann = (await ctl(['user', 'add', 'ann@example.com', '--password-stdin', '--json'], { input: `${PASSWORD}\n` })).json().user

  const disabled = await ctl(['user', 'disable', 'ann@example.com'])
  t.equal(disabled.code, 0)
  t.equal(disabled.stdout, `Disabled ann@example.com (${ann.id}); revoked 0 sessions.\n`)
  t.match((await ctl(['user', 'show', ann.id, '--json'])).json(), { user: { disabled: true } })
  t.match((await ctl(['user', 'list'])).stdout, /ann@example\.com +\S+ +yes +off +0/)

  const enabled = await ctl(['user', 'enable', ann.id, '--json'])
  t.match(enabled.json(), { user: { id: ann.id, disabled: false } })

  const newPassword = 'another long passphrase'
  const passwd = await ctl(['user', 'passwd', 'ann@example.com', '--password-stdin', '--json'], { input: `${newPassword}\n` })
  t.equal(passwd.code, 0, passwd.stderr)
  t.match(passwd.json(), { user: { id: ann.id }, revokedSessions: 0 })
  const weak = await ctl(['user', 'passwd', 'ann@example.com', '--password-stdin'], { input: 'qwerty\n' })
  t.equal(weak.code, 1)
  t.equal(weak.stderr, 'authctl: Password must be at least 8 characters.\n')
  {
    const store = await openTestStore(null, dir)
    const hash = (await store.getUser(ann.id))!.passwordHash
    await store.close()
    t.ok(await argon2.verify(hash, newPassword), 'the new password is stored')
  }

  for (const cmd of [['user', 'disable'], ['user', 'enable'], ['user', 'passwd'], ['user', 'rm', '--yes'], ['user', 'show']]) {
    // an unknown user is reported before any password is asked for
    const r = await ctl([...cmd, 'ghost@example.com'])
    t.equal(r.code, 1, `${cmd.join(' ')}: exit 1`)
    t.equal(r.stderr, 'authctl: No user with email or id "ghost@example.com".\n')
  }

  const noYes = await ctl(['user', 'rm', 'ann@example.com'], { input: 'y\n' })
  t.equal(noYes.code, 2, 'without --yes and without a terminal it refuses')
  t.equal(noYes.stderr, `authctl: Will not delete user ann@example.com (${ann.id}) and its 0 sessions without confirmation: pass --yes (standard input is not a terminal).\n`)
  t.equal((await ctl(['user', 'show', ann.id])).code, 0, 'still there')

  const rm = await ctl(['user', 'rm', 'ann@example.com', '--yes', '--json'])
  t.equal(rm.code, 0)
  t.match(rm.json(), { removed: { id: ann.id, email: 'ann@example.com' }, revokedSessions: 0 })
  t.equal((await ctl(['user', 'show', ann.id])).code, 1, 'gone')
  const again = await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })
  t.equal(again.code, 0, 'the email is free again')
})

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
    mkdirSync(empty)
    const fromEnv = await runCtl(['user', 'list', '--json'], { cwd: dir, env: { AUTHD_DATA: empty } })
    t.equal(fromEnv.code, 0, 'AUTHD_DATA names the data directory')
    t.same(fromEnv.json(), { users: [] })
  })
})
