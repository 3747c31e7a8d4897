/**
 * Case — long-email memory. Logins whose email is 16 KB of U+FDFA (which NFKC would make 18
 * times longer) from many addresses: each is an unknown email (401 after the dummy hash), and the
 * daemon's memory must not grow with them (the limiter keys emails by a hash). What they leave
 * behind is the live heap after a full collection (as the limiter case measures its keys): RSS
 * also carries the heap V8 grew for the bodies' garbage, 8 to 35 MB run to run for the same code.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { collectGarbage, sleep, startDaemon } from '../lib/daemon.mjs'
import { request } from '../lib/http.mjs'
import { metric, scrape } from '../lib/metrics.mjs'
import { password } from '../lib/secrets.mjs'
import { mb, pool, round } from '../lib/stats.mjs'
import { check, info } from '../lib/report.mjs'

export const id = 'long-email'
export const title = 'Long-email memory'

const SCALE = {
  full: { logins: 1000 },
  small: { logins: 60 },
}

export async function run({ scale, dir, say }) {
  const cfg = SCALE[scale]
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  // a heap snapshot (SIGUSR2) collects garbage first: collectGarbage
  const d = await startDaemon({ dataDir, logFile: join(dir, 'authd.log'), env: { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1', NODE_OPTIONS: '--heapsnapshot-signal=SIGUSR2' } })
  const liveHeap = async () => {
    await collectGarbage(d, dataDir)
    return metric(await scrape(url), 'authd_nodejs_heap_size_used_bytes')
  }
  const url = d.url
  // 10 logins per address and each email once: under every limit, so each one runs its hash
  const attempt = (i, email) =>
    request(url, 'POST', '/api/auth/login', { json: { email, password: password() }, headers: { 'x-forwarded-for': `10.9.${(i / 10) >> 8}.${(i / 10) & 255}` } })
  // warm-up with ordinary unknown emails: argon2's memory and the request path are in RSS before the baseline
  await pool(40, 2, (i) => attempt(100_000 + i, `warm-${i}@example.test`))
  await sleep(300)
  const heapBefore = await liveHeap()
  const rssBefore = d.rss()
  const statuses = {}
  const t0 = performance.now()
  // 16 KB of UTF-8 as sent (5 400 × 3 bytes), different for each login
  const body = '\ufdfa'.repeat(5400)
  await pool(cfg.logins, 4, async (i) => {
    if (performance.now() - t0 > 600_000) return
    const r = await attempt(i, `${body}${i}@example.test`)
    statuses[r.status] = (statuses[r.status] ?? 0) + 1
  })
  const seconds = (performance.now() - t0) / 1000
  await sleep(500)
  const rssAfter = d.rss()
  const heapAfter = await liveHeap()
  await d.stop()
  const sent = Object.values(statuses).reduce((a, b) => a + b, 0)
  say(`long-email: ${sent} logins with 16 KB emails in ${round(seconds, 1)} s → ${JSON.stringify(statuses)}; live heap ${mb(heapBefore)} → ${mb(heapAfter)} MB; RSS ${mb(rssBefore)} → ${mb(rssAfter)} MB`)
  return {
    figures: [
      check('logins', sent, '=', cfg.logins),
      check('answered 401', statuses[401] ?? 0, '=', cfg.logins),
      // a login that kept its email (10.8 KB as a JS string) would add 10 MB here
      check('live heap growth', mb(heapAfter - heapBefore), '<=', 5, 'MB'),
      info('RSS growth', mb(rssAfter - rssBefore), 'MB'),
      info('seconds', round(seconds, 1), 's'),
    ],
    extra: { statuses, heapBefore, heapAfter, rssBefore, rssAfter, seconds },
  }
}
