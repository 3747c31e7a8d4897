#!/usr/bin/env node
/**
 * npm run bench — authd's performance figures, each a ratio against a baseline measured in the
 * same run (absolute numbers drift on a shared machine; ratios taken minutes apart do not).
 *
 * Baselines: "bare" (node:http answering the same JSON with no work), "es256-raw" (jsonwebtoken
 * ES256 verifications per second, one thread, KeyObject), "argon2-raw" (argon2id verifications
 * per second at the configured parameters under the daemon's own concurrency cap). One reference,
 * not a target: "bare + ES256" (the bare server plus one jsonwebtoken ES256 check per request, over the same
 * distinct tokens), the most the distinct-token row can reach on the machine. Server side
 * and load generator are pinned to different cores. Each round runs every row once, each next to
 * its baseline (bare before and after the rows measured against it), rounds repeat, and the
 * median over the rounds of each round's ratio is reported.
 *
 * The PostgreSQL rows run a second authd on a throwaway PostgreSQL the bench starts itself
 * (bench/lib/pg.mjs), filled from the LMDB store with `authctl export` and `import`, so both
 * serve the same users, sessions and tokens; each row is a ratio against a figure of the same
 * round (LMDB's /me, argon2-raw, bare) or a latency. Where PostgreSQL is missing those rows say
 * NOT MEASURED and why.
 *
 * Prints the table and writes the same as JSON to bench/results/latest.json.
 * Options: --rounds N (3), --seconds S per load run (5), --no-build, --out FILE,
 * --generator autocannon (use the fallback load generator even where wrk is installed),
 * --no-postgres (skip the PostgreSQL rows), --pg-fsync on|off (on: PostgreSQL's durable
 * defaults; off: fsync, synchronous_commit and full_page_writes off), --pg-pool N (authd's
 * store.pool_size, 10), --pg-cpu auto|server|load|N (PostgreSQL's core; auto: one of its own
 * with three cores or more, else the load generator's: in production the database is another
 * machine, so it does not take authd's core).
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { chooseGenerator, load } from './lib/load.mjs'
import { pgServer, startPg } from './lib/pg.mjs'
import { cpuPlan, dbCpu, has, lastJson, pinned, repin, rss, run, settle } from './lib/proc.mjs'
import {
  LOGIN_USERS,
  loginCookies,
  loginEmail,
  moveToPg,
  PASSWORD,
  prepare,
  scrape,
  spendAllowance,
  startBare,
  startDaemon,
  unitEnvironment,
  userEmail,
} from './lib/setup.mjs'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const { values: opts } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '5' },
    'no-build': { type: 'boolean', default: false },
    out: { type: 'string', default: join(ROOT, 'bench/results/latest.json') },
    // to try the fallback on a machine that has wrk
    generator: { type: 'string' },
    'no-postgres': { type: 'boolean', default: false },
    'pg-fsync': { type: 'string', default: 'on' },
    'pg-cpu': { type: 'string', default: 'auto' },
    'pg-pool': { type: 'string', default: '10' },
  },
})
if (!['on', 'off'].includes(opts['pg-fsync'])) {
  process.stderr.write('--pg-fsync is on or off\n')
  process.exit(2)
}
const ROUNDS = Math.max(1, Number(opts.rounds))
const SECONDS = Math.max(1, Number(opts.seconds))
const USERS = 1000
const CONNECTIONS = 32
const P99_CONNECTIONS = 64
const LOGIN_CONNECTIONS = 16
const FLOOD_LOGINS = 32
const FLOOD_ME_CONNECTIONS = 16
const STARTS = 5
const REFRESH_CONNECTIONS = 16
/** refresh tokens in play in a refresh run: twice the connections, so none is asked for while in flight */
const REFRESH_TOKENS = 2 * REFRESH_CONNECTIONS
const PG_POOL = Math.max(1, Number(opts['pg-pool']))
/** RSS after the last round may exceed RSS after the first by at most this much */
const RSS_GROWTH_MB = 8

const benchStarted = performance.now()
const log = (s) => process.stderr.write(`[bench ${((performance.now() - benchStarted) / 1000).toFixed(0).padStart(3)}s] ${s}\n`)
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2
}

// ---------------------------------------------------------------------------------------------
// Setup

