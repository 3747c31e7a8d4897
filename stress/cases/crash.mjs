/**
 * Case 6 — crash durability. Cycles of mixed register / login / refresh / logout load, each ended
 * by kill -9 at a random moment. After each crash the store is read directly (whole records, every
 * index consistent, every acknowledged write present), then the daemon is restarted and checked
 * over HTTP: acknowledged users exist, acknowledged sessions still refresh, and no refresh token
 * whose logout was acknowledged works again. The audit log (README, "Audit log") is held to the
 * same: after each crash every acknowledged register, login, wrong login and logout has its event,
 * no event is there without its change, and `authctl audit verify` finds the chain intact. On
 * PostgreSQL (crash-pg.mjs) the same, with the database read after each crash instead of the LMDB
 * file.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { startDaemon, sleep } from '../lib/daemon.mjs'
import { closeAgents, request } from '../lib/http.mjs'
import { login, logout, me, refresh, register } from '../lib/auth.mjs'
import { inspectStore, tokenHash } from '../lib/store-peek.mjs'
import { password } from '../lib/secrets.mjs'
import { round } from '../lib/stats.mjs'
import { check, info, timingCheck } from '../lib/report.mjs'
import { auditLedger, auditProblems, authctl, noteWrongRefused, noteWrongSent, readNewEvents, sidOf, verifyAudit } from '../lib/audit-check.mjs'

export const id = 'crash'
export const title = 'Crash durability'

const SCALE = { full: { cycles: 22, workers: 6 }, small: { cycles: 3, workers: 4 } }
const OPEN = '1000000/1m'
// limits out of the way: this case is about what survives a crash, not about who is refused
const ENV = {
  AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: OPEN,
  AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: OPEN,
  AUTHD_RATE_LIMIT_LOGIN_PER_IP: OPEN,
  AUTHD_RATE_LIMIT_REGISTER_PER_IP: OPEN,
  AUTHD_RATE_LIMIT_REFRESH_PER_IP: OPEN,
}
const tag = () => randomBytes(6).toString('hex')
const pick = (list) => list[Math.floor(Math.random() * list.length)]

/** `store`: the PostgreSQL store to run on (lib/pg.mjs, onPostgres); by default LMDB in `dir` */
export async function run({ scale, dir, say, store }) {
  const cfg = SCALE[scale]
  const env = { ...ENV, ...store?.env }
  const name = store === undefined ? 'crash' : 'crash-pg'
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const logFile = join(dir, 'authd.log')

  /** email → { password, state: 'acked' | 'unknown', cycle } */
  const users = new Map()
  /** every session the clients hold: { email, token, access, state: live | loggedOut | uncertain, busy } */
  const sessions = []
  /** refresh tokens whose logout was answered 200 */
  const revoked = new Set()
  const revokedAccess = new Set()
  const tally = { acked: 0, lost: [], partial: [], revokedWorking: [], readyMs: [], uncertain: 0, opsPerCycle: [] }
  // the audit log: what the clients were told, the events read so far, what is wrong with them
  const ledger = auditLedger()
  const auditLog = { bySeq: new Map(), maxSeq: 0 }
  const audit = { missing: new Map(), orphans: new Map(), gaps: new Map(), verify: [] }
  // authctl on the daemon's store: the data directory, or the database (store.env)
  const ctl = (args) => authctl([...args, '--data', dataDir], store?.env)
  /** reads the new events and holds them against the ledger and `st`, the store as it is now (not running) */
  const auditCheck = async (when, st) => {
    const read = await readNewEvents(ctl, auditLog)
    if (read !== null) audit.verify.push(`${when}: ${read}`)
    const found = auditProblems(ledger, auditLog, st)
    for (const kind of ['missing', 'orphans', 'gaps']) for (const p of found[kind]) if (!audit[kind].has(p)) audit[kind].set(p, `${when}: ${p}`)
    const verified = await verifyAudit(ctl, auditLog.maxSeq)
    if (verified !== null) audit.verify.push(`${when}: ${verified}`)
  }

  let d = await startDaemon({ dataDir, logFile, env })
  tally.readyMs.push(d.readyMs)
  for (let cycle = 0; cycle < cfg.cycles; cycle++) {
    let killed = false
    let ops = 0
    const url = d.url
    const worker = async () => {
      for (let k = 0; !killed && k < 10_000; k++) {
        const r = Math.random()
        const live = sessions.filter((s) => s.state === 'live' && !s.busy)
        const known = [...users.entries()].filter(([, u]) => u.state === 'acked')
        try {
          if (r < 0.3 || known.length === 0) {
            const email = `crash-${tag()}@example.test`
            const u = { password: password(), state: 'unknown', cycle }
            users.set(email, u)
            const res = await register(url, email, u.password)
            if (res.status !== 201) throw new Error(`register answered ${res.status}`)
            u.state = 'acked'
            tally.acked++
            ledger.registers.push({ email, sid: sidOf(res.accessToken) })
            sessions.push({ email, token: res.refreshToken, access: res.accessToken, state: 'live', busy: false })
          } else if (r < 0.45) {
            const [email, u] = pick(known)
            const res = await login(url, email, u.password)
            if (res.status !== 200) throw new Error(`login answered ${res.status}`)
            tally.acked++
            ledger.logins.push({ email, sid: sidOf(res.accessToken) })
            sessions.push({ email, token: res.refreshToken, access: res.accessToken, state: 'live', busy: false })
          } else if (r < 0.55) {
            // a wrong password: no change, but its login.failure event is the attempt's own write
            const [email] = pick(known)
            noteWrongSent(ledger, email)
            const res = await login(url, email, `wrong-${password()}`)
            if (res.status !== 401) throw new Error(`a wrong login answered ${res.status}`)
            noteWrongRefused(ledger, email)
          } else if (r < 0.85 && live.length > 0) {
            const s = pick(live)
            s.busy = true
            try {
              const res = await refresh(url, s.token)
              if (res.status === 200) {
                s.token = res.refreshToken
                s.access = res.accessToken
                tally.acked++
              } else if (!killed) tally.lost.push(`cycle ${cycle}: a live session's refresh answered ${res.status}`)
            } catch (err) {
              s.state = 'uncertain'
              throw err
            } finally {
              s.busy = false
            }
          } else if (live.length > 0) {
            const s = pick(live)
            s.busy = true
            try {
              const res = await logout(url, s.token)
              if (res.status === 200) {
                s.state = 'loggedOut'
                revoked.add(s.token)
                revokedAccess.add(s.access)
                tally.acked++
                ledger.logouts.push(sidOf(s.access))
              }
            } catch (err) {
              s.state = 'uncertain'
              throw err
            } finally {
              s.busy = false
            }
          }
          ops++
        } catch {
          // the daemon was killed under this request: its outcome is unknown (and not counted)
          if (!killed) await sleep(5)
        }
      }
    }
    const workers = Array.from({ length: cfg.workers }, worker)
    // kill -9 at a random moment of the load
    await sleep(150 + Math.random() * (scale === 'full' ? 2350 : 1000))
    killed = true
    await d.crash()
    await Promise.all(workers)
    closeAgents()
    tally.opsPerCycle.push(ops)

    // what the store holds after the crash
    const st = store === undefined ? inspectStore(dataDir) : await store.inspect()
    for (const p of st.problems) tally.partial.push(`cycle ${cycle}: ${p}`)
    for (const [email, u] of users) {
      if (u.state === 'acked' && !st.emails.has(email)) tally.lost.push(`cycle ${cycle}: acknowledged user ${email} is gone`)
    }
    for (const s of sessions) {
      if (s.state !== 'live') continue
      const sid = st.refresh.get(tokenHash(s.token))
      if (sid === undefined || !st.sessions.has(sid)) tally.lost.push(`cycle ${cycle}: an acknowledged session token is gone`)
    }
    for (const t of revoked) {
      const sid = st.refresh.get(tokenHash(t))
      if (sid !== undefined && st.sessions.has(sid)) tally.revokedWorking.push(`cycle ${cycle}: a logged-out session is back in the store`)
    }
    // the audit log as the crash left it, against the same store
    await auditCheck(`cycle ${cycle}`, st)

    // restart, and check over HTTP
    d = await startDaemon({ dataDir, logFile, env })
    tally.readyMs.push(d.readyMs)
    for (const t of revoked) {
      const res = await refresh(d.url, t)
      if (res.status !== 401) tally.revokedWorking.push(`cycle ${cycle}: a logged-out refresh token answered ${res.status}`)
    }
    for (const a of [...revokedAccess].slice(-50)) {
      const res = await me(d.url, a)
      if (res.status !== 401) tally.revokedWorking.push(`cycle ${cycle}: an access token of a logged-out session answered ${res.status}`)
    }
    for (const [email, u] of users) {
      if (u.cycle !== cycle) continue
      const res = await request(d.url, 'POST', '/api/auth/register', { json: { email, password: u.password } })
      if (u.state === 'acked' && res.status !== 409) tally.lost.push(`cycle ${cycle}: acknowledged user ${email}: register again answered ${res.status}`)
      if (u.state === 'unknown') {
        tally.uncertain++
        // now it exists either way; a 201 here signed it in: forget that session
        u.state = 'acked'
      }
    }
    for (const s of sessions) {
      if (s.state === 'loggedOut') continue
      const res = await refresh(d.url, s.token)
      if (res.status === 200) {
        s.token = res.refreshToken
        s.access = res.accessToken
        s.state = 'live'
      } else if (s.state === 'live') {
        tally.lost.push(`cycle ${cycle}: an acknowledged session no longer refreshes (${res.status})`)
        s.state = 'loggedOut'
      } else {
        // an interrupted logout that committed: the session is over
        tally.uncertain++
        s.state = 'loggedOut'
      }
    }
    say(`${name}: cycle ${cycle + 1}/${cfg.cycles}: ${ops} ops before kill -9; ready in ${round(d.readyMs, 0)} ms; ${users.size} users, ${sessions.filter((s) => s.state === 'live').length} live sessions, ${revoked.size} logged out`)
  }
  await d.stop()
  // with the events of the last restart's checks, after a clean stop
  await auditCheck('after the last restart', store === undefined ? inspectStore(dataDir) : await store.inspect())
  const auditFound = [...audit.missing.values(), ...audit.orphans.values(), ...audit.gaps.values(), ...audit.verify]
  for (const l of [...tally.lost, ...tally.partial, ...tally.revokedWorking, ...auditFound].slice(0, 10)) say(`${name}: ✗ ${l}`)

  return {
    figures: [
      check('cycles', cfg.cycles, '>=', scale === 'full' ? 20 : 3),
      info('acknowledged writes', tally.acked),
      check('lost', tally.lost.length, '=', 0),
      check('partial records', tally.partial.length, '=', 0),
      check('revoked working', tally.revokedWorking.length, '=', 0),
      timingCheck(scale)('max ready', round(Math.max(...tally.readyMs), 0), '<=', 2000, 'ms'),
      info('interrupted ops', tally.uncertain),
      info('audit events', auditLog.maxSeq),
      check('events missing', audit.missing.size, '=', 0),
      check('events without change', audit.orphans.size, '=', 0),
      check('seq gaps', audit.gaps.size, '=', 0),
      check('verify failures', audit.verify.length, '=', 0),
    ],
    extra: { readyMs: tally.readyMs, opsPerCycle: tally.opsPerCycle, users: users.size, sessions: sessions.length, revoked: revoked.size, auditEvents: auditLog.maxSeq, auditProblems: auditFound.slice(0, 50) },
  }
}
