/**
 * Runs the real authctl (built dist/, via bin/authctl.js) as a child process, the way an admin
 * does: argv, environment, standard input; resolves with the exit code and both outputs. With
 * TEST_STORE_BACKEND=postgres, `--data <dir>` also puts it on the database of `dir`, the one the
 * test's daemons and apps on `dir` use (test/helpers/app.ts, storeEnv).
 */
import { spawn } from 'node:child_process'
import { AUTHCTL_BIN, storeEnv } from '../helpers/app.js'

export interface CtlResult {
  code: number | null
  /** the signal that ended it (a crash: SIGBUS, SIGSEGV), or null */
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
  /** stdout parsed as the one JSON document */
  json(): any
}

export interface CtlOptions {
  /** written to stdin, then stdin is closed; without it stdin is empty (not a terminal) */
  input?: string
  env?: Record<string, string>
  cwd?: string
  /** extra node flags, e.g. --import */
  nodeArgs?: string[]
  timeoutMs?: number
}

export async function runCtl(args: string[], opts: CtlOptions = {}): Promise<CtlResult> {
  // on PostgreSQL (TEST_STORE_BACKEND), `--data <dir>` names the database bound to `dir`
  const data = args.indexOf('--data')
  const bound = data >= 0 && data + 1 < args.length && opts.env?.AUTHD_STORE_BACKEND === undefined
  const env = bound ? { ...(await storeEnv(args[data + 1]!)), ...opts.env } : opts.env
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...(opts.nodeArgs ?? []), AUTHCTL_BIN, ...args], {
      cwd: opts.cwd ?? process.cwd(),
      // only what the test gives: no AUTHD_* from the machine running the tests
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    const timer = setTimeout(() => {
      proc.kill('SIGKILL')
      reject(new Error(`authctl ${args.join(' ')} did not finish in time\nstdout: ${stdout}\nstderr: ${stderr}`))
    }, opts.timeoutMs ?? 30_000)
    proc.on('error', reject)
    proc.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({
        code,
        signal,
        stdout,
        stderr,
        json: () => {
          try {
            return JSON.parse(stdout)
          } catch {
            throw new Error(`stdout is not one JSON document:\n${stdout}\nstderr: ${stderr}`)
          }
        },
      })
    })
    proc.stdin.on('error', () => {}) // authctl may exit before reading its input
    proc.stdin.end(opts.input ?? '')
  })
}

/** authctl bound to one data directory (appends --data <dir>) */
export function ctlFor(dir: string, base: CtlOptions = {}) {
  return async (args: string[], opts: CtlOptions = {}): Promise<CtlResult> =>
    runCtl([...args, '--data', dir], { cwd: dir, ...base, ...opts, env: { ...(await storeEnv(dir)), ...base.env, ...opts.env } })
}

export const PASSWORD = 'correct horse battery staple'

/** polls `check` until it holds, at most `limitMs`; resolves with the time it took, or -1 */
export async function until(check: () => Promise<boolean>, limitMs = 1000): Promise<number> {
  const start = performance.now()
  for (let i = 0; i < 200; i++) {
    if (await check()) return performance.now() - start
    if (performance.now() - start > limitMs) return -1
    await new Promise((r) => setTimeout(r, 20))
  }
  return -1
}
