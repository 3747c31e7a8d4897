/**
 * The bench's own throwaway PostgreSQL: a new cluster in a temp directory (initdb), listening on
 * a Unix socket only (no port, nothing reachable from outside), run as the `postgres` user
 * through runuser when the bench runs as root (PostgreSQL refuses root), started under
 * `taskset` so the postmaster and every backend it forks stay on the core the bench gives the
 * database. pg_stat_statements is preloaded, so the statements authd sends can be counted.
 * The cluster is removed when the process exits, however it exits.
 *
 * The server binaries are found as the tests find them (test/helpers/pg-server.mjs: Debian's
 * /usr/lib/postgresql/<version>/bin, PATH, or TEST_PG_BINDIR; 15 or newer).
 */
import { execFile, spawnSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { findPgBin } from '../../test/helpers/pg-server.mjs'
import { pinned } from './proc.mjs'

export const BENCH_DATABASE = 'authd_bench'

/** the server binaries ({ bin, version, user }), or { missing: a sentence saying why not } */
export function pgServer() {
  const found = findPgBin()
  if ('missing' in found) return { missing: found.missing.replace(/: the PostgreSQL tests skip/, '') }
  if (process.getuid?.() === 0 && found.user === null) return { missing: 'running as root, but there is no postgres user to run PostgreSQL as' }
  return found
}

/** argv running a server program as the server's user, pinned to `cpu` */
function serverArgv(server, cpu, program, args) {
  const path = join(server.bin, program)
  return pinned(cpu, process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', path, ...args] : [path, ...args])
}

function runServer(server, cpu, program, args) {
  const [cmd, ...argv] = serverArgv(server, cpu, program, args)
  return new Promise((resolve, reject) => {
    execFile(cmd, argv, { encoding: 'utf8', timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${program} ${args.join(' ')} failed: ${(stderr || stdout || err.message).trim()}`))
      else resolve(stdout)
    })
  })
}

/**
 * Starts a throwaway cluster. `fsync`: true keeps PostgreSQL's durable defaults (fsync, a
 * synchronous commit, full-page writes), as a production primary runs; false turns all three
 * off. `cpu`: a core (or list) for taskset, or null. Resolves to
 * { url(database), sock, dir, pid(), cpu, fsync, version, stop() } with BENCH_DATABASE made and
 * pg_stat_statements created in it (`statements` says whether the module is there).
 */
export async function startPg({ server, cpu, fsync = true, maxConnections = 100 }) {
  const dir = mkdtempSync(join(os.tmpdir(), 'authd-bench-pg-'))
  // the server's user reaches its directories through this one
  chmodSync(dir, 0o755)
  const own = (d) => {
    mkdirSync(d, { recursive: true, mode: 0o700 })
    if (server.user) chownSync(d, server.user.uid, server.user.gid)
  }
  own(join(dir, 'data'))
  own(join(dir, 'sock'))
  own(join(dir, 'log'))
  const data = join(dir, 'data')
  const sock = join(dir, 'sock')
  let running = false
  const stopSync = () => {
    if (running) {
      const [cmd, ...argv] = serverArgv(server, null, 'pg_ctl', ['-w', '-D', data, '-m', 'immediate', 'stop'])
      spawnSync(cmd, argv, { stdio: 'ignore', timeout: 30_000 })
    }
    running = false
    rmSync(dir, { recursive: true, force: true })
  }
  process.on('exit', stopSync)

  // initdb's own flush only matters for a cluster that must survive a crash of the machine
  await runServer(server, cpu, 'initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'])
  const statements = existsSync(join(server.bin, '..', 'lib', 'pg_stat_statements.so'))
  const o = [`-c listen_addresses='' -k ${sock}`, `-c max_connections=${maxConnections}`]
  if (!fsync) o.push('-c fsync=off -c synchronous_commit=off -c full_page_writes=off')
  // top-level statements only: each is one round trip from authd (a function's own statements
  // are its caller's time)
  if (statements) o.push('-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=top -c pg_stat_statements.max=1000')
  await runServer(server, cpu, 'pg_ctl', ['-w', '-t', '60', '-D', data, '-o', o.join(' '), '-l', join(dir, 'log', 'server.log'), 'start'])
  running = true

  const url = (database = 'postgres') => `postgres://postgres@localhost/${encodeURIComponent(database)}?host=${sock}`
  const admin = new pg.Client({ host: sock, user: 'postgres', database: 'postgres' })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${BENCH_DATABASE}`)
  await admin.end()
  // in the maintenance database: the view shows every database's statements, and reading it
  // from there adds nothing to authd_bench's
  if (statements) await query(url(), 'CREATE EXTENSION pg_stat_statements')
  const version = (await query(url(), 'SHOW server_version'))[0].server_version

  return {
    url,
    sock,
    dir,
    cpu,
    fsync,
    statements,
    version,
    /** the postmaster's pid */
    pid: () => Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]),
    log: join(dir, 'log', 'server.log'),
    async stop() {
      if (running) await runServer(server, null, 'pg_ctl', ['-w', '-t', '60', '-D', data, '-m', 'fast', 'stop']).catch(() => {})
      running = false
      stopSync()
      process.off('exit', stopSync)
    },
  }
}

/** runs one statement on a connection of its own; resolves to the rows */
export async function query(url, text, values) {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return (await c.query(text, values)).rows
  } finally {
    await c.end()
  }
}

/**
 * CPU time (ms, user + system) used so far by the whole cluster: the postmaster and every process
 * it started (the backends serving authd's connections, the WAL writer, the checkpointer, the
 * autovacuum and statistics workers). Backends that ended are not in it: read it around a
 * stretch of load, with authd's pool kept open, and the difference is what that load cost.
 */
export function clusterCpuMs(postmasterPid) {
  let ticks = 0
  const byKind = {}
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    let stat
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8')
    } catch {
      continue
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const pid = Number(name)
    if (pid !== postmasterPid && Number(f[1]) !== postmasterPid) continue
    const t = Number(f[11]) + Number(f[12])
    ticks += t
    let kind = 'postmaster'
    if (pid !== postmasterPid) {
      try {
        const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ')
        kind = /\[local\]|authd/.test(cmd) ? 'backends' : (/postgres: (.*)$/.exec(cmd.trim())?.[1] ?? 'other').replace(/\s+$/, '')
      } catch {
        kind = 'other'
      }
    }
    byKind[kind] = (byKind[kind] ?? 0) + (t * 1000) / 100
  }
  return { ms: (ticks * 1000) / 100, byKind }
}

/**
 * What the database did for authd between two snapshots (`statsSnapshot`, `statsSince`), read
 * over `client` (a pg.Client on the maintenance database): the statements authd's database was
 * sent (each one round trip; BEGIN and COMMIT count), their time in the server, and the WAL
 * written. pg_stat_statements is reset by the snapshot.
 */
export async function statsSnapshot(client, statements) {
  if (statements) await client.query('SELECT pg_stat_statements_reset()')
  const [{ lsn }] = (await client.query('SELECT pg_current_wal_lsn() AS lsn')).rows
  return { lsn, at: performance.now() }
}

export async function statsSince(client, statements, snap) {
  const [{ wal }] = (await client.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::float8 AS wal', [snap.lsn])).rows
  let rows = []
  if (statements) {
    rows = (
      await client.query(
        `SELECT query, calls::float8 AS calls, total_exec_time AS exec_ms, rows::float8 AS rows,
           wal_bytes::float8 AS wal_bytes, wal_fpi::float8 AS wal_fpi, shared_blks_hit::float8 + shared_blks_read::float8 AS blks
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)
         ORDER BY calls DESC`,
        [BENCH_DATABASE],
      )
    ).rows.map((r) => ({ query: r.query.replace(/\s+/g, ' ').trim(), calls: r.calls, execMs: r.exec_ms, rows: r.rows, walBytes: r.wal_bytes, walFpi: r.wal_fpi, blocks: r.blks }))
  }
  return { walBytes: wal, statements: rows, calls: rows.reduce((a, r) => a + r.calls, 0), execMs: rows.reduce((a, r) => a + r.execMs, 0), ms: performance.now() - snap.at }
}
