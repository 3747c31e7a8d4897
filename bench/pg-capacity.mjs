#!/usr/bin/env node
/**
 * What one authd request costs a PostgreSQL primary, measured, and what that means for how many
 * instances and requests a second one primary serves (docs/scaling.md, "Capacity").
 *
 * Starts the bench's throwaway PostgreSQL (bench/lib/pg.mjs: Unix socket, pg_stat_statements),
 * fills it like the bench (1 000 users, 12 288 sessions, moved in with authctl export and
 * import), runs one authd on it, and for each kind of request puts a bounded load on it (wrk,
 * pinned like the bench) while counting:
 *   - round trips: the statements authd sent (pg_stat_statements, top level, BEGIN and COMMIT
 *     included), per request;
 *   - database CPU: user + system time of the whole cluster (backends, WAL writer, checkpointer,
 *     autovacuum), from /proc, per request;
 *   - time in the server (pg_stat_statements' execution time, which includes waiting for the
 *     commit's flush), WAL bytes, and the connections busy on average (pg_stat_activity sampled
 *     every 100 ms);
 *   - authd's own CPU per request (its event loop, and its other threads: argon2, the pool).
 * What the database and authd do at rest over the same time (polls) is measured first and taken
 * off. Then, for primaries of several sizes: requests a second of each kind and of a mix at a
 * stated utilisation, and how many authd instances that is.
 *
 *   node bench/pg-capacity.mjs [--seconds 5] [--no-build] [--pg-fsync on|off] [--pg-pool 10] [--pg-cpu auto|server|load|N]
 *       [--cores 2,4,8,16] [--utilisation 0.7] [--mix me=80,refresh=15,login=4,refused=1] [--out FILE]
 *
 * Prints a Markdown section (the one in docs/scaling.md) and writes the figures as JSON
 * (bench/results/pg-capacity.json).
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { chooseGenerator, load } from './lib/load.mjs'
import { clusterCpuMs, pgServer, startPg, statsSince, statsSnapshot } from './lib/pg.mjs'
import { cpuPlan, dbCpu, run, settle, sleep, threadCpuMs, threadCpuSince } from './lib/proc.mjs'
import { LOGIN_USERS, loginCookies, loginEmail, moveToPg, PASSWORD, prepare, scrape, spendAllowance, startDaemon, unitEnvironment, userEmail } from './lib/setup.mjs'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const { values: opts } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    'no-build': { type: 'boolean', default: false },
    'pg-fsync': { type: 'string', default: 'on' },
    'pg-cpu': { type: 'string', default: 'auto' },
    'pg-pool': { type: 'string', default: '10' },
    cores: { type: 'string', default: '2,4,8,16' },
    utilisation: { type: 'string', default: '0.7' },
    mix: { type: 'string', default: 'me=80,refresh=15,login=4,refused=1' },
    out: { type: 'string', default: join(ROOT, 'bench/results/pg-capacity.json') },
  },
})
const SECONDS = Math.max(1, Number(opts.seconds))
const POOL = Math.max(1, Number(opts['pg-pool']))
const CORES = opts.cores.split(',').map(Number).filter((n) => n > 0)
const UTIL = Number(opts.utilisation)
const MIX = Object.fromEntries(
  opts.mix.split(',').map((kv) => {
    const [k, v] = kv.split('=')
    return [k, Number(v)]
  }),
)
const USERS = 1000
const started = performance.now()
const log = (s) => process.stderr.write(`[pg-capacity ${((performance.now() - started) / 1000).toFixed(0).padStart(3)}s] ${s}\n`)

const server = pgServer()
if ('missing' in server) {
  process.stdout.write(`NOT MEASURED: ${server.missing}\n`)
  process.exit(1)
}
if (!opts['no-build']) {
  log('building dist/')
  await run([process.execPath, join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT })
}
const { VERIFIED_TOKENS_CACHED } = await import(pathToFileURL(join(ROOT, 'dist/core/access-tokens.js')).href)
const generator = chooseGenerator(log)
const cpus = cpuPlan()
if (cpus.pinned) spawnSync('taskset', ['-pc', String(cpus.load), String(process.pid)], { stdio: 'ignore' })

const work = mkdtempSync(join(os.tmpdir(), 'authd-pg-capacity-'))
process.on('exit', () => rmSync(work, { recursive: true, force: true }))
const env = { ...unitEnvironment(ROOT), AUTHD_SERVER_TRUST_PROXY: '127.0.0.1/32', AUTHD_LOG_LEVEL: 'info' }
log('preparing the store and PostgreSQL')
const data = await prepare({ root: ROOT, dir: join(work, 'data'), work, env, users: USERS, tokens: 3 * VERIFIED_TOKENS_CACHED })
const db = await startPg({ server, cpu: dbCpu(cpus, opts['pg-cpu']), fsync: opts['pg-fsync'] === 'on' })
const pgEnv = await moveToPg({ root: ROOT, dir: join(work, 'data'), work, env, url: db.url('authd_bench'), poolSize: POOL })
const daemon = await startDaemon({ root: ROOT, dir: join(work, 'pg-data'), env: pgEnv, cpu: cpus.server, logFile: join(work, 'authd.log') })
const stats = new pg.Client({ host: db.sock, user: 'postgres', database: 'postgres' })
await stats.connect()

const me = { path: '/api/auth/me', headers: { Authorization: `Bearer ${data.oneToken}` } }
let refreshLogins = 0
const KINDS = {
  login: { name: 'login (right password)', connections: 16, counter: 'authd_login_total{outcome="success"}', spec: async () => ({ path: '/api/auth/login', kind: 'login', password: PASSWORD, users: LOGIN_USERS }) },
  me: { name: '/me, 32 connections', connections: 32, counter: 'authd_me_total{outcome="success"}', spec: async () => ({ kind: 'tokens', tokensFile: data.tokensFile }) },
  'me-1': { name: '/me, 1 connection', connections: 1, counter: 'authd_me_total{outcome="success"}', spec: async () => ({ kind: 'tokens', tokensFile: data.tokensFile }) },
  refresh: {
    name: 'refresh',
    connections: 16,
    counter: 'authd_refresh_total{outcome="success"}',
    spec: async () => {
      const first = refreshLogins
      refreshLogins += 32
      const cookies = await loginCookies({
        url: daemon.url,
        n: 32,
        emailOf: (i) => userEmail((first + i) % USERS),
        addressOf: (i) => `10.251.${(first + i) >> 8}.${((first + i) & 255) + 1}`,
        password: PASSWORD,
        cookieName: data.cookieName,
      })
      const file = join(work, `refresh-${first}.txt`)
      writeFileSync(file, cookies.join('\n') + '\n')
      return { kind: 'refresh', path: '/api/auth/refresh', tokensFile: file, cookieName: data.cookieName }
    },
  },
  refused: {
    name: 'login refused (429)',
    connections: 32,
    counter: 'authd_login_total{outcome="rate_limited"}',
    refused: true,
    spec: async () => {
      await spendAllowance(daemon.url)
      return { path: '/api/auth/login', method: 'POST', body: JSON.stringify({ email: loginEmail(0), password: PASSWORD }) }
    },
  },
}

/** average connections of authd_bench not idle, sampled every 100 ms until `stop()` */
function sampleBusy() {
  let n = 0
  let sum = 0
  let running = true
  const done = (async () => {
    const c = new pg.Client({ host: db.sock, user: 'postgres', database: 'postgres' })
    await c.connect()
    while (running) {
      const [{ busy }] = (await c.query(`SELECT count(*)::int AS busy FROM pg_stat_activity WHERE datname = 'authd_bench' AND state <> 'idle'`)).rows
      sum += busy
      n++
      await sleep(100)
    }
    await c.end()
  })()
  return async () => {
    running = false
    await done
    return n === 0 ? 0 : sum / n
  }
}

