#!/usr/bin/env node
/**
 * Where the time goes: runs `authd start` under `node --cpu-prof`, pinned like the bench, puts
 * one kind of load on it, and prints the self time by area (authd's modules, each dependency,
 * node internals, GC) and the top functions. The .cpuprofile is kept for Chrome DevTools.
 *
 * With `--backend postgres`, authd runs on the bench's throwaway PostgreSQL (bench/lib/pg.mjs,
 * pinned like the bench), and the database's side is printed too: the cluster's CPU per request
 * and the statements authd sent (pg_stat_statements), with their time in the server.
 *
 *   node bench/profile.mjs me|me-distinct|login|login-429|refresh [--backend lmdb|postgres]
 *       [--pg-cpu auto|server|load|N] [--seconds 8] [--log-level info|warn] [--out DIR]
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { summarise } from './lib/cpuprofile.mjs'
import { chooseGenerator, load } from './lib/load.mjs'
import { clusterCpuMs, pgServer, startPg, statsSince, statsSnapshot } from './lib/pg.mjs'
import { cpuPlan, dbCpu, run, threadCpuMs, threadCpuSince } from './lib/proc.mjs'
import { LOGIN_USERS, loginCookies, loginEmail, moveToPg, PASSWORD, prepare, spendAllowance, startDaemon, unitEnvironment, userEmail } from './lib/setup.mjs'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seconds: { type: 'string', default: '8' },
    out: { type: 'string', default: join(os.tmpdir(), 'authd-profiles') },
    'no-build': { type: 'boolean', default: false },
    backend: { type: 'string', default: 'lmdb' },
    'pg-fsync': { type: 'string', default: 'on' },
    'pg-cpu': { type: 'string', default: 'auto' },
    // warn: without the request lines, to see what they cost
    'log-level': { type: 'string', default: 'info' },
  },
})
const kind = positionals[0] ?? 'me'
const KINDS = ['me', 'me-distinct', 'login', 'login-429', 'refresh']
if (!KINDS.includes(kind) || !['lmdb', 'postgres'].includes(opts.backend)) {
  process.stderr.write(`usage: node bench/profile.mjs ${KINDS.join('|')} [--backend lmdb|postgres] [--seconds N]\n`)
  process.exit(2)
}
const onPg = opts.backend === 'postgres'
const server = onPg ? pgServer() : null
if (onPg && 'missing' in server) {
  process.stderr.write(`NOT MEASURED: ${server.missing}\n`)
  process.exit(1)
}
const log = (s) => process.stderr.write(`[profile] ${s}\n`)
if (!opts['no-build']) await run([process.execPath, join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT })
const generator = chooseGenerator(log)
const cpus = cpuPlan()
if (cpus.pinned) spawnSync('taskset', ['-pc', String(cpus.load), String(process.pid)], { stdio: 'ignore' })

const work = mkdtempSync(join(os.tmpdir(), 'authd-profile-'))
process.on('exit', () => rmSync(work, { recursive: true, force: true }))
const env = { ...unitEnvironment(ROOT), AUTHD_SERVER_TRUST_PROXY: '127.0.0.1/32', AUTHD_LOG_LEVEL: opts['log-level'] }
const data = await prepare({ root: ROOT, dir: join(work, 'data'), work, env, users: 1000, tokens: kind === 'me-distinct' ? 12_288 : 100 })
const db = onPg ? await startPg({ server, cpu: dbCpu(cpus, opts['pg-cpu']), fsync: opts['pg-fsync'] === 'on' }) : null
const daemonEnv = onPg ? await moveToPg({ root: ROOT, dir: join(work, 'data'), work, env, url: db.url('authd_bench'), poolSize: 10 }) : env
const profDir = join(work, 'prof')
const daemon = await startDaemon({
  root: ROOT,
  dir: join(work, onPg ? 'pg-data' : 'data'),
  env: daemonEnv,
  nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
  cpu: cpus.server,
  logFile: join(work, 'authd.log'),
})
const seconds = Number(opts.seconds)
let refreshLogins = 0
/** a refresh run's tokens: 32 fresh sessions, made by logging in */
async function refreshSpec() {
  const first = refreshLogins
  refreshLogins += 32
  const cookies = await loginCookies({
    url: daemon.url,
    n: 32,
    emailOf: (i) => userEmail(first + i),
    addressOf: (i) => `10.252.${(first + i) >> 8}.${((first + i) & 255) + 1}`,
    password: PASSWORD,
    cookieName: data.cookieName,
  })
  const file = join(work, `refresh-${first}.txt`)
  writeFileSync(file, cookies.join('\n') + '\n')
  return { kind: 'refresh', path: '/api/auth/refresh', tokensFile: file, cookieName: data.cookieName, connections: 16 }
}
const spec = {
  me: { path: '/api/auth/me', headers: { Authorization: `Bearer ${data.oneToken}` } },
  'me-distinct': { kind: 'tokens', tokensFile: data.tokensFile },
  login: { path: '/api/auth/login', kind: 'login', password: PASSWORD, users: LOGIN_USERS, connections: 16 },
  'login-429': { path: '/api/auth/login', method: 'POST', body: JSON.stringify({ email: loginEmail(0), password: PASSWORD }) },
  refresh: null,
}[kind]
if (kind === 'login-429') await spendAllowance(daemon.url)
// a short warm-up, so start-up and JIT do not dominate the profile
await load(generator, { url: daemon.url, cpu: cpus.load, seconds: 2, connections: 32, ...(spec ?? (await refreshSpec())) })
const measured = spec ?? (await refreshSpec())
const stats = onPg ? new pg.Client({ host: db.sock, user: 'postgres', database: 'postgres' }) : null
await stats?.connect()
const snap = onPg ? await statsSnapshot(stats, db.statements) : null
const dbBefore = onPg ? clusterCpuMs(db.pid()) : null
const before = threadCpuMs(daemon.pid)
const r = await load(generator, { url: daemon.url, cpu: cpus.load, seconds, connections: 32, ...measured })
// CPU of the main thread (the event loop, what the profile sees) and of all the others (libuv's
// pool running argon2 and file writes, lmdb's writer, V8's compiler and GC helpers)
const { main: mainMs, other: otherMs } = threadCpuSince(daemon.pid, before, threadCpuMs(daemon.pid))
const dbMs = onPg ? clusterCpuMs(db.pid()).ms - dbBefore.ms : 0
const dbStats = onPg ? await statsSince(stats, db.statements, snap) : null
await stats?.end()
await daemon.stop()
await db?.stop()
const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'))
mkdirSync(opts.out, { recursive: true })
const kept = join(opts.out, `${kind}${onPg ? '-postgres' : ''}.cpuprofile`)
spawnSync('cp', [join(profDir, file), kept])
// the measured run only: it ended just before the daemon was stopped
const s = summarise(kept, 25, seconds - 0.5)
const perReq = (ms) => ((ms * 1000) / r.requests).toFixed(0)
let dbText = ''
if (onPg) {
  const top = dbStats.statements
    .filter((st) => st.calls / r.requests >= 0.01)
    .slice(0, 16)
    .map((st) => `${(st.calls / r.requests).toFixed(2).padStart(6)}  ${((st.execMs * 1000) / st.calls).toFixed(0).padStart(5)} µs  ${(st.walBytes / st.calls).toFixed(0).padStart(5)} B WAL ${(st.walFpi / st.calls).toFixed(2)} FPI ${(st.blocks / st.calls).toFixed(0).padStart(3)} blocks  ${st.query.slice(0, 80)}`)
  dbText =
    `PostgreSQL ${db.version} (fsync ${db.fsync ? 'on' : 'off'}): cluster CPU ${perReq(dbMs)} µs a request, ${(dbStats.calls / r.requests).toFixed(2)} round trips, ` +
    `${perReq(dbStats.execMs)} µs in the server, ${(dbStats.walBytes / r.requests).toFixed(0)} B of WAL\n` +
    `statements (per request, mean time in the server, WAL, full-page images and buffers touched per call, text):\n${top.join('\n')}\n\n`
}
process.stdout.write(
  `${kind}${onPg ? ' on PostgreSQL' : ''}: ${r.rps.toFixed(0)} requests/s under load, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms (${seconds} s after a 2 s warm-up; the profile below covers the measured run)\n` +
    `CPU per request: main thread ${perReq(mainMs)} µs, other threads ${perReq(otherMs)} µs\n` +
    dbText +
    `main-thread profile: busy ${s.busyMs.toFixed(0)} ms, idle ${s.idleMs.toFixed(0)} ms\n\nself time by area:\n${s.areas.slice(0, 20).join('\n')}\n\n` +
    `top functions (self time):\n${s.functions.join('\n')}\n\nprofile: ${kept}\n`,
)
