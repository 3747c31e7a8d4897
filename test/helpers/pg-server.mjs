/**
 * The throwaway PostgreSQL servers of the tests (test/helpers/pg.ts is the API the tests use;
 * this plain-JS part is shared with the keeper process, the tap `after` hook and test/suite.mjs).
 *
 * The shared server: one per test run, started by the first test process that asks for a
 * database and stopped when no test process needs it any more. tap runs each test file in its own
 * process, several at once, so the processes agree through a directory in the temp dir (one per
 * checkout): a lock (`mkdir` is atomic), one file per attached test process (`clients/<pid>`),
 * and `keeper.json`, written by the keeper (pg-keeper.mjs): a detached process that runs initdb
 * and pg_ctl, and once no attached process is alive for a moment (or at once when tap's `after`
 * hook asks, pg-after.mjs) stops the server and removes every file. So a killed test run leaves
 * nothing behind for long either.
 *
 * Servers listen on a Unix socket only (`listen_addresses=''`): no port to clash over. As root,
 * they run as the `postgres` user (PostgreSQL refuses root), through runuser.
 */
import { execFile, spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const MIN_VERSION = 15
export const INSTALL_HINT = 'apt-get install postgresql'
/** the database every test database is cloned from */
export const TEMPLATE = 'authd_template'

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** whether process `pid` is alive */
export function alive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return e.code === 'EPERM'
  }
}

let found
/**
 * The directory holding initdb, pg_ctl and postgres (PostgreSQL 15 or newer), or a sentence
 * saying why there is none. `TEST_PG_BINDIR` names the directory (empty: none, as on a machine
 * without PostgreSQL); else Debian's /usr/lib/postgresql/<version>/bin, newest first; else PATH.
 */
export function findPgBin() {
  if (found) return found
  const usable = (dir) => ['initdb', 'pg_ctl', 'postgres'].every((b) => existsSync(join(dir, b)))
  const version = (dir) => {
    const r = spawnSync(join(dir, 'pg_ctl'), ['--version'], { encoding: 'utf8' })
    const m = /(\d+)(?:\.\d+)?/.exec(r.stdout ?? '')
    return m ? Number(m[1]) : 0
  }
  const candidates = []
  if (process.env.TEST_PG_BINDIR !== undefined) {
    if (process.env.TEST_PG_BINDIR !== '') candidates.push(process.env.TEST_PG_BINDIR)
  } else {
    try {
      const versions = readdirSync('/usr/lib/postgresql')
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
      for (const v of versions) candidates.push(`/usr/lib/postgresql/${v}/bin`)
    } catch {}
    for (const dir of (process.env.PATH ?? '').split(delimiter)) {
      if (dir && existsSync(join(dir, 'pg_ctl'))) candidates.push(dirname(realpathSync(join(dir, 'pg_ctl'))))
    }
  }
  let old = 0
  for (const dir of candidates) {
    if (!usable(dir)) continue
    const v = version(dir)
    if (v >= MIN_VERSION) return (found = { bin: dir, version: v, user: serverUser() })
    old = Math.max(old, v)
  }
  const why = old
    ? `PostgreSQL ${old} found, ${MIN_VERSION} or newer needed`
    : 'PostgreSQL server binaries (initdb, pg_ctl) not found'
  return (found = { missing: `${why}: the PostgreSQL tests skip (install them: ${INSTALL_HINT})` })
}

/**
 * Who runs the server: as root, the `postgres` user (uid and gid, for the directories it
 * writes); otherwise the current user itself (null).
 */
function serverUser() {
  if (process.getuid?.() !== 0) return null
  const id = (flag) => {
    const r = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' })
    return r.status === 0 ? Number(r.stdout.trim()) : NaN
  }
  const uid = id('-u')
  const gid = id('-g')
  return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : null
}

/** argv to run a server program as the server's user */
function asServerUser(pg, program, args) {
  const path = join(pg.bin, program)
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args]
}