/**
 * One measured stretch: `f` (a load run, or a sleep), then until authd is at rest again (the
 * logins a load run left queued are still hashed and stored after it stops), and what it cost,
 * with `counter` (one of authd's /metrics counters) counting the requests it served.
 */
async function measure(f, counter) {
  await settle(daemon.pid)
  const countBefore = counter === undefined ? 0 : (await scrape(daemon.url))[counter] ?? 0
  const snap = await statsSnapshot(stats, db.statements)
  const dbBefore = clusterCpuMs(db.pid())
  const authdBefore = threadCpuMs(daemon.pid)
  const stopSampling = sampleBusy()
  const r = await f()
  const busy = await stopSampling()
  await settle(daemon.pid)
  const authd = threadCpuSince(daemon.pid, authdBefore, threadCpuMs(daemon.pid))
  const dbAfter = clusterCpuMs(db.pid())
  const s = await statsSince(stats, db.statements, snap)
  const served = counter === undefined ? 0 : ((await scrape(daemon.url))[counter] ?? 0) - countBefore
  return { load: r, busy, authd, dbCpuMs: dbAfter.ms - dbBefore.ms, served, ...s }
}

// warm-up: JIT, the pool's connections, PostgreSQL's caches
log('warming up')
for (const k of ['login', 'me', 'refresh', 'refused']) {
  await load(generator, { url: daemon.url, cpu: cpus.load, seconds: 2, connections: 4, ...(await KINDS[k].spec()) })
}