if (!opts['no-build']) {
  log('building dist/')
  await run([process.execPath, join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT })
}
// three times as many distinct tokens as the daemon's token cache holds, sent round-robin: every
// one misses the cache, so that row measures full verification. The cache takes a token at its
// second verification within 2 × SEEN_MARKS of them; a token comes round again only after
// TOKENS, more than that, so it is never taken.
const { SEEN_MARKS, VERIFIED_TOKENS_CACHED } = await import(pathToFileURL(join(ROOT, 'dist/core/access-tokens.js')).href)
const TOKENS = 3 * VERIFIED_TOKENS_CACHED
if (TOKENS <= 2 * SEEN_MARKS) throw new Error(`${TOKENS} tokens round-robin would be remembered (SEEN_MARKS ${SEEN_MARKS})`)
const generator = opts.generator === 'autocannon' ? 'autocannon' : chooseGenerator(log)
const cpus = cpuPlan()
if (cpus.pinned) {
  // the orchestrator itself stays off the server's core
  spawnSync('taskset', ['-pc', String(cpus.load), String(process.pid)], { stdio: 'ignore' })
  log(`server side on cpu ${cpus.server}, load generator (${generator}) on cpu ${cpus.load}`)
} else log(`not pinning (${cpus.cores} core(s) or no taskset): figures are noisier`)

const work = mkdtempSync(join(os.tmpdir(), 'authd-bench-'))
const dir = join(work, 'data')
// authd runs with the shipped unit's environment and the production defaults, but for one
// setting: 127.0.0.1 is a trusted proxy. The login rows send each request from its own
// X-Forwarded-For address, so the per-IP limit keeps its production value; the 429 row sends
// none, so all of it is 127.0.0.1's and meets that same limit.
const unitEnv = unitEnvironment(ROOT)
const env = { ...unitEnv, AUTHD_SERVER_TRUST_PROXY: '127.0.0.1/32', AUTHD_LOG_LEVEL: 'info' }
const cleanup = []
process.on('exit', () => rmSync(work, { recursive: true, force: true }))

log(`preparing a store: ${USERS} users, ${TOKENS} sessions and access tokens`)
const data = await prepare({ root: ROOT, dir, work, env, users: USERS, tokens: TOKENS })

// The PostgreSQL rows: a throwaway server pinned to its core (--pg-cpu), the same store moved into it
const pg = { measured: false, reason: 'not asked for (--no-postgres)', env: null, db: null }
if (!opts['no-postgres']) {
  const server = pgServer()
  if ('missing' in server) pg.reason = server.missing
  else {
    const cpu = dbCpu(cpus, opts['pg-cpu'])
    log(`starting PostgreSQL ${server.version} (fsync ${opts['pg-fsync']}) on cpu ${cpu ?? 'any'}, moving the store into it with authctl export and import`)
    pg.db = await startPg({ server, cpu, fsync: opts['pg-fsync'] === 'on' })
    pg.env = await moveToPg({ root: ROOT, dir, work, env, url: pg.db.url('authd_bench'), poolSize: PG_POOL })
    pg.measured = true
    pg.reason = null
  }
}
if (!pg.measured) log(`the PostgreSQL rows are NOT MEASURED: ${pg.reason}`)

// ---------------------------------------------------------------------------------------------
// Start-up times

// Start-up is not a load test: these run on every core, as on a server (the orchestrator itself
// is pinned, and a child would inherit that).
log(`timing authd start → ready (${STARTS} runs) and authctl --help`)
const readyTimes = []
for (let i = 0; i < STARTS; i++) {
  const d = await startDaemon({ root: ROOT, dir, env, cpu: cpus.all, logFile: join(work, `start-${i}.log`) })
  readyTimes.push(d.readyMs)
  await d.stop()
}
const helpTimes = await timeCommand(pinned(cpus.all, [process.execPath, join(ROOT, 'bin/authctl.js'), '--help']), 10)

// ---------------------------------------------------------------------------------------------
// The servers

