/**
 * Case — lockout. An attacker who knows a user's email spends its login.per_email budget from 50
 * addresses (through a trusted proxy's X-Forwarded-For) for the whole run; meanwhile the user's
 * own browser, which signed in before and carries its device cookie, signs in again and again.
 * It must never be refused, while a client without the cookie is.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { sleep, startDaemon } from '../lib/daemon.mjs'
import { cookieFrom, request } from '../lib/http.mjs'
import { login, register } from '../lib/auth.mjs'
import { metric, scrape } from '../lib/metrics.mjs'
import { password } from '../lib/secrets.mjs'
import { check, info } from '../lib/report.mjs'

export const id = 'lockout'
export const title = 'Lockout by a known email'

const SCALE = {
  full: { seconds: 60, every: 1500, attackers: 50, maxRequests: 200_000 },
  small: { seconds: 4, every: 200, attackers: 50, maxRequests: 20_000 },
}
const DEVICE = '__Host-authd_device'

export async function run({ scale, dir, say }) {
  const cfg = SCALE[scale]
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const d = await startDaemon({ dataDir, logFile: join(dir, 'authd.log'), env: { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1' } })
  const url = d.url
  const from = (ip) => ({ headers: { 'x-forwarded-for': ip } })

  const victim = { email: `victim-${randomBytes(4).toString('hex')}@example.test`, password: password() }
  const reg = await register(url, victim.email, victim.password, from('198.51.100.1'))
  if (reg.status !== 201) throw new Error(`setup: register answered ${reg.status}`)
  const device = cookieFrom(reg, DEVICE)
  if (device === undefined) throw new Error('setup: register set no device cookie')

  // the attacker: wrong passwords for the victim's email from 50 addresses, 8 at a time, all run long
  const attacker = {}
  let stop = false
  const t0 = performance.now()
  let sent = 0
  const attack = Array.from({ length: 8 }, async (_, w) => {
    for (let k = 0; !stop && sent < cfg.maxRequests; k++) {
      sent++
      const ip = `203.0.113.${(w + k * 8) % cfg.attackers}`
      const r = await login(url, victim.email, password(), from(ip))
      attacker[r.status] = (attacker[r.status] ?? 0) + 1
    }
  })
  // wait until the email's budget is spent (20 failures) before the victim's first try
  for (let i = 0; i < 200 && (attacker[401] ?? 0) < 20; i++) await sleep(50)

  // the victim's browser: signs in with its cookie once per `every` ms, from one address (whose
  // login.per_ip, 50 requests per 15 min, still applies: 40 tries in the minute stay under it)
  // a fixed number of tries, counted from the moment the budget is spent (a loaded machine that
  // takes seconds to spend it would otherwise leave the victim no time), bounded at 4× the time
  const victimStatuses = {}
  const target = Math.floor((cfg.seconds * 1000) / cfg.every)
  const victimStart = performance.now()
  let tries = 0
  while (tries < target && performance.now() - victimStart < 4 * cfg.seconds * 1000) {
    const started = performance.now()
    const r = await request(url, 'POST', '/api/auth/login', {
      json: { email: victim.email, password: victim.password },
      headers: { 'x-forwarded-for': '198.51.100.1', cookie: `${DEVICE}=${device}` },
    })
    tries++
    victimStatuses[r.status] = (victimStatuses[r.status] ?? 0) + 1
    await sleep(Math.max(0, cfg.every - (performance.now() - started)))
  }
  // a client that never signed in as the victim, with her right password: refused
  const stranger = await login(url, victim.email, victim.password, from('198.51.100.200'))
  stop = true
  await Promise.all(attack)
  const m = await scrape(url)
  await d.stop()

  const refusals = tries - (victimStatuses[200] ?? 0)
  say(`lockout: attacker ${sent} requests from ${cfg.attackers} addresses → ${JSON.stringify(attacker)}; victim ${tries} tries → ${JSON.stringify(victimStatuses)}; stranger ${stranger.status}`)
  return {
    figures: [
      check('victim sign-ins', tries, '>=', Math.floor((cfg.seconds * 1000) / cfg.every / 2)),
      check('victim refusals', refusals, '=', 0),
      check('attacker refused (per_email spent)', attacker[429] ?? 0, '>', 0),
      check('stranger with the right password', stranger.status, '=', 429),
      info('attacker requests', sent),
      info('per_email refusals', metric(m, 'authd_rate_limited_total', { limit: 'login.per_email' })),
    ],
    extra: { attacker, victimStatuses, stranger: stranger.status },
  }
}