log(`at rest (${SECONDS} s)`)
const idle = await measure(() => sleep(SECONDS * 1000))
const idlePerMs = { calls: idle.calls / idle.ms, dbCpuMs: idle.dbCpuMs / idle.ms, execMs: idle.execMs / idle.ms, walBytes: idle.walBytes / idle.ms, main: idle.authd.main / idle.ms, other: idle.authd.other / idle.ms }

const results = {}
for (const [k, kind] of Object.entries(KINDS)) {
  log(`${kind.name} (${SECONDS} s)`)
  const spec = await kind.spec()
  const m = await measure(() => load(generator, { url: daemon.url, cpu: cpus.load, seconds: SECONDS, connections: kind.connections, ...spec }), kind.counter)
  // every request the stretch served, also those still in flight when the load generator stopped
  const n = m.served
  const less = (v, per) => Math.max(0, v - per * m.ms)
  results[k] = {
    name: kind.name,
    connections: kind.connections,
    requests: n,
    rps: m.load.rps,
    p99Ms: m.load.p99Ms,
    // the 429 row's answers are all refusals: a 2xx there is the error
    errors: m.load.errors + (kind.refused ? m.load.requests - m.load.non2xx : m.load.non2xx),
    roundTrips: less(m.calls, idlePerMs.calls) / n,
    dbCpuUs: (less(m.dbCpuMs, idlePerMs.dbCpuMs) * 1000) / n,
    dbExecUs: (less(m.execMs, idlePerMs.execMs) * 1000) / n,
    walBytes: less(m.walBytes, idlePerMs.walBytes) / n,
    busyConnections: m.busy,
    authdMainUs: (less(m.authd.main, idlePerMs.main) * 1000) / n,
    authdOtherUs: (less(m.authd.other, idlePerMs.other) * 1000) / n,
    statements: m.statements
      .filter((st) => st.calls / n >= 0.01)
      .slice(0, 16)
      .map((st) => ({ query: st.query.slice(0, 110), perRequest: st.calls / n, meanUs: (st.execMs * 1000) / Math.max(1, st.calls) })),
  }
}
await stats.end()
await daemon.stop()
await db.stop()

// ---- the model ----
const mixKinds = Object.keys(MIX).filter((k) => results[k] !== undefined && MIX[k] > 0)
const mixTotal = mixKinds.reduce((a, k) => a + MIX[k], 0)
const mixed = (f) => mixKinds.reduce((a, k) => a + (MIX[k] / mixTotal) * f(results[k]), 0)
const mix = {
  shares: Object.fromEntries(mixKinds.map((k) => [k, MIX[k] / mixTotal])),
  roundTrips: mixed((r) => r.roundTrips),
  dbCpuUs: mixed((r) => r.dbCpuUs),
  dbExecUs: mixed((r) => r.dbExecUs),
  walBytes: mixed((r) => r.walBytes),
  authdMainUs: mixed((r) => r.authdMainUs),
  authdOtherUs: mixed((r) => r.authdOtherUs),
}
/** requests a second an authd instance of two cores serves at the utilisation: its event loop on one core, argon2 and its pool on the other */
const instanceRps = (r) => (UTIL * 1e6) / Math.max(r.authdMainUs, r.authdOtherUs)
const primaryRps = (r, cores) => (cores * UTIL * 1e6) / r.dbCpuUs

