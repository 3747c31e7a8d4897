import t from 'tap'
import { spawn } from 'node:child_process'
import { PassThrough } from 'node:stream'
import argon2 from 'argon2'
import { exitCodes } from '../../src/exit-codes.js'
import { promptHidden, readFirstLine, readNewPassword, readPassword, readPasswordFromStdin, type PasswordIo } from '../../src/cli/password-input.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { AUTHCTL_BIN } from '../helpers/app.js'

const piped = (text: string | Buffer): PassThrough => {
  const s = new PassThrough()
  s.end(text)
  return s
}

t.test('--password-stdin reads to the first newline or the end; one \\n or \\r\\n is not part of it', async (t) => {
  t.equal(await readPasswordFromStdin(piped('s3cret pass\n')), 's3cret pass')
  t.equal(await readPasswordFromStdin(piped('s3cret pass\r\n')), 's3cret pass')
  t.equal(await readPasswordFromStdin(piped('s3cret pass')), 's3cret pass', 'end of input without a newline')
  t.equal(await readPasswordFromStdin(piped('first line\nsecond line\n')), 'first line', 'only the first line')
  t.equal(await readPasswordFromStdin(piped('  spaces kept  \n')), '  spaces kept  ')
  t.equal(await readPasswordFromStdin(piped('ends in cr\r')), 'ends in cr\r', 'a lone \\r at the end of input is part of it')
  t.equal(await readPasswordFromStdin(piped('pässwörd ✓\n')), 'pässwörd ✓')

  const split = new PassThrough()
  const reading = readPasswordFromStdin(split)
  split.write(Buffer.from('päss', 'utf8').subarray(0, 2)) // "p" and half of "ä"
  split.write(Buffer.concat([Buffer.from('päss', 'utf8').subarray(2), Buffer.from('word\r')]))
  split.write('\nrest')
  t.equal(await reading, 'pässword', 'chunks split inside a character and between \\r and \\n')

  await t.rejects(readPasswordFromStdin(piped('')), { message: 'No password was given on standard input.' })
  await t.rejects(readPasswordFromStdin(piped('\n')), { message: 'No password was given on standard input.' })
  await t.rejects(readPasswordFromStdin(piped(Buffer.from([0x70, 0xff, 0x0a]))), { message: 'Standard input is not valid UTF-8.' })
  await t.rejects(readPasswordFromStdin(piped('x'.repeat(70_000))), { message: 'The line on standard input is longer than 65536 bytes.' })
  t.equal(await readFirstLine(piped(''), 10), null)
})

/** a terminal double: records raw mode and what is written to it, and both in the order they came */
function fakeTerminal(): { io: PasswordIo; input: PassThrough & { isTTY: boolean }; shown: () => string; raw: boolean[]; order: string[] } {
  const input = Object.assign(new PassThrough(), { isTTY: true })
  const raw: boolean[] = []
  const order: string[] = []
  ;(input as unknown as { setRawMode: (m: boolean) => void }).setRawMode = (m) => {
    raw.push(m)
    order.push(`raw ${m}`)
  }
  let out = ''
  const prompt = (s: string): void => {
    out += s
    order.push(JSON.stringify(s))
  }
  return { io: { input, prompt }, input, shown: () => out, raw, order }
}

t.test('the hidden prompt reads in raw mode, edits with backspace and Ctrl-U, and echoes nothing', async (t) => {
  const term = fakeTerminal()
  const asking = promptHidden(term.io, 'Password: ')
  term.input.write('wrong')
  term.input.write('\u0015') // Ctrl-U: start over
  term.input.write('hunter22x\u007f') // backspace removes the x
  term.input.write('\u001b[A') // an arrow key is ignored
  term.input.write('!\rignored')
  t.equal(await asking, 'hunter22!')
  t.equal(term.shown(), 'Password: \n', 'only the prompt and a newline reach the terminal')
  t.same(term.raw, [true, false], 'raw mode on while typing, off after')
  // regression: the question showed before raw mode was on, and on a busy machine the terminal
  // echoed a password typed as soon as it showed (the real-terminal test below saw it)
  t.same(term.order, ['raw true', '"Password: "', 'raw false', '"\\n"'], 'raw mode on before the question shows')

  const cancelled = fakeTerminal()
  const c = promptHidden(cancelled.io, 'Password: ')
  cancelled.input.write('abc\u0003')
  await t.rejects(c, { message: 'Cancelled.' })
  t.same(cancelled.raw, [true, false], 'the terminal is restored after Ctrl-C')
})

