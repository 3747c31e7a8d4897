/**
 * Case 7 — refresh races. On fresh sessions: logout and refresh of one token sent at the same
 * instant; and 20 refreshes of one token at once. Never two live successors, and nothing of a
 * session works after its logout was answered 200. On PostgreSQL (races-pg.mjs) over two daemons
 * on one database: the logout goes to one and the refresh to the other, and the parallel
 * refreshes alternate between them.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { startDaemon } from '../lib/daemon.mjs'
import { agentFor, loopbackAddress } from '../lib/http.mjs'
import { login, logout, me, refresh, register } from '../lib/auth.mjs'
import { password } from '../lib/secrets.mjs'
import { check, info } from '../lib/report.mjs'

export const id = 'races'
export const title = 'Refresh races'

const SCALE = { full: { iterations: 100, parallel: 20 }, small: { iterations: 10, parallel: 20 } }

const delay = (ms) => (ms < 0.5 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms)))

/** `store`: the PostgreSQL store to run on (lib/pg.mjs, onPostgres); by default LMDB in `dir` */
export async function run({ scale, dir, say, store }) {
  const cfg = SCALE[scale]
  const name = store === undefined ? 'races' : 'races-pg'
  const daemons = []
  for (let i = 0; i < (store === undefined ? 1 : 2); i++) {
    const dataDir = join(dir, `data${i || ''}`)
    mkdirSync(dataDir, { recursive: true })
    daemons.push(await startDaemon({ dataDir, logFile: join(dir, `authd${i || ''}.log`), env: store?.env }))
  }
  const d = daemons[0]
  const url = d.url
  /** the daemon the i-th request of a race goes to */
  const at = (i) => daemons[i % daemons.length].url
  const user = { email: `race-${randomBytes(6).toString('hex')}@example.test`, password: password() }
  if ((await register(url, user.email, user.password)).status !== 201) throw new Error('setup: register failed')

  let address = 110_000
  /** a fresh session from a fresh address (the per-address limits never come near) */
  async function session() {
    const localAddress = loopbackAddress(address++)
    const r = await login(url, user.email, user.password, { localAddress })
    if (r.status !== 200) throw new Error(`setup: login answered ${r.status}`)
    return { localAddress, token: r.refreshToken, access: r.accessToken }
  }

  // (a) logout ∥ refresh on one token
  const a = { refreshWon: 0, working: [] }
  for (let i = 0; i < cfg.iterations; i++) {
    const s = await session()
    // two connections; which goes first, and by how much (0–3 ms), varies so both orders happen
    const agent = agentFor(s.localAddress, 2)
    const lag = Math.random() * 3
    const logoutFirst = i % 2 === 0
    const [out, ref] = await Promise.all([
      delay(logoutFirst ? 0 : lag).then(() => logout(at(0), s.token, { agent })),
      delay(logoutFirst ? lag : 0).then(() => refresh(at(1), s.token, { agent })),
    ])
    if (out.status !== 200) a.working.push(`iteration ${i}: logout answered ${out.status}`)
    if (ref.status === 200) a.refreshWon++
    // nothing of this session may work now: not the token, not a successor, no access token
    const tokens = [s.token, ref.refreshToken].filter(Boolean)
    const accesses = [s.access, ref.accessToken].filter(Boolean)
    // (on every daemon)
    for (const [k, t] of tokens.entries()) {
      const r = await refresh(at(k), t, { localAddress: s.localAddress })
      if (r.status !== 401) a.working.push(`iteration ${i}: a refresh token answered ${r.status} after logout`)
    }
    for (const t of accesses) {
      for (const x of daemons) {
        const r = await me(x.url, t, { localAddress: s.localAddress })
        if (r.status !== 401) a.working.push(`iteration ${i}: an access token answered ${r.status} after logout`)
      }
    }
  }
  say(`${name}: logout ∥ refresh × ${cfg.iterations}: refresh answered 200 first in ${a.refreshWon}; ${a.working.length} violations`)

  // (b) N parallel refreshes of one token
  const b = { twoSuccessors: [], deadSuccessor: [], okCounts: [] }
  for (let i = 0; i < cfg.iterations; i++) {
    const s = await session()
    const agent = agentFor(s.localAddress, cfg.parallel)
    const replies = await Promise.all(Array.from({ length: cfg.parallel }, (_, k) => refresh(at(k), s.token, { agent })))
    const ok = replies.filter((r) => r.status === 200)
    b.okCounts.push(ok.length)
    const successors = new Set(ok.map((r) => r.refreshToken))
    if (successors.size > 1) b.twoSuccessors.push(`iteration ${i}: ${successors.size} different successors`)
    if (successors.size === 1) {
      // the one successor is live: it refreshes once more
      const next = await refresh(url, [...successors][0], { localAddress: s.localAddress })
      if (next.status !== 200) b.deadSuccessor.push(`iteration ${i}: the successor answered ${next.status}`)
    }
    if (ok.length === 0) b.deadSuccessor.push(`iteration ${i}: no refresh succeeded`)
  }
  const minOk = Math.min(...b.okCounts)
  say(`${name}: ${cfg.parallel} parallel refreshes × ${cfg.iterations}: 200s per iteration min ${minOk} max ${Math.max(...b.okCounts)}; ${b.twoSuccessors.length} with two successors`)
  for (const x of daemons) await x.stop()
  for (const l of [...a.working, ...b.twoSuccessors, ...b.deadSuccessor].slice(0, 10)) say(`${name}: ✗ ${l}`)
  return {
    figures: [
      check('iterations', cfg.iterations, '>=', scale === 'full' ? 100 : 10),
      check('working after logout', a.working.length, '=', 0),
      info('refresh won the race', a.refreshWon),
      check('two live successors', b.twoSuccessors.length, '=', 0),
      check('successor not live', b.deadSuccessor.length, '=', 0),
      info('200s per 20', `${minOk}–${Math.max(...b.okCounts)}`),
    ],
  }
}