const f0 = (n) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n >= 10 ? n.toFixed(0) : n.toFixed(1))
const f2 = (n) => n.toFixed(2)
const lines = []
lines.push(
  `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`node bench/pg-capacity.mjs\` on ${os.cpus()[0]?.model ?? 'unknown'} (\`nproc\` ${cpus.cores}, Linux ${os.release()}), ` +
    `PostgreSQL ${db.version} (fsync ${db.fsync ? 'on' : 'off'}, on cpu ${db.cpu ?? 'any'}), authd with \`store.pool_size = ${POOL}\` on cpu ${cpus.server ?? 'any'}, ${generator} on cpu ${cpus.load ?? 'any'}; ` +
    `${SECONDS} s of each kind, what the database and authd did at rest over the same time taken off.`,
  '',
  '| request | load | measured | round trips | DB CPU | DB time | WAL | busy connections | authd event loop | authd other threads |',
  '|---|---|---|---|---|---|---|---|---|---|',
)
for (const r of Object.values(results)) {
  lines.push(
    `| ${r.name} | ${r.connections} conn. | ${f0(r.rps)}/s, p99 ${r.p99Ms.toFixed(1)} ms${r.errors ? `, ${r.errors} errors` : ''} | ${f2(r.roundTrips)} | ${f0(r.dbCpuUs)} µs | ${f0(r.dbExecUs)} µs | ${Math.round(r.walBytes).toLocaleString('en-US')} B | ${r.busyConnections.toFixed(1)} | ${f0(r.authdMainUs)} µs | ${f0(r.authdOtherUs)} µs |`,
  )
}
lines.push(
  `| mix (${mixKinds.map((k) => `${k} ${MIX[k]}`).join(', ')}) | | | ${f2(mix.roundTrips)} | ${f0(mix.dbCpuUs)} µs | ${f0(mix.dbExecUs)} µs | ${Math.round(mix.walBytes).toLocaleString('en-US')} B | | ${f0(mix.authdMainUs)} µs | ${f0(mix.authdOtherUs)} µs |`,
  '',
  `At rest, per second: ${f2(idlePerMs.calls * 1000)} round trips and ${f0(idlePerMs.dbCpuMs * 1000)} ms of database CPU (authd's polls and PostgreSQL's own background work).`,
  '',
  `Requests a second one primary serves with its cores ${Math.round(UTIL * 100)} % busy (cores × ${UTIL} × 1 000 000 µs / DB CPU per request), and how many authd instances of two cores (event loop on one, argon2 and the pool on the other, ${Math.round(UTIL * 100)} % busy) that keeps busy:`,
  '',
  `| request | one instance | ${CORES.map((c) => `${c}-core primary`).join(' | ')} |`,
  `|---|---|${CORES.map(() => '---').join('|')}|`,
)
const capacityRow = (name, r) =>
  `| ${name} | ${f0(instanceRps(r))}/s | ${CORES.map((c) => `${f0(primaryRps(r, c))}/s (${f0(primaryRps(r, c) / instanceRps(r))} inst.)`).join(' | ')} |`
for (const [k, r] of Object.entries(results)) if (k !== 'me-1') lines.push(capacityRow(r.name, r))
lines.push(capacityRow('the mix', mix))
const text = lines.join('\n')
process.stdout.write(`\n${text}\n`)
const problems = Object.values(results)
  .filter((r) => r.errors > 0)
  .map((r) => `${r.name}: ${r.errors} answers were errors or not 2xx`)
for (const p of problems) process.stdout.write(`problem: ${p}\n`)

mkdirSync(join(opts.out, '..'), { recursive: true })
writeFileSync(
  opts.out,
  JSON.stringify(
    {
      date: new Date().toISOString(),
      machine: { cpuModel: os.cpus()[0]?.model ?? 'unknown', nproc: cpus.cores, kernel: os.release(), node: process.version },
      method: { generator, seconds: SECONDS, pinned: cpus.pinned ? { server: cpus.server, load: cpus.load, db: db.cpu } : false, postgres: db.version, fsync: db.fsync, poolSize: POOL, utilisation: UTIL },
      idlePerSecond: Object.fromEntries(Object.entries(idlePerMs).map(([k, v]) => [k, v * 1000])),
      results,
      mix,
      capacity: Object.fromEntries(
        [...Object.entries(results).filter(([k]) => k !== 'me-1'), ['mix', mix]].map(([k, r]) => [
          k,
          { instanceRps: instanceRps(r), primaries: Object.fromEntries(CORES.map((c) => [c, { rps: primaryRps(r, c), instances: primaryRps(r, c) / instanceRps(r) }])) },
        ]),
      ),
      problems,
      markdown: text,
    },
    null,
    2,
  ) + '\n',
)
log(`wrote ${opts.out}`)
process.exitCode = problems.length === 0 ? 0 : 1
