/**
 * Case 3 — the rate limiter. Atomic under concurrency; a bound on the password verifications one
 * account can be made to run per hour; bounded memory under a flood of distinct keys; a 429 that
 * costs no hash while the box is busy (a full limiter forgets keys, never refuses for room); and
 * distributed stuffing (one attempt per account, a few
 * per address, under every limit) visible in metrics and logs. On PostgreSQL (limiter-pg.mjs) the
 * counters are the database's: the concurrent logins of (a) and the accounts' attempts of (b) are
 * spread over two daemons on one database and held to the same limits, and the flood of keys (c)
 * must leave the daemon's memory alone (the keys are rows; nothing is forgotten to make room).
 */
import { execFile } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { collectGarbage, startDaemon, readLogLines, sleep } from '../lib/daemon.mjs'
import { agentFor, loopbackAddress, RawConnection, request } from '../lib/http.mjs'
import { login, register } from '../lib/auth.mjs'
import { histogramQuantile, metric, scrape } from '../lib/metrics.mjs'
import { password } from '../lib/secrets.mjs'
import { mb, percentile, pool, round } from '../lib/stats.mjs'
import { check, info, timingCheck } from '../lib/report.mjs'

const PROBER = fileURLToPath(new URL('../lib/prober.mjs', import.meta.url))

/** runs a node script to its end; its standard output */
function runNode(argv) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, argv, { timeout: 120_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)))
  })
}

export const id = 'limiter'
export const title = 'Rate limiter'

const SCALE = {
  full: { perAccount: 300, keys: 200_000, maxKeys: null, probes: 400, accounts: 1000, addresses: 250 },
  small: { perAccount: 30, keys: 2000, maxKeys: 1000, probes: 40, accounts: 10, addresses: 5 },
}

const tag = () => randomBytes(6).toString('hex')

