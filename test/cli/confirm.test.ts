/**
 * The question before a destructive command (src/cli/confirm.ts; README, "Administer with
 * authctl"): `--yes` skips it; without a terminal it is refused with a usage error naming the
 * action and --yes; on a terminal only y or yes (any case, spaces around) goes ahead, anything
 * else, an empty line or the end of input cancels it.
 */
import t from 'tap'
import { PassThrough } from 'node:stream'
import { createConfirm } from '../../src/cli/confirm.js'
import { exitCodes } from '../../src/exit-codes.js'
import type { PasswordIo } from '../../src/cli/password-input.js'

const piped = (text: string | Buffer): PassThrough => {
  const s = new PassThrough()
  s.end(text)
  return s
}

function fakeTerminal(): { io: PasswordIo; input: PassThrough & { isTTY: boolean }; shown: () => string } {
  const input = Object.assign(new PassThrough(), { isTTY: true })
  let out = ''
  return { io: { input, prompt: (s) => (out += s) }, input, shown: () => out }
}

t.test('--yes goes ahead without asking or reading, terminal or not', async (t) => {
  for (const isTTY of [true, false]) {
    const input = Object.assign(new PassThrough(), { isTTY })
    let shown = ''
    await t.resolves(createConfirm({ input, prompt: (s) => (shown += s) })('delete user a', true))
    t.equal(shown, '', `isTTY ${isTTY}: nothing asked`)
    t.equal(input.listenerCount('data'), 0, `isTTY ${isTTY}: the input is not read`)
  }
})

t.test('without a terminal it is refused, naming the action and --yes, as a usage error, and nothing is asked', async (t) => {
  for (const input of [piped('y\n'), Object.assign(piped('yes\n'), { isTTY: false })]) {
    let shown = ''
    await t.rejects(createConfirm({ input, prompt: (s) => (shown += s) })('delete user a', false), {
      name: 'AppError',
      code: 'CONFIRMATION_NEEDED',
      message: 'Will not delete user a without confirmation: pass --yes (standard input is not a terminal).',
    })
    t.equal(shown, '', 'no question')
  }
  t.equal(exitCodes.CONFIRMATION_NEEDED, 2, 'a usage error')
})

t.test('on a terminal: the action as a question, its first letter upper case, No by default', async (t) => {
  const term = fakeTerminal()
  const asked = createConfirm(term.io)('revoke key kid-1 (the active key: kid-2 takes its place)', false)
  term.input.write('y\n')
  await asked
  t.equal(term.shown(), 'Revoke key kid-1 (the active key: kid-2 takes its place)? [y/N] ')
})

t.test('only y or yes goes ahead, in any case, with spaces around or a \\r\\n', async (t) => {
  for (const answer of ['y\n', 'Y\n', 'yes\n', 'YES\n', 'Yes\n', '  y  \n', '\tyes\n', 'y\r\n']) {
    const term = fakeTerminal()
    const asked = createConfirm(term.io)('delete user a', false)
    term.input.write(answer)
    await t.resolves(asked, JSON.stringify(answer))
  }
})

t.test('anything else cancels: no, an empty line, a longer word, y inside a sentence', async (t) => {
  for (const answer of ['n\n', 'no\n', '\n', 'ye\n', 'yy\n', 'yess\n', 'yes please\n', 'ok\n', 'oui\n', 'y y\n']) {
    const term = fakeTerminal()
    const asked = createConfirm(term.io)('delete user a', false)
    term.input.write(answer)
    await t.rejects(asked, { name: 'AppError', code: 'NOT_CONFIRMED', message: 'Cancelled: did not delete user a.' }, JSON.stringify(answer))
  }
  t.equal(exitCodes.NOT_CONFIRMED, 1, 'the operation failed')
})

t.test('the end of input without an answer (Ctrl-D) cancels', async (t) => {
  const term = fakeTerminal()
  const asked = createConfirm(term.io)('delete user a', false)
  term.input.end()
  await t.rejects(asked, { code: 'NOT_CONFIRMED', message: 'Cancelled: did not delete user a.' })
})

t.test('only the first line is the answer: what follows it is not read as one', async (t) => {
  const term = fakeTerminal()
  const asked = createConfirm(term.io)('delete user a', false)
  term.input.write('n\ny\n')
  await t.rejects(asked, { code: 'NOT_CONFIRMED' })
})

t.test('an answer longer than 1 KB is refused as too long, not read on', async (t) => {
  const term = fakeTerminal()
  const asked = createConfirm(term.io)('delete user a', false)
  term.input.write(`${'y'.repeat(2000)}\n`)
  await t.rejects(asked, { code: 'STDIN_LINE_TOO_LONG', message: 'The line on standard input is longer than 1024 bytes.' })
})
