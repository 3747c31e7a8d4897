/**
 * Case 2 — account enumeration by timing. Interleaved pairs of logins over HTTP: an unknown email
 * against a known email with a wrong password, each pair from its own loopback source address
 * and with its own emails, so no rate limit is ever met. First for users whose hash was made under
 * older argon2 parameters, right after the daemon is restarted with new ones (an unknown email
 * must cost what they cost), then again after their first successful login re-hashed them; then
 * for users registered under the current parameters.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { startDaemon } from '../lib/daemon.mjs'
import { agentFor, get, loopbackAddress } from '../lib/http.mjs'
import { login, register } from '../lib/auth.mjs'
import { envelopeProblem, fromNodeResponse } from '../lib/contract.mjs'
import { inspectStore } from '../lib/store-peek.mjs'
import { password } from '../lib/secrets.mjs'
import { bestThresholdAccuracy, median, pool, round, shuffle } from '../lib/stats.mjs'
import { check, timingCheck } from '../lib/report.mjs'

export const id = 'timing'
export const title = 'Enumeration by timing'

const SCALE = {
  // pairs: unknown vs wrong password; old: users with old-parameter hashes, pairs before/after re-hash per user
  full: { pairs: 400, oldUsers: 40, oldBefore: 6, oldAfter: 10 },
  small: { pairs: 20, oldUsers: 2, oldBefore: 1, oldAfter: 5 },
}
/** the "older parameters": time_cost 3 where the daemon now runs 2 (both at or above the OWASP floor) */
const OLD_ENV = { AUTHD_PASSWORDS_TIME_COST: '3' }
const IGNORED_HEADERS = new Set(['x-request-id', 'date'])

const tag = () => randomBytes(6).toString('hex')

/** Registers users in parallel (2 at a time, the hasher's width), 10 per source address (the register limit). */
async function registerMany(url, count, prefix, addressBase) {
  const users = []
  await pool(count, 2, async (i) => {
    const u = { email: `${prefix}-${i}-${tag()}@example.test`, password: password() }
    const r = await register(url, u.email, u.password, { localAddress: loopbackAddress(addressBase + Math.floor(i / 10)) })
    if (r.status !== 201) throw new Error(`setup: register answered ${r.status} ${r.text}`)
    users[i] = u
  })
  return users
}