function run(pg, program, args) {
  const [cmd, argv] = asServerUser(pg, program, args)
  return new Promise((resolve, reject) => {
    execFile(cmd, argv, { encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${program} ${args.join(' ')} failed: ${(stderr || stdout || err.message).trim()}`))
      else resolve(stdout)
    })
  })
}

function runSync(pg, program, args) {
  const [cmd, argv] = asServerUser(pg, program, args)
  return spawnSync(cmd, argv, { encoding: 'utf8', timeout: 30_000 })
}

/** a directory the server's user owns */
function serverDir(pg, dir) {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  if (pg.user) chownSync(dir, pg.user.uid, pg.user.gid)
}

/**
 * A new cluster in `dir` (made, owned by the server's user), started, listening on the socket
 * directory `dir/sock` only. Resolves to the socket directory. `durable`: as a real server
 * (commits flushed to disk), for measurements (npm run stress); tests run without.
 */
export async function initServer(pg, dir, { durable = false } = {}) {
  if (pg.missing) throw new Error(pg.missing)
  if (pg.user === null && process.getuid?.() === 0) throw new Error('running as root, but there is no postgres user to run PostgreSQL as')
  serverDir(pg, dir)
  await run(pg, 'initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'])
  serverDir(pg, join(dir, 'sock'))
  await startServer(pg, dir, { durable })
  return join(dir, 'sock')
}

/** starts the cluster in `dir` again (pg_ctl -w: resolves once it accepts connections) */
export async function startServer(pg, dir, { durable = false } = {}) {
  const opts = [
    `-c listen_addresses='' -k ${join(dir, 'sock')}`,
    // several test files at once, each with pools of several daemons
    '-c max_connections=300',
  ]
  // throwaway data: no flushing to disk
  if (!durable) opts.push('-c fsync=off -c synchronous_commit=off -c full_page_writes=off')
  // for whoever reads query statistics (CREATE EXTENSION pg_stat_statements in its database)
  if (existsSync(join(pg.bin, '..', 'lib', 'pg_stat_statements.so'))) opts.push('-c shared_preload_libraries=pg_stat_statements')
  await run(pg, 'pg_ctl', ['-w', '-t', '60', '-D', join(dir, 'data'), '-o', opts.join(' '), '-l', join(dir, 'log'), 'start'])
}

/** stops the cluster in `dir` (`fast`: ends open connections; `immediate`: no shutdown checkpoint) */
export async function stopServer(pg, dir, mode = 'fast') {
  await run(pg, 'pg_ctl', ['-w', '-t', '60', '-D', join(dir, 'data'), '-m', mode, 'stop'])
}

/** stops the cluster in `dir` if it runs and removes `dir`, synchronously (exit handlers, keeper) */
export function destroyServerSync(pg, dir) {
  if (existsSync(join(dir, 'data', 'postmaster.pid'))) runSync(pg, 'pg_ctl', ['-w', '-D', join(dir, 'data'), '-m', 'immediate', 'stop'])
  rmSync(dir, { recursive: true, force: true })
}

/** the URL of `database` on the server listening in socket directory `sock` */
export function pgUrl(sock, database = 'postgres') {
  return `postgres://postgres@localhost/${encodeURIComponent(database)}?host=${sock}`
}

// ---- the shared server ----

/**
 * The shared server's directory: one per checkout (this file's path) and user, or
 * AUTHD_TEST_PG_SHARED (pg.test.ts runs a server of its own there to watch it go).
 */
export function sharedDir() {
  if (process.env.AUTHD_TEST_PG_SHARED) return process.env.AUTHD_TEST_PG_SHARED
  const key = createHash('sha256')
    .update(`${fileURLToPath(import.meta.url)}\0${process.getuid?.() ?? ''}`)
    .digest('hex')
    .slice(0, 12)
  return join(tmpdir(), `authd-test-pg-${key}`)
}

function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return undefined
  }
}

export function writeJsonAtomic(file, value) {
  writeFileSync(`${file}.${process.pid}`, JSON.stringify(value))
  renameSync(`${file}.${process.pid}`, file)
}

/**
 * Takes the shared directory's lock (waiting for it), or with `tryOnly` answers false at once
 * when another process holds it. A lock whose holder died is taken over.
 */
export async function lock(base, { tryOnly = false } = {}) {
  const dir = join(base, 'lock')
  for (let i = 0; ; i++) {
    try {
      mkdirSync(base, { recursive: true })
      mkdirSync(dir)
      writeFileSync(join(dir, 'pid'), String(process.pid))
      return true
    } catch (e) {
      // ENOENT: the keeper removed the directory between the two mkdirs (it stopped an idle
      // server just now): make it again
      if (e.code === 'ENOENT') continue
      if (e.code !== 'EEXIST') throw e
    }
    let owner = 0
    let age = 0
    try {
      age = Date.now() - statSync(dir).mtimeMs
      owner = Number(readFileSync(join(dir, 'pid'), 'utf8'))
    } catch {}
    // a holder that died (or died between mkdir and writing its pid)
    if ((owner && !alive(owner)) || (!owner && age > 5000)) {
      rmSync(dir, { recursive: true, force: true })
      continue
    }
    if (tryOnly) return false
    if (i > 2400) throw new Error(`the shared PostgreSQL's lock ${dir} is held by process ${owner} for more than 2 minutes`)
    await sleep(50)
  }
}

export function unlock(base) {
  rmSync(join(base, 'lock'), { recursive: true, force: true })
}

/** the attached test processes that are still alive (the files of dead ones are removed) */
export function liveClients(base) {
  let names = []
  try {
    names = readdirSync(join(base, 'clients'))
  } catch {}
  return names.filter((n) => {
    if (alive(Number(n))) return true
    rmSync(join(base, 'clients', n), { force: true })
    return false
  })
}

/**
 * Attaches this process to the shared server, starting it (through a keeper) if none runs.
 * Resolves to the server's socket directory.
 */
export async function attachShared(pg) {
  if (pg.missing) throw new Error(pg.missing)
  const base = sharedDir()
  await lock(base)
  try {
    // the server's user reaches its directories through this one
    chmodSync(base, 0o755)
    mkdirSync(join(base, 'clients'), { recursive: true })
    writeFileSync(join(base, 'clients', String(process.pid)), '')
    process.on('exit', () => rmSync(join(base, 'clients', String(process.pid)), { force: true }))
    let state = readJson(join(base, 'keeper.json'))
    if (state?.sock && alive(state.pid)) return state.sock
    // a keeper that died: its server goes too
    if (state || existsSync(join(base, 'srv'))) {
      destroyServerSync(pg, join(base, 'srv'))
      rmSync(join(base, 'keeper.json'), { force: true })
    }
    const keeper = spawn(process.execPath, [fileURLToPath(new URL('./pg-keeper.mjs', import.meta.url)), 'shared', base, pg.bin], {
      detached: true,
      stdio: 'ignore',
    })
    keeper.unref()
    for (let i = 0; i < 1200; i++) {
      state = readJson(join(base, 'keeper.json'))
      if (state?.pid === keeper.pid && state.sock) return state.sock
      if (state?.pid === keeper.pid && state.error) throw new Error(`the shared PostgreSQL did not start: ${state.error}`)
      if (keeper.exitCode !== null) throw new Error(`the shared PostgreSQL's keeper exited (${keeper.exitCode}) before the server was ready`)
      await sleep(50)
    }
    throw new Error('the shared PostgreSQL did not start within 60 s')
  } finally {
    unlock(base)
  }
}

/**
 * Stops the shared server now unless a test process still uses it (tap's `after` hook): asks the
 * keeper, and waits for it to finish; cleans up itself after a keeper that died.
 */
export async function stopShared() {
  const base = sharedDir()
  if (!existsSync(base)) return
  const state = readJson(join(base, 'keeper.json'))
  if (state?.pid && alive(state.pid)) {
    process.kill(state.pid, 'SIGTERM')
    for (let i = 0; i < 300 && alive(state.pid); i++) await sleep(50)
    return
  }
  const pg = findPgBin()
  if (!(await lock(base, { tryOnly: true }))) return
  try {
    if (liveClients(base).length) return
    if (!pg.missing) destroyServerSync(pg, join(base, 'srv'))
    removeShared(base)
  } finally {
    unlock(base)
    try {
      rmdirSync(base)
    } catch {}
  }
}

/** removes the shared directory's contents but the lock (hold it) */
export function removeShared(base) {
  for (const name of ['srv', 'clients', 'keeper.json']) rmSync(join(base, name), { recursive: true, force: true })
}