const daemon = await startDaemon({ root: ROOT, dir, env, cpu: cpus.server, logFile: join(work, 'authd.log') })
cleanup.push(() => daemon.stop())
const bare = await startBare({ root: ROOT, cpu: cpus.server })
cleanup.push(() => bare.stop())
const bareVerify = await startBare({ root: ROOT, cpu: cpus.server, verifyKeyFile: data.publicKeyFile })
cleanup.push(() => bareVerify.stop())
let pgDaemon = null
if (pg.measured) {
  // stopped last: the cleanup runs newest first
  cleanup.unshift(() => pg.db.stop())
  pgDaemon = await startDaemon({ root: ROOT, dir: join(work, 'pg-data'), env: pg.env, cpu: cpus.server, logFile: join(work, 'authd-pg.log') })
  cleanup.push(() => pgDaemon.stop())
}
const shutdown = async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {})
}
process.on('SIGINT', () => shutdown().then(() => process.exit(130)))

const me = { path: '/api/auth/me', headers: { Authorization: `Bearer ${data.oneToken}` } }
const loginBody = JSON.stringify({ email: loginEmail(0), password: PASSWORD })
const loginSpec = { path: '/api/auth/login', kind: 'login', password: PASSWORD, users: LOGIN_USERS }
const L = (spec) => load(generator, { cpu: cpus.load, seconds: SECONDS, connections: CONNECTIONS, ...spec })

// Refresh tokens for one refresh run: sessions made by logging in as the store's users (not the
// login rows' accounts), the next few each time, each login from an address of its own
let refreshLogins = 0
async function refreshTokens(url) {
  const first = refreshLogins
  refreshLogins += REFRESH_TOKENS
  const cookies = await loginCookies({
    url,
    n: REFRESH_TOKENS,
    emailOf: (i) => userEmail((first + i) % USERS),
    addressOf: (i) => `10.250.${(first + i) >> 8}.${((first + i) & 255) + 1}`,
    password: PASSWORD,
    cookieName: data.cookieName,
  })
  const file = join(work, `refresh-${first}.txt`)
  writeFileSync(file, cookies.join('\n') + '\n')
  return { kind: 'refresh', path: '/api/auth/refresh', tokensFile: file, cookieName: data.cookieName, connections: REFRESH_CONNECTIONS }
}

const measure = {
  bare: () => L({ url: bare.url, ...me }),
  meSame: () => L({ url: daemon.url, ...me }),
  meDistinct: () => L({ url: daemon.url, kind: 'tokens', tokensFile: data.tokensFile }),
  // not a target: the bare server plus one ES256 check per request, the same tokens
  bareVerify: () => L({ url: bareVerify.url, kind: 'tokens', tokensFile: data.tokensFile }),
  meP99: () => L({ url: daemon.url, ...me, connections: P99_CONNECTIONS }),
  login: () => L({ url: daemon.url, ...loginSpec, connections: LOGIN_CONNECTIONS }),
  // no X-Forwarded-For: every request is 127.0.0.1's, long past its 50 logins per 15 minutes
  login429: () => L({ url: daemon.url, path: '/api/auth/login', method: 'POST', body: loginBody }),
  es256: async () => {
    const argv = [process.execPath, join(ROOT, 'bench/es256-raw.mjs'), data.tokensFile, data.publicKeyFile, String(Math.min(SECONDS, 4)), data.issuer, data.audience]
    return lastJson(await run(pinned(cpus.server, argv), { cwd: ROOT, env: { ...process.env, ...unitEnv } }))
  },
  // started on the server's core as the daemon was (so its queue is sized alike); for the
  // two-core reference (`widen`), then moved to the same two cores as the daemon is
  argon2: async (widen = false) => {
    const argv = [process.execPath, join(ROOT, 'bench/argon2-raw.mjs'), join(ROOT, 'dist'), data.hashFile, PASSWORD, String(SECONDS), ...(widen && cpus.pair !== null ? [cpus.pair] : [])]
    // the same environment as the daemon: MALLOC_ARENA_MAX changes how argon2's memory is reused
    return lastJson(await run(pinned(cpus.server, argv), { cwd: ROOT, env: { ...process.env, ...unitEnv } }))
  },
  pgMe: () => L({ url: pgDaemon.url, ...me }),
  pgLogin429: () => L({ url: pgDaemon.url, path: '/api/auth/login', method: 'POST', body: loginBody }),
  pgLogin: () => L({ url: pgDaemon.url, ...loginSpec, connections: LOGIN_CONNECTIONS }),
  pgRefresh: async () => L({ url: pgDaemon.url, ...(await refreshTokens(pgDaemon.url)) }),
  flood: async () => {
    const [meRun, loginRun] = await Promise.all([
      L({ url: daemon.url, ...me, connections: FLOOD_ME_CONNECTIONS }),
      L({ url: daemon.url, ...loginSpec, connections: FLOOD_LOGINS }),
    ])
    return { me: meRun, login: loginRun }
  },
}

