/**
 * The real authd (built dist/, bin/authd.js) as a child process, for every test that spawns it,
 * with only the environment the test gives (PATH and HOME are passed through):
 *
 * - spawnDaemon: `authd start` on port 0 (or a Unix socket), in the data directory `dir` (and, with
 *   TEST_STORE_BACKEND=postgres, the database bound to `dir`: storeEnv in app.ts). It resolves
 *   once authd logs "authd listening on <url>", a message both log formats (JSON, and --dev's
 *   pretty lines) carry; it is killed with the test if still running.
 * - runAuthd: any authd command to its end (version, check-config, a start that must fail), for
 *   its exit code and outputs.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { createServer as createNetServer } from 'node:net'
import type { Test } from 'tap'
import { AUTHD_BIN, storeEnv } from './app.js'

export interface Daemon {
  /** http://127.0.0.1:<port>, or unix:<path> on a socket */
  url: string
  /** the TCP port; 0 on a Unix socket */
  port: number
  proc: ChildProcess
  /** stdout and stderr so far, interleaved */
  output(): string
  /** stderr alone so far (a line of it may be split by stdout in output()) */
  stderr(): string
  /** kill -9 */
  crash(): Promise<void>
  /** SIGTERM and wait for the exit code */
  stop(): Promise<number | null>
}

export interface DaemonOptions {
  /** AUTHD_* variables (PATH and HOME are passed through; nothing else of the test's environment) */
  env?: Record<string, string>
  /** more arguments after `start --data <dir>`, e.g. --dev, --config <file> */
  args?: string[]
  /** listen on this Unix socket (server.socket) instead of a TCP port */
  socket?: string
  /** the working directory (default: `dir`, made 0700 when missing) */
  cwd?: string
}

export async function spawnDaemon(t: Test, dir: string, opts: DaemonOptions = {}): Promise<Daemon> {
  const env = opts.env ?? {}
  const cwd = opts.cwd ?? dir
  // the daemon runs in it (on PostgreSQL nothing else would make it)
  mkdirSync(cwd, { recursive: true, mode: 0o700 })
  const listenOn = opts.socket === undefined ? ['--port', '0'] : []
  const proc = spawn(process.execPath, [AUTHD_BIN, 'start', '--data', dir, ...listenOn, ...(opts.args ?? [])], {
    cwd,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...(env.AUTHD_STORE_BACKEND === undefined ? await storeEnv(dir) : {}),
      ...(opts.socket !== undefined && { AUTHD_SERVER_SOCKET: opts.socket }),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()))
  proc.stderr!.on('data', (c: Buffer) => {
    out += c.toString()
    err += c.toString()
  })
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGKILL')
      await exited
    }
  })
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`authd did not start within 15 s:\n${out}`)), 15_000)
    const check = (): void => {
      const m = /authd listening on ((?:http:\/\/|unix:)[^\s"]+)/.exec(out)
      if (m !== null) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    }
    proc.stdout!.on('data', check)
    proc.once('exit', () => {
      clearTimeout(timer)
      reject(new Error(`authd exited before listening:\n${out}`))
    })
  })
  return {
    url,
    port: url.startsWith('unix:') ? 0 : Number(new URL(url).port),
    proc,
    output: () => out,
    stderr: () => err,
    crash: async () => {
      proc.kill('SIGKILL')
      await exited
    },
    stop: async () => {
      proc.kill('SIGTERM')
      return exited
    },
  }
}

/** how a program run to its end (runAuthd, runNode) ended */
export interface ProgramRun {
  /** the exit code; null when killed (it ran past `timeoutMs`, or a signal ended it) */
  code: number | null
  /** the signal that ended it, if one did */
  signal?: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** `authd <args>` in `cwd` to its end, with only `env` (and PATH and HOME); killed after `timeoutMs` */
export function runAuthd(args: string[], opts: { cwd: string; env?: Record<string, string>; timeoutMs?: number }): Promise<ProgramRun> {
  return runNode([AUTHD_BIN, ...args], { ...opts, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...opts.env } })
}

/** node on `args` in `cwd` to its end, with `env` (by default this process's); killed after `timeoutMs` */
export function runNode(args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<ProgramRun> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs ?? 20_000)
    proc.on('error', reject)
    proc.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  })
}

/** A TCP port that was free a moment ago on 127.0.0.1 (for programs that take a port, not a socket). */
export async function freePort(): Promise<number> {
  const srv = createNetServer()
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => resolve())
  })
  const port = (srv.address() as { port: number }).port
  await new Promise<void>((resolve) => srv.close(() => resolve()))
  return port
}
