#!/usr/bin/env node
/**
 * What an audit event costs on the hot path (docs/performance.md, "What an audit event costs").
 *
 * A failed login's event is a small write of its own (nothing else changes); a login.success is
 * written in the session's write. This measures both, in process on the built code (dist/), on a
 * fresh LMDB store and (if the server binaries are there) a throwaway PostgreSQL with its durable
 * defaults (fsync, synchronous commit):
 *   - the store alone: `appendAudit` of one login.failure; `createSession` without and with its
 *     login.success event; and appends 16 at once (what a flood of guesses does);
 *   - the use-case: `auth.login` with a wrong password, and with the right one, through the same
 *     store with the audit write on and off (a wrapper drops the events when off), the two
 *     alternating op by op so the machine's drift falls on both alike. Real argon2 at the
 *     production parameters, limits out of the way.
 * Each figure is the median per operation (ms) over N; for the use-case also the median of the
 * differences of the back-to-back pairs (on minus off), what the event costs there.
 *
 *   node bench/audit-cost.mjs [--n 200] [--backends lmdb,postgres] [--no-build] [--json FILE]
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { pgServer, startPg, BENCH_DATABASE } from './lib/pg.mjs'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const { values: opts } = parseArgs({
  options: {
    n: { type: 'string', default: '200' },
    backends: { type: 'string', default: 'lmdb,postgres' },
    'no-build': { type: 'boolean', default: false },
    json: { type: 'string' },
  },
})
const N = Math.max(10, Math.min(5000, Number(opts.n)))
const BACKENDS = opts.backends.split(',').map((s) => s.trim())

if (!opts['no-build']) {
  const b = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' })
  if (b.status !== 0) process.exit(2)
}
const dist = (path) => import(pathToFileURL(join(ROOT, 'dist', path)).href)
const { loadConfig } = await dist('config/load.js')
const { createServices } = await dist('daemon/services.js')
const { createLogger } = await dist('daemon/logger.js')
const { openLmdbStore } = await dist('store/lmdb-store.js')
const { openPgStore } = await dist('store/pg/pg-store.js')
const { apiDraft } = await dist('core/audit.js')

const OPEN = '1000000/1m'
const ENV = {
  AUTHD_LOG_LEVEL: 'error',
  AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: OPEN,
  AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: OPEN,
  AUTHD_RATE_LIMIT_LOGIN_PER_IP: OPEN,
  AUTHD_RATE_LIMIT_REGISTER_PER_IP: OPEN,
  // every right login starts a session: none is evicted (an eviction would add its own event)
  AUTHD_SESSIONS_MAX_PER_USER: '100000',
}
const CLIENT = { ip: '203.0.113.7', ipKey: '203.0.113.7', userAgent: 'bench/1.0' }
const PASSWORD = 'correct horse battery staple 42'

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const r3 = (x) => Math.round(x * 1000) / 1000
async function timed(fn) {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}

/** the store, with its audit writes on or off (`audit.on`): off drops the events a write carries */
function switchable(store) {
  const audit = { on: true }
  const wrapped = new Proxy(store, {
    get(target, prop) {
      if (prop === 'appendAudit') return (events) => (audit.on ? target.appendAudit(events) : Promise.resolve())
      if (prop === 'createSession') {
        return (session, limit, a) => target.createSession(session, limit, audit.on || a === undefined ? a : { ...a, events: [], evicted: () => [] })
      }
      const v = target[prop]
      return typeof v === 'function' ? v.bind(target) : v
    },
  })
  return { store: wrapped, audit }
}

