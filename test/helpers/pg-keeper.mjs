/**
 * Keeps a test PostgreSQL server (pg-server.mjs): a detached process, so the server is stopped
 * and its files removed even when the test processes that used it were killed.
 *
 *   node pg-keeper.mjs shared <dir> <bindir>   starts the shared server in <dir>/srv, writes
 *       <dir>/keeper.json, and stops it once no attached test process has been alive for
 *       IDLE_MS, or at once on SIGTERM (tap's `after` hook) when none is.
 *   node pg-keeper.mjs watch <pid> <dir> <bindir>   a private server's watchdog (ownPgServer):
 *       once process <pid> is gone, stops the server in <dir> if it still runs and removes <dir>.
 */
import { existsSync, rmdirSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import {
  alive,
  destroyServerSync,
  findPgBin,
  initServer,
  liveClients,
  lock,
  removeShared,
  TEMPLATE,
  unlock,
  writeJsonAtomic,
} from './pg-server.mjs'

const IDLE_MS = 10_000
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const [mode, ...args] = process.argv.slice(2)

if (mode === 'watch') {
  const [owner, dir, bin] = args
  process.env.TEST_PG_BINDIR = bin
  while (alive(Number(owner)) && existsSync(dir)) await sleep(250)
  if (existsSync(dir)) destroyServerSync(findPgBin(), dir)
  process.exit(0)
}

if (mode !== 'shared') {
  console.error('usage: pg-keeper.mjs shared <dir> <bindir> | watch <pid> <dir> <bindir>')
  process.exit(2)
}

const [base, bin] = args
process.env.TEST_PG_BINDIR = bin
const server = findPgBin()
const srv = join(base, 'srv')
let idleMs = IDLE_MS
// tap's after hook: the run is over, stop as soon as no test process is attached
process.on('SIGTERM', () => (idleMs = 0))

try {
  const sock = await initServer(server, srv)
  const client = new pg.Client({ host: sock, user: 'postgres', database: 'postgres' })
  await client.connect()
  await client.query(`CREATE DATABASE ${TEMPLATE}`)
  await client.end()
  writeJsonAtomic(join(base, 'keeper.json'), { pid: process.pid, sock })
} catch (e) {
  destroyServerSync(server, srv)
  writeJsonAtomic(join(base, 'keeper.json'), { pid: process.pid, error: e instanceof Error ? e.message : String(e) })
  process.exit(1)
}

let idleSince = null
for (;;) {
  await sleep(250)
  if (liveClients(base).length) {
    idleSince = null
    continue
  }
  idleSince ??= Date.now()
  if (Date.now() - idleSince < idleMs) continue
  if (!(await lock(base, { tryOnly: true }))) continue
  // re-checked under the lock: a process attaching now waits for it, then starts a new keeper
  if (liveClients(base).length) {
    unlock(base)
    idleSince = null
    continue
  }
  destroyServerSync(server, srv)
  removeShared(base)
  unlock(base)
  try {
    rmdirSync(base)
  } catch {}
  process.exit(0)
}
