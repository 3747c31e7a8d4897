/**
 * Case — limiter fill. A flood of junk logins from more distinct addresses than the limiter may
 * hold (through a trusted proxy's X-Forwarded-For) fills it; a new client's login must still
 * answer 401 or 200, never 429, and the daemon's memory stay bounded: a full limiter forgets the
 * keys that protect least instead of refusing.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { sleep, startDaemon } from '../lib/daemon.mjs'
import { RawConnection, request } from '../lib/http.mjs'
import { register } from '../lib/auth.mjs'
import { metric, scrape } from '../lib/metrics.mjs'
import { password } from '../lib/secrets.mjs'
import { mb, round } from '../lib/stats.mjs'
import { check, info } from '../lib/report.mjs'

export const id = 'limiter-fill'
export const title = 'Filling the rate limiter'

const SCALE = {
  full: { addresses: 60_000, maxKeys: 20_000, rssMB: 128 },
  small: { addresses: 3000, maxKeys: 1000, rssMB: 128 },
}

export async function run({ scale, dir, say }) {
  const cfg = SCALE[scale]
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const d = await startDaemon({
    dataDir,
    logFile: join(dir, 'authd.log'),
    env: { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1', AUTHD_RATE_LIMIT_MAX_KEYS: String(cfg.maxKeys) },
  })
  const url = d.url
  const user = { email: `fill-${randomBytes(4).toString('hex')}@example.test`, password: password() }
  const reg = await register(url, user.email, user.password, { headers: { 'x-forwarded-for': '198.51.100.1' } })
  if (reg.status !== 201) throw new Error(`setup: register answered ${reg.status}`)

  // warm the request path and argon2 (its memory stays in RSS once used), then the baseline
  for (let i = 0; i < 10; i++) {
    const json = i % 2 === 0 ? { email: user.email, password: user.password } : { email: `warm-${i}@example.test`, password: 'wrong-password' }
    await request(url, 'POST', '/api/auth/login', { json, headers: { 'x-forwarded-for': `172.31.0.${i}` } })
  }
  const warm = new RawConnection(d.port)
  await warm.ready
  for (let i = 0; i < 500; i++) await warm.send(junkLogin(`192.168.1.${i % 200}`))
  warm.close()
  await sleep(300)
  const rssBefore = d.rss()

  // the flood: 8 pipelined connections, each address once
  const flood = {}
  let done = false
  const t0 = performance.now()
  const flooding = Promise.all(
    Array.from({ length: 8 }, async (_, c) => {
      const conn = new RawConnection(d.port)
      await conn.ready
      for (let start = c; start < cfg.addresses && performance.now() - t0 < 300_000; start += 8 * 32) {
        const batch = []
        for (let i = start; i < Math.min(start + 8 * 32, cfg.addresses); i += 8) batch.push(conn.send(junkLogin(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)))
        for (const r of await Promise.all(batch)) flood[r.status] = (flood[r.status] ?? 0) + 1
      }
      conn.close()
    }),
  ).finally(() => (done = true))

  // new clients meanwhile and after, from addresses never seen: the user with her password, and
  // a wrong password for an email never seen (wrong ones for her email would spend her per_email)
  const probes = {}
  let n = 0
  const probe = async () => {
    const ip = `172.16.${(n >> 8) & 255}.${n & 255}`
    const right = n++ % 2 === 0
    const json = right ? { email: user.email, password: user.password } : { email: `nobody-${n}@example.test`, password: 'wrong-password' }
    const r = await request(url, 'POST', '/api/auth/login', { json, headers: { 'x-forwarded-for': ip } })
    const key = `${right ? 'right' : 'wrong'} ${r.status}`
    probes[key] = (probes[key] ?? 0) + 1
  }
  while (!done) {
    await probe()
    await sleep(100)
  }
  await flooding
  for (let i = 0; i < 10; i++) await probe()
  const seconds = (performance.now() - t0) / 1000
  await sleep(500)
  const rssAfter = d.rss()
  const m = await scrape(url)
  await d.stop()

  const sent = Object.values(flood).reduce((a, b) => a + b, 0)
  const evicted = metric(m, 'authd_rate_limit_evictions_total')
  const refused = Object.entries(probes).filter(([k]) => k.endsWith(' 429')).reduce((a, [, v]) => a + v, 0)
  const expected = (probes['right 200'] ?? 0) + (probes['wrong 401'] ?? 0)
  const total = Object.values(probes).reduce((a, b) => a + b, 0)
  say(`limiter-fill: ${sent} junk logins from ${cfg.addresses} addresses in ${round(seconds, 1)} s → ${JSON.stringify(flood)}; ${evicted} keys forgotten; new clients ${JSON.stringify(probes)}; RSS ${mb(rssBefore)} → ${mb(rssAfter)} MB`)
  return {
    figures: [
      check('distinct addresses', sent, '>=', cfg.addresses),
      check('new clients refused', refused, '=', 0),
      check('new clients answered 200/401', expected, '=', total),
      check('flood refused for room', flood[429] ?? 0, '=', 0),
      check('keys forgotten', evicted, '>=', sent - cfg.maxKeys),
      check('RSS growth', mb(rssAfter - rssBefore), '<=', cfg.rssMB, 'MB'),
      info('new clients', total),
    ],
    extra: { flood, probes, evicted, rssBefore, rssAfter, seconds },
  }
}

/** a login without credentials: counted on login.per_ip (a key per address), answered 400 */
function junkLogin(ip) {
  return `POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: ${ip}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`
}
