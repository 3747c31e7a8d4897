/**
 * Whether a second factor is on, by timing. Interleaved pairs of wrong-password logins over HTTP:
 * a user whose TOTP second factor is on against a user without one, each pair from its own
 * loopback source address and in random order, each user hit fewer times than the per-email limit,
 * so no rate limit is ever met. Nobody without the password may learn that a factor is on: the
 * two 401s must be identical (status, body, headers) and cost the same. A few right-password
 * logins then go through the second step (a TOTP code, a recovery code), so the hygiene case
 * has mfaTokens, codes and recovery codes to look for.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { startDaemon } from '../lib/daemon.mjs'
import { agentFor, get, loopbackAddress } from '../lib/http.mjs'
import { enableTotp, login, loginMfa, register, totpCode } from '../lib/auth.mjs'
import { envelopeProblem, fromNodeResponse } from '../lib/contract.mjs'
import { inspectStore } from '../lib/store-peek.mjs'
import { password } from '../lib/secrets.mjs'
import { bestThresholdAccuracy, median, pool, round, shuffle } from '../lib/stats.mjs'
import { check, timingCheck } from '../lib/report.mjs'

export const id = 'mfa-timing'
export const title = 'Second factor by timing'

const SCALE = {
  // users per group, wrong logins per user (under rate_limit.login.per_email, 20/1h): pairs = users × rounds
  full: { users: 20, rounds: 10 },
  small: { users: 4, rounds: 5 },
}
const IGNORED_HEADERS = new Set(['x-request-id', 'date'])

const tag = () => randomBytes(6).toString('hex')

export async function run({ scale, dir, say }) {
  const cfg = SCALE[scale]
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const d = await startDaemon({ dataDir, logFile: join(dir, 'authd.log') })
  say(`mfa-timing: daemon pid ${d.pid}`)

  // 2 × users, registered 2 at a time (the hasher's width), 10 per source address (the register limit)
  const users = []
  await pool(2 * cfg.users, 2, async (i) => {
    const u = { email: `mfa-${i}-${tag()}@example.test`, password: password(), mfa: i % 2 === 0 }
    const r = await register(d.url, u.email, u.password, { localAddress: loopbackAddress(100_000 + Math.floor(i / 10)) })
    if (r.status !== 201) throw new Error(`setup: register answered ${r.status} ${r.text}`)
    if (u.mfa) Object.assign(u, await enableTotp(d.url, r.accessToken))
    users[i] = u
  })
  const withFactor = users.filter((u) => u.mfa)
  const without = users.filter((u) => !u.mfa)

  let address = 110_000
  const replies = []
  /** One interleaved pair from a fresh source address: [factor-on ms, factor-off ms], random order. */
  async function pair(on, off) {
    const agent = agentFor(loopbackAddress(address++))
    await get(d.url, '/healthz', { agent }) // the connection is open before anything is timed
    const ms = {}
    for (const which of shuffle(['on', 'off'])) {
      const r = await login(d.url, (which === 'on' ? on : off).email, password(), { agent })
      replies.push(r)
      ms[which] = r.ms
    }
    return [ms.on, ms.off]
  }

  // warm up the path (first requests pay for JIT and caches); these count against the users'
  // per-email limits too, so they use one extra round's worth at most
  for (let i = 0; i < 4; i++) await pair(withFactor[i % cfg.users], without[i % cfg.users])
  const onMs = []
  const offMs = []
  for (let r = 0; r < cfg.rounds; r++) {
    const a = shuffle(withFactor)
    const b = shuffle(without)
    for (let i = 0; i < cfg.users; i++) {
      const [x, y] = await pair(a[i], b[i])
      onMs.push(x)
      offMs.push(y)
    }
  }

  // the right password: the second step is asked for, and a code or a recovery code completes it
  const secondStep = []
  for (const [i, u] of withFactor.slice(0, 2).entries()) {
    const localAddress = loopbackAddress(120_000 + i)
    const first = await login(d.url, u.email, u.password, { localAddress })
    const data = first.body?.data ?? {}
    // the step after the current one: confirm used the current step, and a step is accepted once
    const proof = i === 0 ? { code: totpCode(u.secret, 1) } : { recoveryCode: u.recoveryCodes[0] }
    const second = typeof data.mfaToken === 'string' ? await loginMfa(d.url, data.mfaToken, proof, { localAddress }) : null
    secondStep.push(first.status === 200 && data.mfaRequired === true && first.accessToken === undefined && first.refreshToken === undefined && second?.status === 200 && typeof second.accessToken === 'string')
  }
  await d.stop()
  const stored = [...inspectStore(dataDir).users.values()]
  const factorsOn = stored.filter((u) => u.mfa !== undefined).length

  // every wrong-password login must look the same, factor or not: status, body, headers (except the request id and date)
  const shape = (r) => JSON.stringify([r.status, r.text, Object.entries(r.headers).filter(([k]) => !IGNORED_HEADERS.has(k)).sort()])
  const reference = shape(replies[0])
  const differing = replies.filter((r) => shape(r) !== reference).length
  const notEnvelope = replies.filter((r) => envelopeProblem(fromNodeResponse(r), { method: 'POST', path: '/api/auth/login' }) !== null).length
  const not401 = replies.filter((r) => r.status !== 401).length

  const delta = (Math.abs(median(onMs) - median(offMs)) / ((median(onMs) + median(offMs)) / 2)) * 100
  const acc = bestThresholdAccuracy(onMs, offMs) * 100
  say(`mfa-timing: medians factor on ${round(median(onMs), 2)} ms, factor off ${round(median(offMs), 2)} ms over ${onMs.length} pairs`)

  const stat = timingCheck(scale)
  return {
    figures: [
      check('pairs', onMs.length, '>=', scale === 'full' ? 150 : 20),
      stat('|Δ median|', round(delta, 2), '<=', 5, '%'),
      stat('best threshold', round(acc, 1), '<=', 60, '%'),
      check('differing 401s', differing, '=', 0),
      check('non-401', not401, '=', 0),
      check('non-envelope', notEnvelope, '=', 0),
      check('factors on', factorsOn, '=', cfg.users),
      check('second steps ok', secondStep.filter(Boolean).length, '=', secondStep.length),
    ],
    extra: { medians: { on: median(onMs), off: median(offMs) }, delta, acc },
  }
}