async function measure(name, store, dir) {
  const out = { backend: name }
  const failure = () => apiDraft('login.failure', CLIENT, { at: Date.now(), userId: 'u-bench', email: 'bench@bench.test', detail: { reason: 'bad_password' } })
  let n = 0
  const session = () => {
    const now = Date.now()
    const id = `bench-session-${n++}`
    return {
      id,
      userId: 'u-bench',
      createdAt: now,
      lastUsedAt: now,
      expiresAt: now + 86_400_000,
      ip: CLIENT.ip,
      userAgent: CLIENT.userAgent,
      refreshHash: `bench-refresh-${id}`,
      previousHash: null,
      rotatedAt: null,
      generation: 0,
      familyHash: `bench-family-${id}`,
      rotations: [],
      amr: ['pwd'],
    }
  }
  const limit = { max: 100_000, isLive: () => true }
  // the user the store-level sessions belong to (PostgreSQL holds sessions to their user)
  const at = Date.now()
  await store.createUser({ id: 'u-bench', email: 'bench@bench.test', passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$bench$bench', createdAt: at, updatedAt: at, disabled: false })

  // the store alone
  const append = []
  for (let i = 0; i < N; i++) append.push(await timed(() => store.appendAudit([failure()])))
  out.appendAudit = r3(median(append))
  const plain = []
  const withEvent = []
  for (let i = 0; i < N; i++) {
    plain.push(await timed(() => store.createSession(session(), limit, { events: [], evicted: () => [] })))
    const s = session()
    const ev = apiDraft('login.success', CLIENT, { at: Date.now(), userId: 'u-bench', email: 'bench@bench.test', sessionId: s.id })
    withEvent.push(await timed(() => store.createSession(s, limit, { events: [ev], evicted: () => [] })))
  }
  out.createSession = r3(median(plain))
  out.createSessionWithEvent = r3(median(withEvent))
  // a flood of guesses: appends 16 at once, per append
  const t0 = performance.now()
  for (let i = 0; i < N; i += 16) await Promise.all(Array.from({ length: 16 }, () => store.appendAudit([failure()])))
  out.appendAudit16 = r3((performance.now() - t0) / (Math.ceil(N / 16) * 16))

  // the use-case, audit on and off, alternating
  const { store: sw, audit } = switchable(store)
  const config = loadConfig({ flags: { data: dir }, env: ENV, cwd: dir }).config
  const services = await createServices(config, { store: sw, logger: createLogger({ level: 'error' }), processMetrics: false })
  try {
    const email = `audit-cost-${name}@bench.test`
    await services.auth.register({ email, password: PASSWORD }, CLIENT)
    const runs = { wrong: { on: [], off: [] }, right: { on: [], off: [] } }
    const loginOnce = async (password) => {
      try {
        await services.auth.login({ email, password }, CLIENT)
      } catch (err) {
        if (err?.code !== 'INVALID_CREDENTIALS') throw err
      }
    }
    // warm-up: the hasher's threads, the key, the caches
    for (let i = 0; i < 5; i++) await loginOnce('wrong password 0')
    for (let i = 0; i < N; i++) {
      for (const on of i % 2 === 0 ? [true, false] : [false, true]) {
        audit.on = on
        runs.wrong[on ? 'on' : 'off'].push(await timed(() => loginOnce(`wrong password ${i}`)))
      }
    }
    const right = Math.max(10, Math.floor(N / 4))
    for (let i = 0; i < right; i++) {
      for (const on of i % 2 === 0 ? [true, false] : [false, true]) {
        audit.on = on
        runs.right[on ? 'on' : 'off'].push(await timed(() => loginOnce(PASSWORD)))
      }
    }
    audit.on = true
    // the pairs ran back to back: the median of their differences is the steadier figure
    const paired = (r) => r3(median(r.on.map((x, i) => x - r.off[i])))
    out.failedLogin = { on: r3(median(runs.wrong.on)), off: r3(median(runs.wrong.off)), paired: paired(runs.wrong), n: N }
    out.login = { on: r3(median(runs.right.on)), off: r3(median(runs.right.off)), paired: paired(runs.right), n: right }
  } finally {
    await services.close()
  }
  return out
}

const results = []
const work = mkdtempSync(join(os.tmpdir(), 'authd-audit-cost-'))
try {
  for (const backend of BACKENDS) {
    if (backend === 'lmdb') {
      const dir = join(work, 'lmdb')
      const store = await openLmdbStore({ path: dir })
      try {
        results.push(await measure('lmdb', store, dir))
      } finally {
        await store.close()
      }
    } else if (backend === 'postgres') {
      const server = pgServer()
      if ('missing' in server) {
        console.error(`audit-cost: PostgreSQL skipped: ${server.missing}`)
        continue
      }
      const pg = await startPg({ server, cpu: null, fsync: true })
      try {
        const { store } = await openPgStore({ url: pg.url(BENCH_DATABASE), poolSize: 10 })
        try {
          results.push(await measure('postgres', store, join(work, 'pg')))
        } finally {
          await store.close()
        }
      } finally {
        await pg.stop()
      }
    } else {
      console.error(`audit-cost: unknown backend ${backend} (lmdb, postgres)`)
      process.exit(2)
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true })
}

console.log(`audit-cost: median per operation (ms), N=${N}, node ${process.version}, ${os.availableParallelism()} cores, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`)
console.log('| backend | appendAudit (one login.failure) | 16 at once, per append | createSession | with its login.success | failed login, audit off → on | login, audit off → on |')
console.log('|---|---|---|---|---|---|---|')
for (const r of results) {
  const d = (x) => `${x.off} → ${x.on} (pairs: ${x.paired >= 0 ? '+' : ''}${x.paired})`
  console.log(`| ${r.backend} | ${r.appendAudit} | ${r.appendAudit16} | ${r.createSession} | ${r.createSessionWithEvent} | ${d(r.failedLogin)} | ${d(r.login)} |`)
}
if (opts.json !== undefined) writeFileSync(opts.json, JSON.stringify({ n: N, node: process.version, loadavg: os.loadavg(), results }, null, 2))
