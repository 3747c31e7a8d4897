/**
 * The real `authctl tui` (built dist/) in a real terminal: tmux on its own socket, an 80×24
 * window, keys sent with send-keys and the screen read with capture-pane. It adds a user, sees
 * a user added by `authctl user add` from another process, rotates a key, is squeezed below 80
 * columns and widened again, and quits with the terminal given back.
 */
import { execFile, execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { AUTHCTL_BIN, ROOT } from '../helpers/app.js'

const run = promisify(execFile)

function hasTmux(): boolean {
  try {
    execFileSync('tmux', ['-V'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

const skip = hasTmux() ? false : 'tmux is not installed: this end-to-end test of `authctl tui` needs it (.ci/run installs it)'

/** runs authctl to completion, optionally with standard input */
function authctl(args: string[], input?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [AUTHCTL_BIN, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH, HOME: process.env.HOME } })
    let stdout = ''
    let stderr = ''
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    p.on('error', reject)
    p.on('exit', (code) => resolve({ code, stdout, stderr }))
    p.stdin.end(input ?? '')
  })
}

t.test('authctl tui in an 80x24 tmux window: add a user, see another appear, rotate a key, quit', { skip }, async (t) => {
  t.ok(existsSync(join(ROOT, 'dist/cli/commands/tui.js')), 'dist/ is built (npm run build)')
  const dir = t.testdir()
  const data = join(dir, 'data')
  const socket = `authd-test-${process.pid}`
  const tmux = (...args: string[]) => run('tmux', ['-L', socket, ...args])
  t.teardown(async () => {
    await tmux('kill-server').catch(() => {})
  })

  // a store with one user and one signing key, made by the commands
  t.equal((await authctl(['user', 'add', 'first@example.com', '--password-stdin', '--data', data], 'Tr0ub4dor&3-first\n')).code, 0)
  t.equal((await authctl(['keys', 'rotate', '--data', data])).code, 0)
  const keysBefore = (JSON.parse((await authctl(['keys', 'list', '--json', '--data', data])).stdout) as { keys: Array<{ kid: string }> }).keys
  t.equal(keysBefore.length, 1)

  // the pane's shell prints the exit code once authctl is gone, and keeps the pane for reading it
  const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(AUTHCTL_BIN)} tui --data ${JSON.stringify(data)}; echo "TUI-EXITED:$?"; sleep 120`
  await tmux('-f', '/dev/null', 'new-session', '-d', '-x', '80', '-y', '24', '-s', 'tui', command)

  const screen = async (): Promise<string> => (await tmux('capture-pane', '-p', '-t', 'tui')).stdout
  /** polls the screen (every 100 ms, at most `ms`) until it shows `want` */
  const waitFor = async (want: string | RegExp, ms = 15_000): Promise<string> => {
    const deadline = Date.now() + ms
    for (;;) {
      const s = await screen()
      if (typeof want === 'string' ? s.includes(want) : want.test(s)) return s
      if (Date.now() > deadline) throw new Error(`the screen never showed ${String(want)}; it shows:\n${s}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  const send = async (...keys: string[]): Promise<void> => {
    await tmux('send-keys', '-t', 'tui', ...keys)
  }
  const type = async (text: string): Promise<void> => {
    await tmux('send-keys', '-t', 'tui', '-l', text)
  }

  let s = await waitFor('1 user · 0 sessions · 1 key', 30_000)
  t.match(s, /\[1 Users\]/)
  t.match(s, /> first@example\.com\s+active/)
  t.ok(s.split('\n').every((l) => [...l].length <= 80), 'nothing wider than the window')

  // add a user through the form
  await send('a')
  await waitFor('Add user')
  await type('second@example.com')
  await send('Enter')
  await waitFor(/> Password/)
  await type('Tr0ub4dor&3-second')
  await send('Enter')
  await waitFor(/> Repeat/)
  await type('Tr0ub4dor&3-second')
  s = await waitFor(/Repeat\s+\*{18}/)
  t.notMatch(s, 'Tr0ub4dor', 'the password is never on screen')
  await send('Enter')
  s = await waitFor('Added second@example.com.', 30_000)
  t.match(s, /> second@example\.com\s+active/)
  t.match(s, '2 users')

  // a user added by the command in another process shows up on its own
  t.equal((await authctl(['user', 'add', 'third@example.com', '--password-stdin', '--data', data], 'Tr0ub4dor&3-third\n')).code, 0)
  s = await waitFor(/third@example\.com\s+active/, 5_000)
  t.match(s, '3 users')

  // rotate the signing key
  await send('3')
  s = await waitFor('[3 Keys]')
  t.match(s, new RegExp(`> ${keysBefore[0].kid}\\s+ES256\\s+active`))
  await send('r')
  s = await waitFor('Rotated: key', 30_000)
  s = await waitFor(/^ {2}2 keys$/m)
  // the new key is next (it signs tokens.key_lead later) and selected; the old one still signs
  t.match(s, /> \S+\s+ES256\s+next/)
  t.match(s, new RegExp(`${keysBefore[0].kid}\\s+ES256\\s+active`))

  // a terminal made narrower than 80 columns says what the UI needs; made wide again, the UI is back
  await tmux('resize-window', '-t', 'tui', '-x', '60', '-y', '24')
  s = await waitFor('authctl tui needs 80×24 (this terminal is 60×24)')
  t.notMatch(s, 'ES256', 'the layout is not drawn broken')
  await tmux('resize-window', '-t', 'tui', '-x', '80', '-y', '24')
  s = await waitFor('[3 Keys]')
  t.notMatch(s, 'authctl tui needs')
  t.ok(s.split('\n').every((l) => [...l].length <= 80), 'nothing wider than the window')

  // quit: the process ends with 0 and the shell's screen is back (the UI's lines are gone)
  await send('q')
  s = await waitFor('TUI-EXITED:0')
  t.notMatch(s, '[3 Keys]', 'the alternate screen was left')

  // what the UI did is in the store, for every other command to see
  const { users } = JSON.parse((await authctl(['user', 'list', '--json', '--data', data])).stdout) as { users: Array<{ email: string }> }
  t.same(users.map((u) => u.email).sort(), ['first@example.com', 'second@example.com', 'third@example.com'])
  const keysAfter = (JSON.parse((await authctl(['keys', 'list', '--json', '--data', data])).stdout) as { keys: Array<{ state: string }> }).keys
  t.same(keysAfter.map((k) => k.state).sort(), ['active', 'next'])
})

t.test('authctl tui refuses to run without a terminal', async (t) => {
  t.ok(existsSync(join(ROOT, 'dist/cli/commands/tui.js')), 'dist/ is built (npm run build)')
  const dir = t.testdir()
  t.equal((await authctl(['user', 'add', 'x@example.com', '--password-stdin', '--data', dir], 'Tr0ub4dor&3-x\n')).code, 0)
  const r = await authctl(['tui', '--data', dir])
  t.equal(r.code, 2)
  t.equal(r.stdout, '')
  t.equal(r.stderr, 'authctl: The terminal UI needs an interactive terminal: run authctl tui without redirecting its input or output.\n')
})