/** runs `f` and the counters it moved (of the daemon at `url`) */
async function counted(f, url = daemon.url) {
  const before = await scrape(url)
  const result = await f()
  const after = await scrape(url)
  const delta = (name) => (after[name] ?? 0) - (before[name] ?? 0)
  return { result, delta }
}

// ---------------------------------------------------------------------------------------------
// Warm-up (JIT, caches, and 127.0.0.1's login allowance used up), then the rounds

log('warming up')
{
  await spendAllowance(daemon.url)
  if (pg.measured) await spendAllowance(pgDaemon.url)
  const short = { seconds: 2 }
  await L({ url: bare.url, ...me, ...short })
  await L({ url: daemon.url, ...me, ...short })
  await L({ url: daemon.url, kind: 'tokens', tokensFile: data.tokensFile, ...short })
  await L({ url: bareVerify.url, kind: 'tokens', tokensFile: data.tokensFile, ...short })
  await L({ url: daemon.url, path: '/api/auth/login', method: 'POST', body: loginBody, ...short })
  await L({ url: daemon.url, ...loginSpec, connections: 4, ...short })
  if (pg.measured) {
    await L({ url: pgDaemon.url, ...me, ...short })
    await L({ url: pgDaemon.url, path: '/api/auth/login', method: 'POST', body: loginBody, ...short })
    await L({ url: pgDaemon.url, ...loginSpec, connections: 4, ...short })
    await L({ url: pgDaemon.url, ...(await refreshTokens(pgDaemon.url)), ...short })
  }
}

