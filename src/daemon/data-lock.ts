/**
 * One authd per LMDB data directory (README, "Several instances"). LMDB itself is safe for
 * several processes, and authctl works beside a running daemon, but the rate limiter of an LMDB
 * store lives in the daemon's memory: two daemons on one directory would each count on their
 * own, and every login limit would allow twice the guesses. So `authd start` holds a lock on
 * the directory while it runs, and a second one is refused before it listens.
 *
 * The lock is a Unix socket in Linux's abstract namespace: only one process can hold a name, the
 * kernel lets it go when that process ends however it ends (kill -9 too), and it leaves no file
 * behind. That namespace has no permissions, so the name is one only the store's owner can make:
 * the directory's device and inode (the same through any link or mount of it) under a key
 * derived from a secret the store keeps (`secret`, the device-cookie key). Nobody else can take
 * it first to keep authd from starting, and whoever holds it is an authd of this store, which
 * answers a connection with its pid, for the refusal's sentence. Elsewhere than Linux there is
 * no such namespace: no lock.
 */
import { createHmac } from 'node:crypto'
import { statSync } from 'node:fs'
import { createConnection, createServer, type Server } from 'node:net'
import { resolve } from 'node:path'
import { AppError } from '../errors.js'

export interface DataLock {
  /** lets the directory go (at stop; the process's end does it too) */
  release(): Promise<void>
}

/** the lock's name for the existing directory `dir` and the store's secret */
export function lockName(dir: string, secret: string): string {
  const { dev, ino } = statSync(dir, { bigint: true })
  const key = createHmac('sha256', Buffer.from(secret, 'base64url')).update('authd: the data directory lock').digest()
  return `\0authd-data:${createHmac('sha256', key).update(`${dev}:${ino}`).digest('hex').slice(0, 40)}`
}

/** Takes the lock of the data directory `dir`; DATA_DIR_IN_USE when another authd holds it. */
export async function lockDataDir(dir: string, secret: string): Promise<DataLock | null> {
  if (process.platform !== 'linux') return null
  const name = lockName(dir, secret)
  const server: Server = createServer((c) => c.end(`${process.pid}\n`))
  const taken = await new Promise<boolean>((done, fail) => {
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? done(false) : fail(err)))
    server.listen({ path: name }, () => done(true))
  })
  if (!taken) throw new AppError('DATA_DIR_IN_USE', { params: { dir: resolve(dir), pid: await holder(name) } })
  // it keeps nothing alive: the daemon's own server does that
  server.unref()
  return { release: () => new Promise((done) => server.close(() => done())) }
}

/** the pid the lock's holder answers, or "unknown" when it does not within a second */
function holder(name: string): Promise<string> {
  return new Promise((done) => {
    let text = ''
    const c = createConnection({ path: name })
    const over = setTimeout(() => c.destroy(), 1000)
    c.on('data', (b) => (text += b.toString()))
    c.on('close', () => {
      clearTimeout(over)
      done(/^\d+\n$/.test(text) ? text.trim() : 'unknown')
    })
    c.on('error', () => {})
  })
}
