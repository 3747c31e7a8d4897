/**
 * An in-memory TuiDeps for reducer and view tests: lists that operations really change, a log
 * of calls, and switches to make an operation fail the way the store or the network does.
 */
import type { AuditReadOptions, AuditRow, KeyRow, SessionRow, Snapshot, SmokeInput, SmokeStepEvent, TuiDeps, UserRow } from '../../src/tui/deps.js'
import { matchesFilter } from '../../src/tui/state.js'

export const T0 = Date.UTC(2025, 2, 4, 9, 5, 0)

export interface FakeDeps extends TuiDeps {
  users: UserRow[]
  sessions: SessionRow[]
  keys: KeyRow[]
  calls: string[]
  /** the next call of this operation rejects with this message */
  failNext: Map<string, string>
  /** the snapshot rejects while set */
  snapshotError: string | null
  /** the snapshot answers this long after it has read the lists (a big store is read in steps) */
  snapshotDelayMs: number
  /** smoke: the steps to report, with a pause before each */
  smokePlan: Array<Omit<SmokeStepEvent, 'index'>>
  smokeInputs: SmokeInput[]
  /** the audit log, newest last (as appended); tests push to it while the UI runs */
  audit: AuditRow[]
  /** the Audit view's reads, in order */
  auditReads: AuditReadOptions[]
  /** auditEvents rejects while set */
  auditError: string | null
}

export function user(email: string, extra: Partial<UserRow> = {}): UserRow {
  return { id: `id-${email.split('@')[0]}`, email, createdAt: T0, disabled: false, sessions: 0, mfaEnabled: false, ...extra }
}

export function session(id: string, u: UserRow, extra: Partial<SessionRow> = {}): SessionRow {
  return {
    id,
    userId: u.id,
    email: u.email,
    ip: '203.0.113.7',
    userAgent: 'curl/8.5.0',
    createdAt: T0 - 3600_000,
    lastUsedAt: T0 - 120_000,
    expiresAt: T0 + 7 * 86400_000,
    ...extra,
  }
}

export function key(kid: string, extra: Partial<KeyRow> = {}): KeyRow {
  return { kid, alg: 'ES256', state: 'active', createdAt: T0 - 86400_000, activatedAt: T0 - 86400_000, retiringAt: null, retiredAt: null, ...extra }
}

let seq = 0