const rounds = []
const problems = []
const expect = (cond, what) => {
  if (!cond) problems.push(what)
}
for (let r = 1; r <= ROUNDS; r++) {
  log(`round ${r}/${ROUNDS}`)
  const round = { round: r }
  const bareBefore = await measure.bare()

  const same = await counted(measure.meSame)
  round.meSame = same.result
  expect(round.meSame.non2xx === 0 && round.meSame.errors === 0, `round ${r}: /me (one token) answered errors`)
  expect(same.delta('authd_me_total{outcome="success"}') >= round.meSame.requests, `round ${r}: /me (one token) did not succeed every time`)

  if (pg.measured) {
    const pgSame = await counted(measure.pgMe, pgDaemon.url)
    round.pgMe = pgSame.result
    expect(round.pgMe.non2xx === 0 && round.pgMe.errors === 0, `round ${r}: /me (one token, PostgreSQL) answered errors`)
    expect(pgSame.delta('authd_me_total{outcome="success"}') >= round.pgMe.requests, `round ${r}: /me (one token, PostgreSQL) did not succeed every time`)
  }

  const refused = await counted(measure.login429)
  round.login429 = refused.result
  const limited = refused.delta('authd_login_total{outcome="rate_limited"}')
  expect(round.login429.non2xx === round.login429.requests && limited >= round.login429.requests, `round ${r}: not every refused login was a 429 from the limiter`)
  if (pg.measured) {
    const pgRefused = await counted(measure.pgLogin429, pgDaemon.url)
    round.pgLogin429 = pgRefused.result
    const pgLimited = pgRefused.delta('authd_login_total{outcome="rate_limited"}')
    expect(round.pgLogin429.non2xx === round.pgLogin429.requests && pgLimited >= round.pgLogin429.requests, `round ${r}: not every refused login (PostgreSQL) was a 429 from the limiter`)
  }

  // the bare baseline of this round: the mean of one run before and one after the two rows above
  const bareAfter = await measure.bare()
  for (const b of [bareBefore, bareAfter]) expect(b.non2xx === 0 && b.errors === 0, `round ${r}: bare answered errors`)
  round.bareRuns = [bareBefore, bareAfter]
  round.bare = { rps: (bareBefore.rps + bareAfter.rps) / 2 }

  round.es256 = await measure.es256()
  const distinct = await counted(measure.meDistinct)
  round.meDistinct = distinct.result
  expect(round.meDistinct.non2xx === 0 && round.meDistinct.errors === 0, `round ${r}: /me (distinct tokens) answered errors`)
  expect(distinct.delta('authd_me_total{outcome="success"}') >= round.meDistinct.requests, `round ${r}: /me (distinct tokens) did not succeed every time`)
  round.bareVerify = await measure.bareVerify()
  expect(round.bareVerify.non2xx === 0 && round.bareVerify.errors === 0, `round ${r}: bare + ES256 refused tokens or answered errors`)

  round.meP99 = await measure.meP99()
  expect(round.meP99.non2xx === 0 && round.meP99.errors === 0, `round ${r}: /me at ${P99_CONNECTIONS} connections answered errors`)

  const argon2Before = await measure.argon2()
  const logins = await counted(measure.login)
  round.login = logins.result
  expect(round.login.non2xx === 0 && round.login.errors === 0, `round ${r}: login answered errors`)
  expect(logins.delta('authd_login_total{outcome="success"}') >= round.login.requests, `round ${r}: not every login succeeded`)
  if (pg.measured) {
    // Both daemons share the server's core: the logins still queued when the load of the row
    // before stopped (up to its connections' worth, about half a second of hashing) are hashed
    // first, so that they are not counted against the row after.
    await settle(daemon.pid)
    const pgLogins = await counted(measure.pgLogin, pgDaemon.url)
    round.pgLogin = pgLogins.result
    expect(round.pgLogin.non2xx === 0 && round.pgLogin.errors === 0, `round ${r}: login (PostgreSQL) answered errors`)
    expect(pgLogins.delta('authd_login_total{outcome="success"}') >= round.pgLogin.requests, `round ${r}: not every login (PostgreSQL) succeeded`)
    await settle(pgDaemon.pid)
  } else await settle(daemon.pid)
  // the argon2-raw baseline of this round, as bare's: the mean of one run before and one after
  // the login rows (the host's speed drifts over the 15 s or so between them)
  const argon2After = await measure.argon2()
  round.argon2Runs = [argon2Before, argon2After]
  round.argon2 = { perSecond: (argon2Before.perSecond + argon2After.perSecond) / 2, concurrency: argon2Before.concurrency, cores: argon2Before.cores }
  for (const a of [argon2Before, argon2After]) expect(a.concurrency === argon2Before.concurrency && (!cpus.pinned || a.cores === 1), `round ${r}: argon2-raw did not run as the daemon's queue does (one core, the same concurrency)`)
  if (pg.measured) {
    const pgRefreshes = await counted(measure.pgRefresh, pgDaemon.url)
    round.pgRefresh = pgRefreshes.result
    expect(round.pgRefresh.non2xx === 0 && round.pgRefresh.errors === 0, `round ${r}: refresh (PostgreSQL) answered errors`)
    expect(pgRefreshes.delta('authd_refresh_total{outcome="success"}') >= round.pgRefresh.requests, `round ${r}: not every refresh (PostgreSQL) succeeded`)
  }

  round.flood = await measure.flood()
  expect(round.flood.me.non2xx === 0 && round.flood.me.errors === 0, `round ${r}: /me during the login flood answered errors`)
  expect(round.flood.login.non2xx === 0 && round.flood.login.errors === 0, `round ${r}: the login flood answered errors`)

  await settle(daemon.pid)
  round.rss = rss(daemon.pid)
  log(
    `  bare ${round.bare.rps.toFixed(0)}/s  me ${round.meSame.rps.toFixed(0)}/s  me-distinct ${round.meDistinct.rps.toFixed(0)}/s  bare+es256 ${round.bareVerify.rps.toFixed(0)}/s  es256 ${round.es256.perSecond.toFixed(0)}/s  ` +
      `429 ${round.login429.rps.toFixed(0)}/s  login ${round.login.rps.toFixed(1)}/s  argon2 ${round.argon2.perSecond.toFixed(1)}/s (${round.argon2Runs.map((a) => a.perSecond.toFixed(1)).join(', ')})  ` +
      `p99@64 ${round.meP99.p99Ms.toFixed(2)}ms  flood p99 ${round.flood.me.p99Ms.toFixed(2)}ms  rss ${round.rss.totalMb.toFixed(1)}MB`,
  )
  if (pg.measured) {
    log(
      `  postgres: me ${round.pgMe.rps.toFixed(0)}/s  429 ${round.pgLogin429.rps.toFixed(0)}/s  login ${round.pgLogin.rps.toFixed(1)}/s  ` +
        `refresh ${round.pgRefresh.rps.toFixed(0)}/s p99 ${round.pgRefresh.p99Ms.toFixed(2)}ms`,
    )
  }
  rounds.push(round)
}
const finalRss = rss(daemon.pid)