t.test('a new password is asked twice and must match; without a terminal --password-stdin is required', async (t) => {
  const term = fakeTerminal()
  const asking = readNewPassword({ passwordStdin: false, io: term.io })
  term.input.write('a long passphrase\r')
  await new Promise((r) => setImmediate(r))
  term.input.write('a long passphrase\r')
  t.equal(await asking, 'a long passphrase')
  t.equal(term.shown(), 'New password: \nRepeat the new password: \n')

  // both lines in one read (pasted, or typed ahead over a slow link): the repeat is not lost
  for (const [what, text] of [['\\r', 'a long passphrase\ra long passphrase\r'], ['\\r\\n', 'a long passphrase\r\na long passphrase\r\n']]) {
    const pasted = fakeTerminal()
    const both = readNewPassword({ passwordStdin: false, io: pasted.io })
    pasted.input.write(text)
    t.equal(await both, 'a long passphrase', `both lines in one read, ending in ${what}`)
    t.equal(pasted.shown(), 'New password: \nRepeat the new password: \n')
    t.same(pasted.raw, [true, false, true, false], 'the terminal restored after each')
  }
  const half = fakeTerminal()
  const halfRead = readNewPassword({ passwordStdin: false, io: half.io })
  half.input.write('a long passphrase\ra long')
  await new Promise((r) => setImmediate(r))
  half.input.write(' passphrase\r')
  t.equal(await halfRead, 'a long passphrase', 'the repeat begun in the first read and ended in the next')

  const mismatch = fakeTerminal()
  const m = readNewPassword({ passwordStdin: false, io: mismatch.io })
  mismatch.input.write('a long passphrase\r')
  await new Promise((r) => setImmediate(r))
  mismatch.input.write('a long passphrasf\r')
  await t.rejects(m, { name: 'AppError', code: 'PASSWORDS_DIFFER', message: 'The two passwords do not match.' })
  t.equal(exitCodes.PASSWORDS_DIFFER, 1, 'the operation failed')

  const notTty: PasswordIo = { input: piped('pw\n'), prompt: () => {} }
  await t.rejects(readNewPassword({ passwordStdin: false, io: notTty }), {
    name: 'AppError',
    code: 'PASSWORD_NEEDS_TERMINAL',
    message: 'Standard input is not a terminal: pass --password-stdin and write the password to standard input.',
  })
  await t.rejects(readPassword({ passwordStdin: false, io: { input: piped('pw\n'), prompt: () => {} } }), { name: 'AppError', code: 'PASSWORD_NEEDS_TERMINAL' })
  t.equal(exitCodes.PASSWORD_NEEDS_TERMINAL, 2, 'a usage error')
  t.equal(await readPassword({ passwordStdin: true, io: { input: piped('pw\n'), prompt: () => {} } }), 'pw')
})

t.test('on a real terminal, user add asks twice and the password never shows', { skip: process.platform !== 'linux' && 'needs script(1) from util-linux' }, async (t) => {
  const dir = t.testdir()
  const password = 'pty secret phrase 42'
  // script(1) runs authctl on a pseudo-terminal; what it prints is what the admin would see
  const proc = spawn('script', ['-qfec', `${process.execPath} ${AUTHCTL_BIN} user add pty@example.com --data ${dir}`, '/dev/null'], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TERM: 'dumb' },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let seen = ''
  proc.stdout.on('data', (c: Buffer) => (seen += c.toString()))
  proc.stderr.on('data', (c: Buffer) => (seen += c.toString()))
  const exited = new Promise<number | null>((r) => proc.on('close', r))
  const waitFor = async (text: string): Promise<void> => {
    for (let i = 0; i < 300 && !seen.includes(text); i++) await new Promise((r) => setTimeout(r, 50))
    if (!seen.includes(text)) throw new Error(`no ${JSON.stringify(text)} in ${JSON.stringify(seen)}`)
  }
  t.teardown(() => {
    if (proc.exitCode === null) proc.kill('SIGKILL')
  })
  // type only once the prompt shows: before raw mode, the terminal itself would echo
  await waitFor('New password: ')
  proc.stdin.write(`${password}\r`)
  await waitFor('Repeat the new password: ')
  proc.stdin.write(`${password}\r`)
  await waitFor('User created.')
  proc.stdin.end()
  t.equal(await exited, 0, seen)
  t.notMatch(seen, password, 'the password was not echoed')
  t.notMatch(seen, /\*{4}/, 'nor masked')
  const store = await openLmdbStore({ path: dir })
  const user = await store.getUserByEmail('pty@example.com')
  await store.close()
  t.ok(user !== undefined && (await argon2.verify(user.passwordHash, password)), 'the typed password is the stored one')
})