/** an audit event as the Audit view gets it */
export function auditRow(event: string, u: UserRow | null, extra: Partial<AuditRow> = {}): AuditRow {
  seq++
  return {
    seq,
    at: T0 - 60_000 + seq * 1000,
    event,
    actor: 'api',
    userId: u?.id ?? null,
    email: u?.email ?? null,
    sessionId: null,
    ip: '203.0.113.7',
    userAgent: 'curl/8.5.0',
    detail: {},
    ...extra,
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

export function fakeDeps(init: Partial<Snapshot> = {}): FakeDeps {
  const d: FakeDeps = {
    storeLabel: 'LMDB /var/lib/authd',
    defaultSmokeUrl: 'http://127.0.0.1:8080',
    smokeStepNames: ['login', 'me', 'refresh', 'me_refreshed', 'logout', 'refresh_after_logout'],
    now: () => T0,
    users: [...(init.users ?? [])],
    sessions: [...(init.sessions ?? [])],
    keys: [...(init.keys ?? [key('kid-active-0001')])],
    calls: [],
    failNext: new Map(),
    snapshotError: null,
    snapshotDelayMs: 0,
    smokePlan: [],
    smokeInputs: [],
    audit: [],
    auditReads: [],
    auditError: null,

    async auditEvents(opts) {
      d.auditReads.push(opts)
      if (d.auditError !== null) throw new Error(d.auditError)
      const f = opts.filter.trim().toLowerCase()
      const match = (e: AuditRow): boolean => f === '' || [e.email, e.userId, e.event].some((v) => v !== null && v.toLowerCase().includes(f))
      return d.audit.filter(match).reverse().slice(0, opts.limit)
    },
    async snapshot(o = {}) {
      if (d.snapshotError !== null) throw new Error(d.snapshotError)
      const count = (id: string): number => d.sessions.filter((s) => s.userId === id).length
      // the sessions read are those the filter lets through, as the store's snapshot reads them
      const sessions = d.sessions.filter((s) => matchesFilter(s.email, o.sessionFilter ?? '', o.sessionExact === true))
      const read = { users: d.users.map((u) => ({ ...u, sessions: count(u.id) })), sessions, keys: [...d.keys] }
      if (d.snapshotDelayMs > 0) await sleep(d.snapshotDelayMs)
      return read
    },
    async addUser(email, password) {
      called('addUser', `${email} ${password}`)
      const u = user(email.toLowerCase(), { createdAt: T0 + 1000 })
      d.users.push(u)
      return u
    },
    async setPassword(userId, password) {
      called('setPassword', `${userId} ${password}`)
      return revokeOf(userId)
    },
    async setDisabled(userId, disabled) {
      called('setDisabled', `${userId} ${disabled}`)
      d.users = d.users.map((u) => (u.id === userId ? { ...u, disabled } : u))
      return disabled ? revokeOf(userId) : 0
    },
    async removeUser(userId) {
      called('removeUser', userId)
      d.users = d.users.filter((u) => u.id !== userId)
      revokeOf(userId)
    },
    async resetMfa(userId) {
      called('resetMfa', userId)
      const was = d.users.find((u) => u.id === userId)?.mfaEnabled === true
      d.users = d.users.map((u) => (u.id === userId ? { ...u, mfaEnabled: false } : u))
      return { wasEnabled: was, setupRemoved: false }
    },
    async revokeSession(sessionId) {
      called('revokeSession', sessionId)
      d.sessions = d.sessions.filter((s) => s.id !== sessionId)
    },
    async revokeUserSessions(userId) {
      called('revokeUserSessions', userId)
      return revokeOf(userId)
    },
    async rotateKey() {
      called('rotateKey', '')
      // as the real one: published now, signing tokens.key_lead (5m) later; a key still next is replaced
      const k = key(`kid-new-${String(d.keys.length).padStart(4, '0')}`, { state: 'next', createdAt: T0, activatedAt: T0 + 300_000 })
      d.keys = [...d.keys.filter((x) => x.state !== 'next'), k]
      return k
    },
    async checkRevokeKey(kid) {
      called('checkRevokeKey', kid)
      if (!d.keys.some((k) => k.kid === kid)) throw new Error(`No key with kid "${kid}".`)
    },
    async revokeKey(kid) {
      called('revokeKey', kid)
      // the active key is replaced first, as the real one does
      if (d.keys.find((k) => k.kid === kid)?.state === 'active') {
        d.keys = [...d.keys, key(`kid-new-${String(d.keys.length).padStart(4, '0')}`, { createdAt: T0, activatedAt: T0 })]
      }
      d.keys = d.keys.filter((k) => k.kid !== kid)
    },
    async smoke(input, onStep) {
      called('smoke', input.url)
      d.smokeInputs.push(input)
      let ok = true
      for (const [index, step] of d.smokePlan.entries()) {
        onStep({ index, name: step.name, status: 'running' })
        await sleep(30)
        onStep({ index, ...step })
        if (step.status === 'fail') ok = false
      }
      return ok
    },
  }
  function called(op: string, args: string): void {
    d.calls.push(`${op} ${args}`.trim())
    const failure = d.failNext.get(op)
    if (failure !== undefined) {
      d.failNext.delete(op)
      throw new Error(failure)
    }
  }
  function revokeOf(userId: string): number {
    const before = d.sessions.length
    d.sessions = d.sessions.filter((s) => s.userId !== userId)
    return before - d.sessions.length
  }
  return d
}