// A reference, not a target, measured once the rows above are done (and the RSS read): the LMDB
// daemon's logins with two cores, the server's and the load generator's, as on a two-core VM, and
// argon2-raw on the same two (its queue sized on the server's core first, as the daemon's was).
// There the hash queue's core hashes while the event loop does the rest of a login on the
// other: what a two-core VM signs in. It does not charge a login's event-loop CPU, which the
// login row (one core) does, so it bounds nothing and gates nothing; its own oddities are listed
// under it, not among the run's problems. The daemon has done some 1 000 more logins by then.
const twoCores = []
const twoCoreNotes = []
if (cpus.pinned) {
  log(`login on two cores (a reference): ${ROUNDS} rounds`)
  repin(daemon.pid, cpus.pair)
  for (let r = 1; r <= ROUNDS; r++) {
    const before = await measure.argon2(true)
    const logins = await counted(measure.login)
    if (logins.result.non2xx !== 0 || logins.result.errors !== 0 || logins.delta('authd_login_total{outcome="success"}') < logins.result.requests) twoCoreNotes.push(`round ${r}: not every login succeeded`)
    await settle(daemon.pid)
    const after = await measure.argon2(true)
    if (before.cores !== 2 || after.cores !== 2 || after.concurrency !== before.concurrency) twoCoreNotes.push(`round ${r}: argon2-raw did not run on two cores with one queue size`)
    const argon2 = (before.perSecond + after.perSecond) / 2
    twoCores.push({ round: r, login: logins.result, argon2Runs: [before, after], argon2: { perSecond: argon2, concurrency: before.concurrency, cores: before.cores } })
    log(`  login ${logins.result.rps.toFixed(1)}/s  argon2 ${argon2.toFixed(1)}/s (${before.perSecond.toFixed(1)}, ${after.perSecond.toFixed(1)})`)
  }
}
await shutdown()

// ---------------------------------------------------------------------------------------------
// Results

