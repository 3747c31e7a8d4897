/**
 * The real `authd start` (built dist/) for the client tests, in whichever log format it runs:
 * `--dev` logs are pretty-printed, so the address is read from the "authd listening on <url>"
 * message, which both formats carry.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { createServer as createNetServer } from 'node:net'
import type { Test } from 'tap'
import { AUTHD_BIN } from '../helpers/app.js'

export interface RunningDaemon {
  url: string
  port: number
  proc: ChildProcess
  output(): string
  /** SIGTERM and wait for the exit code */
  stop(): Promise<number | null>
}

export async function startAuthd(t: Test, dir: string, opts: { args?: string[]; env?: Record<string, string> } = {}): Promise<RunningDaemon> {
  const args = opts.args ?? []
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const proc = spawn(process.execPath, [AUTHD_BIN, 'start', '--data', dir, '--port', '0', ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()))
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()))
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
      const m = /authd listening on (http:\/\/[^\s"]+)/.exec(out)
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
    port: Number(new URL(url).port),
    proc,
    output: () => out,
    stop: async () => {
      proc.kill('SIGTERM')
      return exited
    },
  }
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
