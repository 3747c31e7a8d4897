/**
 * Case 4 — availability under a login flood. 32 clients send wrong-password logins back to back
 * for 60 s, with the rate limits configured out of the way so that every one of them runs argon2
 * (the worst case: a botnet spread over more addresses than the limits can see). Meanwhile a
 * signed-in client calls /me, refreshes, and new users register; their latencies are what the
 * flood costs everyone else. Login throughput is compared with the daemon's unloaded hash rate.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { startDaemon, sleep } from '../lib/daemon.mjs'
import { agentFor, loopbackAddress } from '../lib/http.mjs'
import { login, me, refresh, register } from '../lib/auth.mjs'
import { password } from '../lib/secrets.mjs'
import { percentile, round } from '../lib/stats.mjs'
import { check, info, timingCheck } from '../lib/report.mjs'

export const id = 'flood'
export const title = 'Availability under a login flood'

const SCALE = {
  full: { workers: 32, seconds: 60, unloadedSeconds: 10 },
  small: { workers: 8, seconds: 2, unloadedSeconds: 1 },
}
const OPEN = '1000000/1m'
const ENV = {
  AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: OPEN,
  AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: OPEN,
  AUTHD_RATE_LIMIT_LOGIN_PER_IP: OPEN,
  AUTHD_RATE_LIMIT_REGISTER_PER_IP: OPEN,
  AUTHD_RATE_LIMIT_REFRESH_PER_IP: OPEN,
}
const tag = () => randomBytes(6).toString('hex')

/** `clients` loops of wrong-password logins for `seconds`; resolves with completed logins and errors. */
async function hammer(url, email, clients, seconds, addressBase) {
  const until = performance.now() + seconds * 1000
  let done = 0
  const statuses = {}
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      const agent = agentFor(loopbackAddress(addressBase + c))
      for (let k = 0; k < 100_000 && performance.now() < until; k++) {
        const r = await login(url, email, password(), { agent })
        statuses[r.status] = (statuses[r.status] ?? 0) + 1
        // count only logins that finished inside the window
        if (performance.now() <= until && r.status === 401) done++
      }
    }),
  )
  return { rate: done / seconds, statuses }
}

/** Calls `fn` every `everyMs` (sequentially) until `stop()`; collects latencies and statuses. */
function prober(everyMs, fn) {
  let running = true
  const ms = []
  const bad = []
  const done = (async () => {
    for (let k = 0; running && k < 100_000; k++) {
      const t = performance.now()
      const r = await fn(k)
      ms.push(r.ms)
      if (!r.ok) bad.push(r.status)
      await sleep(Math.max(0, everyMs - (performance.now() - t)))
    }
  })()
  return {
    ms,
    bad,
    stop: async () => {
      running = false
      await done
    },
  }
}

export async function run({ scale, dir, say }) {
  const cfg = SCALE[scale]
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const d = await startDaemon({ dataDir, logFile: join(dir, 'authd.log'), env: ENV })
  const url = d.url
  const victim = { email: `victim-${tag()}@example.test`, password: password() }
  const user = { email: `user-${tag()}@example.test`, password: password() }
  await register(url, victim.email, victim.password)
  const signedIn = await register(url, user.email, user.password)
  if (signedIn.status !== 201) throw new Error(`setup: register answered ${signedIn.status}`)
  let access = signedIn.accessToken
  let cookie = signedIn.refreshToken

  // warm-up, then the unloaded hash rate: the daemon's login throughput with nothing else going
  // on, from 4 clients (enough to keep its hasher busy on this machine, no deep queue)
  await hammer(url, victim.email, 4, 1, 100)
  const unloaded = await hammer(url, victim.email, 4, cfg.unloadedSeconds, 100)
  say(`flood: unloaded hash rate ${round(unloaded.rate, 1)}/s`)

  const probeAgent = agentFor('127.0.0.1')
  const meProbe = prober(100, async () => {
    const r = await me(url, access, { agent: probeAgent })
    return { ms: r.ms, ok: r.status === 200, status: r.status }
  })
  const refreshProbe = prober(250, async () => {
    const r = await refresh(url, cookie, { agent: agentFor('127.0.0.2') })
    if (r.status === 200) {
      cookie = r.refreshToken
      access = r.accessToken
    }
    return { ms: r.ms, ok: r.status === 200, status: r.status }
  })
  const registerProbe = prober(500, async (k) => {
    const r = await register(url, `probe-${k}-${tag()}@example.test`, password(), { agent: agentFor('127.0.0.3') })
    return { ms: r.ms, ok: r.status === 201, status: r.status }
  })
  const flood = await hammer(url, victim.email, cfg.workers, cfg.seconds, 200)
  await Promise.all([meProbe.stop(), refreshProbe.stop(), registerProbe.stop()])
  // the unloaded rate again: other people's load drifts over a minute, so the reference is the
  // mean of the rate just before and just after the flood
  const unloadedAfter = await hammer(url, victim.email, 4, cfg.unloadedSeconds, 100)
  const unloadedRate = (unloaded.rate + unloadedAfter.rate) / 2
  const alive = d.alive()
  await d.stop()

  const meP99 = percentile(meProbe.ms, 99)
  const refreshP99 = percentile(refreshProbe.ms, 99)
  const registerP99 = percentile(registerProbe.ms, 99)
  const ratio = (flood.rate / unloadedRate) * 100
  const errors5xx = Object.entries(flood.statuses).filter(([s]) => Number(s) >= 500).reduce((a, [, n]) => a + n, 0)
  say(
    `flood: ${cfg.workers} clients × ${cfg.seconds} s → ${round(flood.rate, 1)} logins/s (${round(ratio, 1)}% of unloaded), statuses ${JSON.stringify(flood.statuses)}; ` +
      `/me p99 ${round(meP99, 1)} ms over ${meProbe.ms.length}, refresh p99 ${round(refreshP99, 1)} ms over ${refreshProbe.ms.length}, register p99 ${round(registerP99, 1)} ms over ${registerProbe.ms.length}`,
  )
  const judged = timingCheck(scale)
  return {
    figures: [
      judged('/me p99', round(meP99, 1), '<=', 50, 'ms'),
      judged('refresh p99', round(refreshP99, 1), '<=', 250, 'ms'),
      judged('register p99', round(registerP99, 1), '<=', 250, 'ms'),
      judged('login throughput', round(ratio, 1), '>=', 80, '%'),
      info('logins/s', `${round(flood.rate, 1)} flooded, ${round(unloaded.rate, 1)} and ${round(unloadedAfter.rate, 1)} unloaded before and after`),
      check('probe failures', meProbe.bad.length + refreshProbe.bad.length + registerProbe.bad.length, '=', 0),
      check('5xx', errors5xx, '=', 0),
      check('exits', alive ? 0 : 1, '=', 0),
    ],
    extra: { unloaded, unloadedAfter, flood, samples: { me: meProbe.ms.length, refresh: refreshProbe.ms.length, register: registerProbe.ms.length } },
  }
}