const perRound = (f) => median(rounds.map(f))
const rows = [
  ratioRow('me_same', '`/me`, one token repeated', (r) => r.meSame.rps / r.bare.rps, 0.75, 'bare', (r) => [r.meSame.rps, r.bare.rps]),
  ratioRow('me_distinct', '`/me`, a different valid token on every request', (r) => r.meDistinct.rps / r.bareVerify.rps, 0.85, 'bare + ES256', (r) => [r.meDistinct.rps, r.bareVerify.rps]),
  maxRow('me_p99_64', `\`/me\` p99 at ${P99_CONNECTIONS} connections`, perRound((r) => r.meP99.p99Ms), 10, 'ms'),
  ratioRow('login', 'login, correct password', (r) => r.login.rps / r.argon2.perSecond, 0.85, 'argon2-raw', (r) => [r.login.rps, r.argon2.perSecond]),
  ratioRow('login_429', 'login refused by the limiter (429)', (r) => r.login429.rps / r.bare.rps, 0.6, 'bare', (r) => [r.login429.rps, r.bare.rps]),
  maxRow('me_p99_flood', `\`/me\` p99 during a ${FLOOD_LOGINS}-way login flood`, perRound((r) => r.flood.me.p99Ms), 50, 'ms'),
  maxRow('rss', 'RSS after the whole bench', finalRss.totalMb, 150, 'MB'),
  maxRow('rss_growth', 'RSS growth, first round to last', rounds[rounds.length - 1].rss.totalMb - rounds[0].rss.totalMb, RSS_GROWTH_MB, 'MB'),
  maxRow('start_ready', '`authd start` to ready', median(readyTimes), 500, 'ms'),
  maxRow('authctl_help', '`authctl --help`', median(helpTimes), 150, 'ms'),
  // PostgreSQL: a second authd on the bench's own PostgreSQL, the same store
  pgRow(() => ratioRow('pg_me_same', '`/me`, one token repeated, PostgreSQL', (r) => r.pgMe.rps / r.meSame.rps, 0.5, 'LMDB', (r) => [r.pgMe.rps, r.meSame.rps]), 'pg_me_same', '`/me`, one token repeated, PostgreSQL', '≥ 0.50 × LMDB'),
  pgRow(() => ratioRow('pg_login', 'login, correct password, PostgreSQL', (r) => r.pgLogin.rps / r.argon2.perSecond, 0.85, 'argon2-raw', (r) => [r.pgLogin.rps, r.argon2.perSecond]), 'pg_login', 'login, correct password, PostgreSQL', '≥ 0.85 × argon2-raw'),
  pgRow(
    () => ({ ...maxRow('pg_refresh_p99', `refresh p99 at ${REFRESH_CONNECTIONS} connections, PostgreSQL`, perRound((r) => r.pgRefresh.p99Ms), 25, 'ms'), detail: `${fmt(perRound((r) => r.pgRefresh.rps))}/s`, rounds: rounds.map((r) => r.pgRefresh.p99Ms) }),
    'pg_refresh_p99',
    `refresh p99 at ${REFRESH_CONNECTIONS} connections, PostgreSQL`,
    '≤ 25 ms',
  ),
  pgRow(() => ratioRow('pg_login_429', 'login refused by the limiter (429), PostgreSQL', (r) => r.pgLogin429.rps / r.bare.rps, 0.25, 'bare', (r) => [r.pgLogin429.rps, r.bare.rps]), 'pg_login_429', 'login refused by the limiter (429), PostgreSQL', '≥ 0.25 × bare'),
]

// Not targets: what a server that does nothing but the one unavoidable piece of work reaches,
// against the same baseline as the row it bounds (`bounds`); and the login row's figure on a
// two-core VM (`variantOf`), above
const references = [
  {
    id: 'bare_es256',
    name: 'bare + one ES256 check per request (no authd: the most the distinct-token row can reach here)',
    value: perRound((r) => r.bareVerify.rps / r.es256.perSecond),
    unit: '× es256-raw',
    bounds: 'me_distinct',
    detail: `${fmt(perRound((r) => r.bareVerify.rps))}/s vs ${fmt(perRound((r) => r.es256.perSecond))}/s`,
    rounds: rounds.map((r) => r.bareVerify.rps / r.es256.perSecond),
  },
  ...(twoCores.length === 0
    ? []
    : [
        {
          id: 'login_two_cores',
          name: 'login, correct password, authd and argon2-raw on two cores (a two-core VM: the event loop beside the hash, its CPU not charged; measured after the rounds)',
          value: median(twoCores.map((r) => r.login.rps / r.argon2.perSecond)),
          unit: '× argon2-raw',
          variantOf: 'login',
          detail: `${fmt(median(twoCores.map((r) => r.login.rps)))}/s vs ${fmt(median(twoCores.map((r) => r.argon2.perSecond)))}/s${twoCoreNotes.length > 0 ? `; ${twoCoreNotes.join('; ')}` : ''}`,
          rounds: twoCores.map((r) => r.login.rps / r.argon2.perSecond),
        },
      ]),
]

function ratioRow(id, name, f, min, baseline, abs) {
  const ratio = perRound(f)
  const a = rounds.map(abs)
  return {
    id,
    name,
    value: ratio,
    unit: `× ${baseline}`,
    target: `≥ ${min.toFixed(2)} × ${baseline}`,
    min,
    pass: ratio >= min,
    detail: `${fmt(median(a.map((x) => x[0])))}/s vs ${fmt(median(a.map((x) => x[1])))}/s`,
    rounds: rounds.map(f),
  }
}
/** a PostgreSQL row: `row()` when it was measured, else NOT MEASURED with the reason */
function pgRow(row, id, name, target) {
  if (pg.measured) return row()
  return { id, name, value: null, unit: '', target, pass: null, detail: pg.reason }
}
function maxRow(id, name, value, max, unit) {
  return { id, name, value, unit, target: `≤ ${max} ${unit}`, pass: value <= max }
}
function fmt(n) {
  return n >= 100 ? n.toFixed(0) : n.toFixed(1)
}

