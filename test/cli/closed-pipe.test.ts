/**
 * `authctl audit list | head`: a reader that stops early closes the pipe, and authctl's next
 * write fails with EPIPE. That is the reader's choice: authctl ends quietly with the exit code it
 * had, where it used to die on an unhandled 'error' event with a stack trace.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { AUTHCTL_BIN, storeEnv } from '../helpers/app.js'
import { ctlFor, PASSWORD } from './run.js'

/** authctl with its standard output closed before it writes: its exit code and standard error */
function closedStdout(args: string[], env: Record<string, string>): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [AUTHCTL_BIN, ...args], { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    proc.stdout.destroy()
    let stderr = ''
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    proc.once('error', reject)
    proc.once('close', (code, signal) => resolve({ code, signal, stderr }))
  })
}

t.test('a reader that closes the pipe early ends authctl quietly, with its exit code', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  for (const email of ['ann@example.com', 'bob@example.com']) t.equal((await ctl(['user', 'add', email, '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  // on PostgreSQL (TEST_STORE_BACKEND), the database bound to `dir`
  const env = await storeEnv(dir)
  for (const args of [['--help'], ['user', 'list'], ['audit', 'list'], ['sessions', 'list', '--json']]) {
    const r = await closedStdout([...args, '--data', dir], env)
    t.equal(r.signal, null, `${args.join(' ')}: not killed`)
    t.equal(r.code, 0, `${args.join(' ')}: exit 0`)
    t.equal(r.stderr, '', `${args.join(' ')}: nothing on stderr, no stack trace`)
  }
})
