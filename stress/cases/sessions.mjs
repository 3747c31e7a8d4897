/**
 * Case — sessions per user, on a huge store (before the fix, 100 000 sessions of one user made
 * `authctl sessions list` take 7 s and 520 MB, and the session sweep held the event loop 0.9 s).
 * The store is seeded straight through the store module (argon2 logins are far too slow for
 * 100 000 sessions): live sessions, each user at sessions.max_per_user, and as many expired ones.
 *   (a) `authctl sessions list --json` lists every live session in bounded time and peak RSS;
 *   (b) the sweep of the expired ones, the daemon's own code run here with the event loop watched
 *       (the daemon runs it every 10 minutes), never holds the loop for long;
 *   (c) logins beyond sessions.max_per_user, one after another and concurrently, keep the user
 *       at the max; the session ended first is the least recently used and its token is refused.
 */
import { execFile } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { ROOT, readLogLines, startDaemon } from '../lib/daemon.mjs'
import { login, refresh, register } from '../lib/auth.mjs'
import { loopbackAddress } from '../lib/http.mjs'
import { password } from '../lib/secrets.mjs'
import { mb, round } from '../lib/stats.mjs'
import { check, info, timingCheck } from '../lib/report.mjs'

export const id = 'sessions'
export const title = 'Sessions per user'

const SCALE = {
  full: { users: 2000, max: 50, expired: 100_000, logins: 60, concurrent: 20 },
  small: { users: 40, max: 5, expired: 2000, logins: 8, concurrent: 6 },
}

const DAY = 86_400_000
const AUTHCTL = join(ROOT, 'bin', 'authctl.js')
// the child reports its peak resident set size and the CPU it used as it exits
const REPORT = `data:text/javascript,process.on('exit',()=>{const u=process.resourceUsage();process.stderr.write('maxrss_kb='+u.maxRSS+' cpu_us='+(u.userCPUTime+u.systemCPUTime)+'\\n')})`

const dist = (path) => import(pathToFileURL(join(ROOT, 'dist', path)).href)

function authctl(args, env = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    execFile(
      process.execPath,
      ['--import', REPORT, AUTHCTL, ...args],
      { timeout: 120_000, maxBuffer: 1 << 30, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env } },
      (err, stdout, stderr) => {
        const ms = performance.now() - started
        if (err) return reject(new Error(`authctl ${args.join(' ')}: ${err.message}\n${stderr}`))
        const m = /maxrss_kb=(\d+) cpu_us=(\d+)/.exec(stderr)
        resolve({ stdout, ms, rss: m === null ? NaN : Number(m[1]) * 1024, cpuMs: m === null ? NaN : Number(m[2]) / 1000 })
      },
    )
  })
}

