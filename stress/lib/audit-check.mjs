/**
 * The audit log after a crash (README, "Audit log"): what the clients were told, held against the
 * events authctl reads and the records the store kept. Every acknowledged change has its event,
 * no event is there without its change, seq counts 1, 2, 3… without a gap, and `authctl audit
 * verify` finds the chain intact. authctl is run by the caller's `ctl(args)` (the store it points
 * at: a data directory or a database), so the checks hold on either backend.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { ROOT } from './daemon.mjs'

const AUTHCTL = join(ROOT, 'bin', 'authctl.js')
/** authctl audit list's largest --limit */
const LIST_MAX = 10_000

/** Runs authctl with `args` (and `env`); resolves with its exit code and outputs, never rejects on exit ≠ 0. */
export function authctl(args, env = {}) {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [AUTHCTL, ...args],
      { timeout: 60_000, maxBuffer: 256 * 1024 * 1024, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env } },
      (err, stdout, stderr) => resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : null, stdout, stderr }),
    ),
  )
}

/** The session id (`sid` claim) of an access token, or undefined. */
export function sidOf(accessToken) {
  try {
    return JSON.parse(Buffer.from(accessToken.split('.')[1], 'base64url').toString('utf8')).sid
  } catch {
    return undefined
  }
}

/**
 * What the clients were told: the changes acknowledged, and the wrong logins sent (a login.failure
 * event may outlive its lost 401, never outnumber the attempts).
 */
export function auditLedger() {
  return {
    /** { email, sid }: a 201 register */
    registers: [],
    /** { email, sid }: a 200 login */
    logins: [],
    /** sid: a 200 logout that ended its session */
    logouts: [],
    /** email → wrong logins sent / answered 401 */
    wrongSent: new Map(),
    wrongRefused: new Map(),
  }
}

const bump = (map, key) => map.set(key, (map.get(key) ?? 0) + 1)
export const noteWrongSent = (ledger, email) => bump(ledger.wrongSent, email)
export const noteWrongRefused = (ledger, email) => bump(ledger.wrongRefused, email)

/**
 * Reads the events added since the last read into `log` ({ bySeq: Map, maxSeq }), newest first
 * through `authctl audit list --json`. Returns a problem (a string) or null.
 */
export async function readNewEvents(ctl, log) {
  const r = await ctl(['audit', 'list', '--json', '--limit', String(LIST_MAX)])
  if (r.code !== 0) return `authctl audit list exited ${r.code}: ${r.stderr.trim().split('\n')[0]}`
  const events = JSON.parse(r.stdout).events
  for (const e of events) {
    if (log.bySeq.has(e.seq) && log.bySeq.get(e.seq).hash !== e.hash) return `event ${e.seq} changed between two reads`
    log.bySeq.set(e.seq, e)
  }
  const oldest = events.length === 0 ? Infinity : events[events.length - 1].seq
  if (events.length === LIST_MAX && oldest > log.maxSeq + 1) return `more than ${LIST_MAX} events since the last read: events ${log.maxSeq + 1}-${oldest - 1} not read`
  log.maxSeq = Math.max(log.maxSeq, ...events.map((e) => e.seq))
  return null
}

/** `authctl audit verify --json`: a problem (a string) or null; the chain must hold `expected` events. */
export async function verifyAudit(ctl, expected) {
  const r = await ctl(['audit', 'verify', '--json'])
  let doc
  try {
    doc = JSON.parse(r.stdout)
  } catch {
    return `authctl audit verify exited ${r.code} without a finding: ${r.stderr.trim().split('\n')[0]}`
  }
  if (r.code !== 0 || doc.ok !== true) return `authctl audit verify exited ${r.code}: ${r.stdout.trim()}`
  if (doc.events !== expected) return `authctl audit verify counted ${doc.events} events, authctl audit list ${expected}`
  return null
}

/**
 * The ledger and the store held against the events read. `store` is what the store holds now:
 * `emails` (email → user id) and `sessions` (has(sid)). Returns { missing, orphans, gaps }: an
 * acknowledged change without its event, an event without its change, seqs not counted 1..max.
 */
export function auditProblems(ledger, log, store) {
  const events = [...log.bySeq.values()].sort((a, b) => a.seq - b.seq)
  const missing = []
  const orphans = []
  const gaps = []
  for (let s = 1; s <= log.maxSeq; s++) if (!log.bySeq.has(s)) gaps.push(`no event ${s} (the newest is ${log.maxSeq})`)

  const of = (name) => events.filter((e) => e.event === name)
  const bySession = (name) => new Map(of(name).map((e) => [e.sessionId, e]))
  const registers = bySession('register')
  const logins = bySession('login.success')
  const logouts = bySession('logout')
  // how a session may end with its end recorded
  const ended = new Set([...of('logout'), ...of('refresh.reuse'), ...of('session.evict')].map((e) => e.sessionId))
  const endedAll = of('logout').filter((e) => e.detail?.all === true)

  // every acknowledged change has its event
  for (const { email, sid } of ledger.registers) {
    if (registers.get(sid)?.email !== email) missing.push(`a 201 register of ${email} has no register event naming its session`)
  }
  for (const { email, sid } of ledger.logins) {
    if (logins.get(sid)?.email !== email) missing.push(`a 200 login of ${email} has no login.success event naming its session`)
  }
  for (const sid of ledger.logouts) if (!logouts.has(sid)) missing.push(`a 200 logout of session ${sid} has no logout event`)
  const failures = new Map()
  for (const e of of('login.failure')) failures.set(e.email, (failures.get(e.email) ?? 0) + 1)
  for (const [email, n] of ledger.wrongRefused) {
    if ((failures.get(email) ?? 0) < n) missing.push(`${n} wrong logins of ${email} answered 401, ${failures.get(email) ?? 0} login.failure events`)
  }

  // no event without its change
  for (const e of of('register')) {
    if (store.emails.get(e.email) !== e.userId) orphans.push(`register event ${e.seq} of ${e.email}: no such user in the store`)
  }
  for (const e of of('login.success')) {
    const over = ended.has(e.sessionId) || endedAll.some((o) => o.userId === e.userId && o.seq > e.seq)
    if (!store.sessions.has(e.sessionId) && !over) orphans.push(`login.success event ${e.seq}: its session is not in the store and no event ended it`)
  }
  for (const e of [...of('logout'), ...of('refresh.reuse'), ...of('session.evict')]) {
    if (e.sessionId !== null && store.sessions.has(e.sessionId)) orphans.push(`${e.event} event ${e.seq}: its session is still in the store`)
  }
  for (const [email, n] of failures) {
    const sent = ledger.wrongSent.get(email) ?? 0
    if (n > sent) orphans.push(`${n} login.failure events of ${email}, ${sent} wrong logins sent`)
  }
  for (const e of of('login.failure')) {
    if (e.detail?.reason !== 'bad_password') orphans.push(`login.failure event ${e.seq}: reason ${e.detail?.reason}, not bad_password`)
  }
  const expected = new Set(['register', 'login.success', 'login.failure', 'logout', 'refresh.reuse', 'session.evict'])
  for (const e of events) if (!expected.has(e.event)) orphans.push(`event ${e.seq} is a ${e.event}, which this load does not cause`)
  return { missing, orphans, gaps }
}