export async function run({ scale, dir, say }) {
  const cfg = SCALE[scale]
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const logFile = join(dir, 'authd.log')

  // users hashed under the older parameters, by a daemon configured with them
  const oldDaemon = await startDaemon({ dataDir, logFile, env: OLD_ENV })
  const oldUsers = await registerMany(oldDaemon.url, cfg.oldUsers, 'old', 20_000)
  await oldDaemon.stop()
  const oldParams = [...inspectStore(dataDir).users.values()].map((u) => /\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(u.passwordHash)?.[2])

  // the parameter change: the daemon now runs the defaults over a store hashed at the old ones
  const d = await startDaemon({ dataDir, logFile })
  say(`timing: daemon pid ${d.pid}; ${cfg.oldUsers} users hashed with t=${oldParams.join(',')}`)

  let address = 30_000
  const replies = []
  /** One interleaved pair from a fresh source address: [unknown-email ms, wrong-password ms], random order. */
  async function pair(known) {
    const localAddress = loopbackAddress(address++)
    const agent = agentFor(localAddress)
    await get(d.url, '/healthz', { agent }) // the connection is open before anything is timed
    const unknown = `nobody-${tag()}@example.test`
    const order = shuffle(['unknown', 'wrong'])
    const ms = {}
    for (const which of order) {
      const r = which === 'unknown' ? await login(d.url, unknown, password(), { agent }) : await login(d.url, known, password(), { agent })
      replies.push(r)
      ms[which] = r.ms
    }
    return [ms.unknown, ms.wrong]
  }

  // warm up the path (first requests pay for JIT and caches)
  for (let i = 0; i < 4; i++) await pair(oldUsers[i % oldUsers.length].email)

  // old-parameter users right after the change, before any successful login: an unknown email
  // must cost what they cost (the dummy runs under the stored hashes' parameters) …
  const beforeU = []
  const beforeW = []
  for (let r = 0; r < cfg.oldBefore; r++) {
    for (const u of shuffle(oldUsers)) {
      const [a, b] = await pair(u.email)
      beforeU.push(a)
      beforeW.push(b)
    }
  }
  // … one successful login each (re-hash under the current parameters) …
  let oldLoginsOk = 0
  for (const [i, u] of oldUsers.entries()) {
    const r = await login(d.url, u.email, u.password, { localAddress: loopbackAddress(address++ + i) })
    if (r.status === 200) oldLoginsOk++
  }
  // … and after
  const afterU = []
  const afterW = []
  for (let r = 0; r < cfg.oldAfter; r++) {
    for (const u of shuffle(oldUsers)) {
      const [a, b] = await pair(u.email)
      afterU.push(a)
      afterW.push(b)
    }
  }
  const rehashed = [...inspectStore(dataDir).users.values()].filter((u) => oldUsers.some((o) => o.email === u.email)).filter((u) => /\$m=19456,t=2,p=1\$/.test(u.passwordHash)).length

  // users registered under the current parameters: unknown email against a wrong password
  const users = await registerMany(d.url, cfg.pairs, 'cur', 21_000)
  const unknownMs = []
  const wrongMs = []
  for (let i = 0; i < cfg.pairs; i++) {
    const [u, w] = await pair(users[i].email)
    unknownMs.push(u)
    wrongMs.push(w)
  }
  await d.stop()

  // every failed login must look the same: status, body, headers (except the request id and date)
  const failed = replies
  const shape = (r) => JSON.stringify([r.status, r.text, Object.entries(r.headers).filter(([k]) => !IGNORED_HEADERS.has(k)).sort()])
  const reference = shape(failed[0])
  const differing = failed.filter((r) => shape(r) !== reference).length
  const notEnvelope = failed.filter((r) => envelopeProblem(fromNodeResponse(r), { method: 'POST', path: '/api/auth/login' }) !== null).length
  const not401 = failed.filter((r) => r.status !== 401).length

  const delta = (a, b) => (Math.abs(median(a) - median(b)) / ((median(a) + median(b)) / 2)) * 100
  const main = { delta: delta(unknownMs, wrongMs), acc: bestThresholdAccuracy(unknownMs, wrongMs) * 100 }
  const before = { delta: delta(beforeU, beforeW), acc: bestThresholdAccuracy(beforeU, beforeW) * 100 }
  const after = { delta: delta(afterU, afterW), acc: bestThresholdAccuracy(afterU, afterW) * 100 }
  say(`timing: medians unknown ${round(median(unknownMs), 2)} ms, wrong password ${round(median(wrongMs), 2)} ms; old user before re-hash ${round(median(beforeW), 2)} vs ${round(median(beforeU), 2)} ms, after ${round(median(afterW), 2)} vs ${round(median(afterU), 2)} ms`)

  const stat = timingCheck(scale)
  return {
    figures: [
      check('pairs', unknownMs.length, '>=', scale === 'full' ? 150 : 20),
      stat('|Δ median|', round(main.delta, 2), '<=', 5, '%'),
      stat('best threshold', round(main.acc, 1), '<=', 60, '%'),
      stat('old-param user before re-hash: |Δ median|', round(before.delta, 2), '<=', 5, '%'),
      stat('before: best threshold', round(before.acc, 1), '<=', 60, '%'),
      check('before pairs', beforeU.length, '>=', scale === 'full' ? 150 : 2),
      check('old users re-hashed', rehashed, '=', cfg.oldUsers),
      stat('after: |Δ median|', round(after.delta, 2), '<=', 5, '%'),
      stat('after: best threshold', round(after.acc, 1), '<=', 60, '%'),
      check('after pairs', afterU.length, '>=', scale === 'full' ? 150 : 10),
      check('differing 401s', differing, '=', 0),
      check('non-401', not401, '=', 0),
      check('non-envelope', notEnvelope, '=', 0),
      check('old logins ok', oldLoginsOk, '=', cfg.oldUsers),
    ],
    extra: {
      medians: { unknown: median(unknownMs), wrong: median(wrongMs), oldBeforeWrong: median(beforeW), oldBeforeUnknown: median(beforeU), oldAfterWrong: median(afterW), oldAfterUnknown: median(afterU) },
      main,
      before,
      after,
    },
  }
}
