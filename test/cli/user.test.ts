/**
 * authctl user: add, list, show, disable, enable, passwd and rm (the second factor's reset and
 * the usage errors of every command: user-mfa-usage.test.ts, split off so that neither file runs
 * long on a loaded machine: each command is a process of its own).
 */
import t from 'tap'
import argon2 from 'argon2'
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { lmdbOnly, ON_PG, openTestStore } from '../helpers/app.js'
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
