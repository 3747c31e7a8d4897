/**
 * Case — long-email memory. Logins whose email is 16 KB of U+FDFA (which NFKC would make 18
 * times longer) from many addresses: each is an unknown email (401 after the dummy hash), and the
 * daemon's memory must not grow with them (the limiter keys emails by a hash).
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { sleep, startDaemon } from '../lib/daemon.mjs'
import { request } from '../lib/http.mjs'
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
  const d = await startDaemon({ dataDir, logFile: join(dir, 'authd.log'), env: { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1' } })
  const url = d.url
  // 10 logins per address and each email once: under every limit, so each one runs its hash
  const attempt = (i, email) =>
    request(url, 'POST', '/api/auth/login', { json: { email, password: password() }, headers: { 'x-forwarded-for': `10.9.${(i / 10) >> 8}.${(i / 10) & 255}` } })
  // warm-up with ordinary unknown emails: argon2's memory and the request path are in RSS before the baseline
  await pool(40, 2, (i) => attempt(100_000 + i, `warm-${i}@example.test`))
  await sleep(300)
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
  await d.stop()
  const sent = Object.values(statuses).reduce((a, b) => a + b, 0)
  say(`long-email: ${sent} logins with 16 KB emails in ${round(seconds, 1)} s → ${JSON.stringify(statuses)}; RSS ${mb(rssBefore)} → ${mb(rssAfter)} MB`)
  return {
    figures: [
      check('logins', sent, '=', cfg.logins),
      check('answered 401', statuses[401] ?? 0, '=', cfg.logins),
      check('RSS growth', mb(rssAfter - rssBefore), '<=', 20, 'MB'),
      info('seconds', round(seconds, 1), 's'),
    ],
    extra: { statuses, rssBefore, rssAfter, seconds },
  }
}