/** `store`: the PostgreSQL store to run on (lib/pg.mjs, onPostgres); by default LMDB in `dir` */
export async function run({ scale, dir, say, store }) {
  const cfg = SCALE[scale]
  const figures = []
  const extra = {}
  const name = store === undefined ? 'limiter' : 'limiter-pg'
  say = ((said) => (msg) => said(msg.replace(/^limiter:/, `${name}:`)))(say)

  // ---- a daemon with the default limits (on PostgreSQL, two on one database)
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const d = await startDaemon({ dataDir, logFile: join(dir, 'authd.log'), env: store?.env })
  const url = d.url
  const daemons = [d]
  if (store !== undefined) {
    mkdirSync(join(dir, 'data2'), { recursive: true })
    daemons.push(await startDaemon({ dataDir: join(dir, 'data2'), logFile: join(dir, 'authd2.log'), env: store.env }))
  }
  /** the daemon the i-th request goes to, and the metrics of all of them */
  const at = (i) => daemons[i % daemons.length].url
  const scrapeAll = () => Promise.all(daemons.map((x) => scrape(x.url)))
  const evaluatedBetween = (before, after) =>
    after.reduce((n, a, i) => n + metric(a, 'authd_login_total', { outcome: 'invalid_credentials' }) - metric(before[i], 'authd_login_total', { outcome: 'invalid_credentials' }), 0)
  let addr = 40_000
  const next = () => loopbackAddress(addr++)
  const newUser = async () => {
    const u = { email: `lim-${tag()}@example.test`, password: password() }
    const r = await register(url, u.email, u.password, { localAddress: loopbackAddress(39_000 + Math.floor(addr++ / 10)) })
    if (r.status !== 201) throw new Error(`setup: register answered ${r.status}`)
    return { ...u, id: r.userId }
  }

  // (a) 50 concurrent wrong logins, one address, one account: exactly 5 run a hash (per_ip_email 5/15m)
  {
    const victim = await newUser()
    const before = await scrapeAll()
    const agent = agentFor(next(), 50)
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => login(at(i), victim.email, password(), { agent })))
    const after = await scrapeAll()
    const evaluated = evaluatedBetween(before, after)
    const s401 = replies.filter((r) => r.status === 401).length
    const s429 = replies.filter((r) => r.status === 429).length
    say(`limiter: 50 concurrent → ${s401}×401, ${s429}×429, ${evaluated} hashes`)
    figures.push(check('50-way: evaluated', evaluated, '=', 5), check('401s', s401, '=', 5), check('429s', s429, '=', 45))
  }

  // (b) one account from many addresses: verifications per hour are bounded (per_email 20/1h)
  {
    const victim = await newUser()
    const before = await scrapeAll()
    const addresses = Array.from({ length: cfg.perAccount }, next)
    const statuses = []
    await pool(cfg.perAccount, 8, async (i) => {
      statuses.push((await login(at(i), victim.email, password(), { localAddress: addresses[i] })).status)
    })
    const after = await scrapeAll()
    const verified = evaluatedBetween(before, after)
    say(`limiter: ${cfg.perAccount} attempts on one account from ${cfg.perAccount} addresses → ${verified} verifications`)
    figures.push(check('verifications/account/h', verified, '<=', 100), check('401 = verifications', statuses.filter((s) => s === 401).length, '=', verified))
  }

  // (d) while the box hashes flat out, a refused login costs no hash
  {
    const probe = next()
    // spend the address's per_ip budget with malformed requests (counted, never hashed)
    for (let i = 0; i < 50; i++) await request(url, 'POST', '/api/auth/login', { json: {}, localAddress: probe })
    let stop = false
    const busy = Array.from({ length: 16 }, async (_, w) => {
      for (let k = 0; !stop && k < 10_000; k++) {
        await login(url, `nobody-${tag()}@example.test`, password(), { localAddress: loopbackAddress(60_000 + w * 1000 + Math.floor(k / 40)) })
      }
    })
    await sleep(scale === 'full' ? 1500 : 500) // the hash queue is full before the first probe
    const before = await scrape(url)
    // The probes come from a process of their own: this one is busy driving the flood. Three
    // rounds, and the figure is the median round's p99, as the benchmark takes its figures: one
    // round's p99 rests on its four slowest probes, which a neighbour on this shared VM can set.
    const rounds = []
    for (let r = 0; r < 3; r++) rounds.push(JSON.parse(await runNode([PROBER, url, probe, String(cfg.probes), '5'])))
    const after = await scrape(url)
    stop = true
    await Promise.all(busy)
    const p99s = rounds.map((r) => percentile(r.ms, 99))
    const median = [...p99s].sort((a, b) => a - b)[1]
    const { ms, floor } = rounds[p99s.indexOf(median)]
    const refused = rounds.reduce((n, r) => n + r.refused, 0)
    const p99 = median
    // the daemon's own view: its request-duration histogram, for these 429s only
    const server = histogramQuantile(before, after, 'authd_http_request_duration_seconds', { route: '/api/auth/login', status: '429' }, 0.99)
    const hashesDuring = metric(after, 'authd_login_total', { outcome: 'invalid_credentials' }) - metric(before, 'authd_login_total', { outcome: 'invalid_credentials' })
    say(`limiter: 429 p99 ${round(p99, 2)} ms at the client, median of rounds ${p99s.map((x) => round(x, 2)).join(' / ')} (p50 ${round(percentile(ms, 50), 2)}), ≤ ${server.bound * 1000} ms in the daemon over ${server.total}; /healthz meanwhile p99 ${round(percentile(floor, 99), 2)} ms; ${hashesDuring} hashes ran`)
    figures.push(
      timingCheck(scale)('429 p99 busy', round(p99, 2), '<=', 5, 'ms'),
      info('in the daemon ≤', server.bound * 1000, 'ms'),
      info('/healthz p99 meanwhile', round(percentile(floor, 99), 2), 'ms'),
      check('probes refused', refused, '=', 3 * cfg.probes),
      check('hashes meanwhile', hashesDuring, '>', 0),
    )
  }

  // (e) distributed stuffing: N accounts × 1 attempt from few addresses, under every limit
  {
    const accounts = []
    await pool(cfg.accounts, 2, async (i) => {
      const u = { email: `stuffed-${i}-${tag()}@example.test`, password: password() }
      const r = await register(url, u.email, u.password, { localAddress: loopbackAddress(70_000 + Math.floor(i / 10)) })
      if (r.status !== 201) throw new Error(`setup: register answered ${r.status}`)
      accounts[i] = { ...u, id: r.userId }
    })
    const before = await scrape(url)
    const perAddress = Math.ceil(cfg.accounts / cfg.addresses)
    const statuses = {}
    await pool(cfg.accounts, 8, async (i) => {
      const r = await login(url, accounts[i].email, password(), { localAddress: loopbackAddress(80_000 + Math.floor(i / perAddress)) })
      statuses[r.status] = (statuses[r.status] ?? 0) + 1
    })
    const after = await scrape(url)
    const counted = metric(after, 'authd_login_total', { outcome: 'invalid_credentials' }) - metric(before, 'authd_login_total', { outcome: 'invalid_credentials' })
    await sleep(500)
    for (const x of daemons) await x.stop()
    const ids = new Set(accounts.map((a) => a.id))
    const lines = readLogLines(d.logFile).filter((l) => l.event === 'login' && l.outcome === 'bad_password' && ids.has(l.userId))
    const ips = new Set(lines.map((l) => l.ip))
    const users = new Set(lines.map((l) => l.userId))
    say(`limiter: stuffing ${cfg.accounts} accounts from ${cfg.addresses} addresses → statuses ${JSON.stringify(statuses)}; metric +${counted}; ${lines.length} log lines, ${ips.size} addresses, ${users.size} accounts`)
    figures.push(
      check('stuffing in metrics', counted, '=', cfg.accounts),
      check('in logs', lines.length, '=', cfg.accounts),
      check('addresses in logs', ips.size, '=', cfg.addresses),
    )
    extra.stuffing = { statuses, counted, lines: lines.length, ips: ips.size, users: users.size }
  }

  // (c) a flood of distinct keys (malformed logins from distinct forwarded addresses, each counted
  // on login.per_ip): memory stays bounded, and a full limiter forgets keys rather than refuse
  {
    const keysDir = join(dir, 'keys-data')
    mkdirSync(keysDir, { recursive: true })
    // the snapshot signal is how the case makes the daemon collect garbage before measuring
    const env = { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1', NODE_OPTIONS: '--heapsnapshot-signal=SIGUSR2' }
    if (cfg.maxKeys !== null) env.AUTHD_RATE_LIMIT_MAX_KEYS = String(cfg.maxKeys)
    const k = await startDaemon({ dataDir: keysDir, logFile: join(dir, 'authd-keys.log'), env: { ...env, ...store?.env } })
    const maxKeys = cfg.maxKeys ?? 100_000
    // (a heap snapshot leaves RSS inflated: the first one comes before the RSS baseline; at the
    // small scale of npm test the few keys are not worth two snapshots)
    const measureHeap = scale === 'full'
    if (measureHeap) await collectGarbage(k, keysDir)
    const heapBefore = metric(await scrape(k.url), 'authd_nodejs_heap_size_used_bytes')
    // warm up the request path before the baseline
    const warm = new RawConnection(k.port)
    await warm.ready
    // (few keys: 2 000 requests over 20 addresses, so the warm-up leaves the limiter nearly empty)
    for (let i = 0; i < (scale === 'full' ? 2000 : 200); i++) await warm.send(junkLoginFrom(`192.168.0.${i % 20}`))
    warm.close()
    await sleep(300)
    const rssBefore = k.rss()
    const statuses = {}
    const t0 = performance.now()
    const conns = 8
    const depth = 32
    await Promise.all(
      Array.from({ length: conns }, async (_, c) => {
        const conn = new RawConnection(k.port)
        await conn.ready
        const share = Math.ceil(cfg.keys / conns)
        for (let start = c * share; start < Math.min(cfg.keys, (c + 1) * share) && performance.now() - t0 < 300_000; start += depth) {
          const batch = []
          for (let i = start; i < Math.min(start + depth, (c + 1) * share, cfg.keys); i++) batch.push(conn.send(junkLoginFrom(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)))
          for (const r of await Promise.all(batch)) statuses[r.status] = (statuses[r.status] ?? 0) + 1
        }
        conn.close()
      }),
    )
    const seconds = (performance.now() - t0) / 1000
    await sleep(500)
    const rssAfter = k.rss()
    if (measureHeap) await collectGarbage(k, keysDir)
    const heapAfter = metric(await scrape(k.url), 'authd_nodejs_heap_size_used_bytes')
    const sent = Object.values(statuses).reduce((a, b) => a + b, 0)
    const evicted = metric(await scrape(k.url), 'authd_rate_limit_evictions_total')
    // Each 400 is a request the limiter counted under a new key, and the warm-up used 20 keys;
    // what it forgot to make room is counted. A limiter that refused when full would answer 429.
    const held = (statuses[400] ?? 0) + 20 - evicted
    const healthy = (await request(k.url, 'GET', '/healthz')).status
    await k.stop()
    say(`limiter: ${sent} distinct keys in ${round(seconds, 1)} s → ${JSON.stringify(statuses)}; ${evicted} forgotten; live heap ${mb(heapBefore)} → ${mb(heapAfter)} MB; RSS ${mb(rssBefore)} → ${mb(rssAfter)} MB`)
    figures.push(
      check('distinct keys', sent, '>=', cfg.keys),
      // PostgreSQL keeps every key (rows of the database), and forgets none to make room
      store === undefined ? check('keys held', held, '<=', maxKeys) : info('keys held (database rows)', held),
      check('refused for room', statuses[429] ?? 0, '=', 0),
      // what the keys hold: the live heap after a full collection (RSS also carries V8's headroom)
      measureHeap ? check('keys memory', mb(heapAfter - heapBefore), '<=', 64, 'MB') : info('heap growth (not collected)', mb(heapAfter - heapBefore), 'MB'),
      info('RSS growth', mb(rssAfter - rssBefore), 'MB'),
      check('healthz after', healthy, '=', 200),
    )
    extra.keys = { statuses, held, evicted, seconds, rssBefore, rssAfter, heapBefore, heapAfter }
  }

  return { figures, extra }
}

/** a login without credentials: counted on login.per_ip (a key per address), answered 400 */
function junkLoginFrom(ip) {
  return `POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: ${ip}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`
}