export async function run({ scale, dir, say }) {
  const cfg = SCALE[scale]
  const figures = []
  const extra = {}
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const live = cfg.users * cfg.max

  // ---- the store: `live` sessions (max_per_user for each user) and `expired` long dead ones
  const { openLmdbStore } = await dist('store/lmdb-store.js')
  const { sweepExpiredSessions } = await dist('core/sessions.js')
  const now = Date.now()
  {
    const store = await openLmdbStore({ path: dataDir })
    const t0 = performance.now()
    for (let u = 0; u < cfg.users; u++) {
      await store.createUser({ id: `seed-user-${u}`, email: `seed-${u}@example.test`, passwordHash: 'x', createdAt: now, updatedAt: now, disabled: false })
    }
    const session = (i, dead) => ({
      id: `${dead ? 'x' : 's'}${String(i).padStart(7, '0')}`,
      userId: `seed-user-${i % cfg.users}`,
      createdAt: dead ? now - 60 * DAY : now - i * 1000,
      lastUsedAt: dead ? now - 40 * DAY : now - i,
      expiresAt: dead ? now - 30 * DAY : now + 29 * DAY,
      ip: '203.0.113.7',
      userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
      refreshHash: `seed-hash-${dead ? 'x' : 's'}${i}`,
      previousHash: null,
      rotatedAt: null,
      generation: 0,
      familyHash: `seed-family-${dead ? 'x' : 's'}${i}`,
      rotations: [],
      amr: ['pwd'],
    })
    for (const [count, dead] of [[live, false], [cfg.expired, true]]) {
      for (let i = 0; i < count; i += 5000) {
        await Promise.all(Array.from({ length: Math.min(5000, count - i) }, (_, k) => store.createSession(session(i + k, dead))))
      }
    }
    await store.close()
    say(`sessions: seeded ${live} live sessions of ${cfg.users} users and ${cfg.expired} expired ones in ${round((performance.now() - t0) / 1000, 1)} s`)
  }

  // (a) authctl sessions list --json on the whole store
  {
    const r = await authctl(['sessions', 'list', '--json', '--data', dataDir])
    const listed = JSON.parse(r.stdout).sessions
    const complete = listed.length === live && listed.every((s) => typeof s.id === 'string' && typeof s.lastUsedAt === 'string' && s.email !== undefined)
    say(`sessions: authctl sessions list --json: ${listed.length} sessions, ${mb(r.stdout.length)} MB of JSON in ${Math.round(r.ms)} ms (${Math.round(r.cpuMs)} ms of CPU), peak RSS ${mb(r.rss)} MB`)
    figures.push(
      check('listed', listed.length, '=', live),
      check('complete', complete ? 1 : 0, '=', 1),
      // The figures at 100 000 sessions: 7 s and 520 MB; half of each is asked. The time
      // judged is the command's CPU time: on this shared 2-core VM the wall time is mostly the
      // neighbours' (shown beside it).
      timingCheck(scale)('list CPU', Math.round(r.cpuMs), '<=', 3500, 'ms'),
      info('list wall', Math.round(r.ms), 'ms'),
      check('list peak RSS', mb(r.rss), '<=', 260, 'MB'),
    )
    extra.list = { ms: r.ms, cpuMs: r.cpuMs, rss: r.rss, bytes: r.stdout.length }
  }

  // (b) the sweep of the expired sessions, with the event loop watched
  {
    const store = await openLmdbStore({ path: dataDir })
    const h = monitorEventLoopDelay({ resolution: 5 })
    // timers keep firing while the sweep runs (a request would be served between its chunks)
    let ticks = 0
    const ticker = setInterval(() => ticks++, 10)
    h.enable()
    const t0 = performance.now()
    const deleted = await sweepExpiredSessions(store, Date.now(), { idleTtlMs: 7 * DAY, absoluteTtlMs: 30 * DAY, reuseGraceMs: 10_000, maxPerUser: cfg.max })
    const ms = performance.now() - t0
    clearInterval(ticker)
    h.disable()
    const maxDelay = h.max / 1e6
    const left = (await store.sessionEntries({ limit: live + cfg.expired })).length
    await store.close()
    const p99 = h.percentile(99) / 1e6
    say(`sessions: the sweep deleted ${deleted} in ${Math.round(ms)} ms; event-loop delay max ${round(maxDelay, 1)} ms, p99 ${round(p99, 1)} ms; a 10 ms timer fired ${ticks} times meanwhile`)
    figures.push(
      check('swept', deleted, '=', cfg.expired),
      check('left', left, '=', live),
      // The issue: 0.9 s in one piece. A chunk's work is a few ms; what the maximum adds to that
      // is garbage collection and, here, the neighbours on a shared VM.
      timingCheck(scale)('sweep max loop delay', round(maxDelay, 1), '<=', 250, 'ms'),
      info('sweep p99 loop delay', round(p99, 1), 'ms'),
      info('sweep time', Math.round(ms), 'ms'),
      check('timer ticks during the sweep', ticks, '>=', Math.min(10, Math.floor(ms / 100))),
    )
    extra.sweep = { ms, deleted, maxDelayMs: maxDelay, p99DelayMs: p99, ticks }
  }

  // (c) logins beyond max_per_user
  {
    const logFile = join(dir, 'authd.log')
    const roomy = {
      AUTHD_SESSIONS_MAX_PER_USER: String(cfg.max),
      AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '1000/1m',
      AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '1000/1m',
      AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1000/1m',
      AUTHD_RATE_LIMIT_LOGIN_PER_DEVICE: '1000/1m',
    }
    const d = await startDaemon({ dataDir, logFile, env: roomy })
    const email = `max-${Date.now()}@example.test`
    const pw = password()
    const first = await register(d.url, email, pw, { localAddress: loopbackAddress(31_000) })
    if (first.status !== 201) throw new Error(`setup: register answered ${first.status}`)
    const statuses = {}
    const note = (r) => (statuses[r.status] = (statuses[r.status] ?? 0) + 1)
    for (let i = 1; i < cfg.logins; i++) note(await login(d.url, email, pw, { localAddress: loopbackAddress(31_001 + i) }))
    const count = async () => JSON.parse((await authctl(['sessions', 'list', '--user', email, '--json', '--data', dataDir])).stdout).sessions.length
    const afterSequential = await count()
    // the first session has the oldest last use: it ended, and its refresh token with it
    const firstRefresh = (await refresh(d.url, first.refreshToken, { localAddress: loopbackAddress(31_000) })).status
    const concurrent = await Promise.all(Array.from({ length: cfg.concurrent }, (_, i) => login(d.url, email, pw, { localAddress: loopbackAddress(32_000 + i) })))
    concurrent.forEach(note)
    const afterConcurrent = await count()
    await d.stop()
    const evictions = readLogLines(logFile).filter((l) => l.event === 'session_evict' && l.userId === first.userId).length
    const expectedEvictions = cfg.logins + cfg.concurrent - cfg.max
    say(`sessions: ${cfg.logins} logins one after another → ${afterSequential} sessions; the first one's refresh → ${firstRefresh}; ${cfg.concurrent} concurrent → ${afterConcurrent}; statuses ${JSON.stringify(statuses)}; ${evictions} session_evict lines`)
    figures.push(
      check('sessions after logins', afterSequential, '=', cfg.max),
      check('after concurrent logins', afterConcurrent, '=', cfg.max),
      check('evicted refresh', firstRefresh, '=', 401),
      check('logins refused', cfg.logins - 1 + cfg.concurrent - (statuses[200] ?? 0), '=', 0),
      check('session_evict lines', evictions, '=', expectedEvictions),
    )
    extra.logins = { statuses, afterSequential, afterConcurrent, firstRefresh, evictions }
  }

  return { figures, extra }
}