// a row NOT MEASURED (no PostgreSQL here) neither passes nor fails the run; it says why
const allPass = rows.every((r) => r.pass !== false) && problems.length === 0
const notMeasured = rows.filter((r) => r.pass === null).length
// a ratio within half a hundredth of its target is shown to four places: 0.8496 is not "0.85"
const ratioText = (r) => r.value.toFixed(r.min !== undefined && Math.abs(r.value - r.min) < 0.005 ? 4 : 2)
const shown = (r) => (r.value === null ? '—' : r.unit.startsWith('×') ? `${ratioText(r)} ${r.unit}` : `${r.value.toFixed(1)} ${r.unit}`)
const table = [
  '| row | measured | target | result | detail |',
  '|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.name} | ${shown(r)} | ${r.target} | ${r.pass === null ? 'NOT MEASURED' : r.pass ? 'PASS' : 'FAIL'} | ${r.detail ?? ''} |`),
].join('\n')
process.stdout.write(`\n${table}\n\n`)
for (const ref of references) process.stdout.write(`reference, not a target: ${ref.name}: ${ref.value.toFixed(2)} ${ref.unit} (${ref.detail})\n`)
for (const p of problems) process.stdout.write(`problem: ${p}\n`)
const verdict = !allPass ? 'some rows FAIL' : notMeasured > 0 ? `every measured row PASS, ${notMeasured} NOT MEASURED` : 'all rows PASS'
process.stdout.write(`${verdict} (${rounds.length} rounds, median; ${((performance.now() - benchStarted) / 1000).toFixed(0)} s)\n`)

const result = {
  date: new Date(Date.now() - performance.now() + benchStarted).toISOString(),
  machine: {
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    // counted before the harness pinned itself to one core
    nproc: cpus.cores,
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    kernel: os.release(),
    node: process.version,
  },
  method: {
    generator,
    pinned: cpus.pinned ? { server: cpus.server, load: cpus.load, twoCoreReference: cpus.pair } : false,
    rounds: ROUNDS,
    secondsPerRun: SECONDS,
    connections: { throughput: CONNECTIONS, p99: P99_CONNECTIONS, login: LOGIN_CONNECTIONS, floodLogins: FLOOD_LOGINS, floodMe: FLOOD_ME_CONNECTIONS },
    tokens: TOKENS,
    hash: data.hash,
    algorithm: data.algorithm,
    postgres: pg.measured
      ? { measured: true, version: pg.db.version, fsync: pg.db.fsync, cpu: pg.db.cpu, poolSize: PG_POOL, refreshConnections: REFRESH_CONNECTIONS, refreshTokens: REFRESH_TOKENS }
      : { measured: false, reason: pg.reason },
  },
  pass: allPass,
  problems,
  rows,
  references,
  startup: { readyMs: readyTimes, authctlHelpMs: helpTimes },
  rounds,
  twoCores,
  finalRss,
  seconds: (performance.now() - benchStarted) / 1000,
}
mkdirSync(join(opts.out, '..'), { recursive: true })
writeFileSync(opts.out, JSON.stringify(result, null, 2) + '\n')
log(`wrote ${opts.out}`)
process.exitCode = allPass ? 0 : 1

/** Wall-clock ms of `argv` run `n` times (hyperfine when present, else spawnSync), after 2 warm-ups */
async function timeCommand(argv, n) {
  if (has('hyperfine')) {
    const file = join(work, 'hyperfine.json')
    const cmd = argv.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')
    await run(['hyperfine', '-N', '--warmup', '2', '--runs', String(n), '--export-json', file, cmd], { cwd: ROOT })
    const { results } = JSON.parse(readFileSync(file, 'utf8'))
    return results[0].times.map((s) => s * 1000)
  }
  const times = []
  for (let i = 0; i < n + 2; i++) {
    const t = performance.now()
    spawnSync(argv[0], argv.slice(1), { stdio: 'ignore', cwd: ROOT })
    if (i >= 2) times.push(performance.now() - t)
  }
  return times
}
