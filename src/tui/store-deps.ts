/**
 * TuiDeps over the real thing: the admin operations of `authctl` (core/admin.ts) on the open
 * store, and the smoke steps of `authctl smoke`. Only shapes change here; every rule (email,
 * password policy, sessions revoked with a password change, the active key refused) is admin's.
 */
import type { Admin, KeySummary, SessionSummary, UserSummary } from '../core/admin.js'
import { isAuditEventName, readAudit, type AuditFilter } from '../core/audit.js'
import type { AuditEvent, Store } from '../store/store.js'
import { AppError, quoted } from '../errors.js'
import type { SmokeOptions, SmokeResult } from '../client/smoke-steps.js'
import { SMOKE_STEP_NAMES } from '../client/smoke-steps.js'
import { SESSIONS_READ, type AuditRow, type KeyRow, type SessionRow, type SmokeStepEvent, type TuiDeps, type UserRow } from './deps.js'
import { matchesFilter } from './state.js'

export interface StoreTuiDepsOptions {
  admin: Admin
  /** the audit log's reads */
  store: Pick<Store, 'auditEvents'>
  /** the header's name for the store (storeLabel) */
  storeLabel: string
  /** server.public_url */
  publicUrl: string
  now?: () => number
  /** the smoke steps (client/smoke-steps.ts runSmoke); loaded on first use by default */
  runSmoke?: (opts: SmokeOptions) => Promise<SmokeResult>
}

const userRow = (u: UserSummary): UserRow => ({ id: u.id, email: u.email, createdAt: u.createdAt, disabled: u.disabled, sessions: u.sessions, mfaEnabled: u.mfaEnabled })

const sessionRow = (s: SessionSummary): SessionRow => ({
  id: s.id,
  userId: s.userId,
  email: s.email ?? s.userId,
  ip: s.ip,
  userAgent: s.userAgent,
  createdAt: s.createdAt,
  lastUsedAt: s.lastUsedAt,
  expiresAt: s.expiresAt,
})

const keyRow = (k: KeySummary): KeyRow => ({
  kid: k.kid,
  alg: k.alg,
  state: k.state,
  createdAt: k.createdAt,
  activatedAt: k.activatedAt,
  retiringAt: k.retiringAt,
  retiredAt: k.retiredAt,
})

const auditRow = (e: AuditEvent): AuditRow => ({
  seq: e.seq,
  at: Date.parse(e.time),
  event: e.event,
  actor: e.actor,
  userId: e.userId,
  email: e.email,
  sessionId: e.sessionId,
  ip: e.ip,
  userAgent: e.userAgent,
  detail: e.detail,
})

/** events the Audit view's free-text filter reads at most, newest first */
export const AUDIT_SCAN = 5000

/** the same URL rule as `authctl smoke --url` */
function smokeUrl(url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url.trim())
  } catch {
    throw new AppError('SMOKE_URL_INVALID', { params: { what: 'The URL', url: quoted(url) } })
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new AppError('SMOKE_URL_INVALID', { params: { what: 'The URL', url: quoted(url) } })
  }
  return parsed.origin + parsed.pathname
}

/** a store as the header names it: its backend, and its location (a URL's password as ***) */
export const storeLabel = (store: Pick<Store, 'backend' | 'location'>): string => `${store.backend === 'lmdb' ? 'LMDB' : 'PostgreSQL'} ${store.location}`

export function createStoreTuiDeps(opts: StoreTuiDepsOptions): TuiDeps {
  const { admin } = opts
  const runSmoke = opts.runSmoke ?? (async (o: SmokeOptions) => (await import('../client/smoke-steps.js')).runSmoke(o))
  return {
    storeLabel: opts.storeLabel,
    defaultSmokeUrl: opts.publicUrl,
    smokeStepNames: [...SMOKE_STEP_NAMES],
    now: opts.now ?? Date.now,

    async snapshot(o = {}) {
      const filter = o.sessionFilter ?? ''
      const exact = o.sessionExact === true
      const read = await admin.overview({
        sessions: { limit: SESSIONS_READ, match: filter === '' ? undefined : (email) => email !== null && matchesFilter(email, filter, exact) },
        signal: o.signal,
      })
      return {
        users: read.users.map(userRow),
        sessions: read.sessions.map(sessionRow),
        sessionsTotal: read.sessionsTotal,
        keys: (await admin.listKeys()).map(keyRow),
      }
    },

    async auditEvents({ filter, limit }) {
      const text = filter.trim()
      let f: AuditFilter = {}
      if (isAuditEventName(text)) f = { event: text }
      else if (text !== '') {
        const user = await admin.findUser(text)
        f = user !== undefined ? { userId: user.id } : { text }
      }
      return (await readAudit(opts.store, f, limit, AUDIT_SCAN)).map(auditRow)
    },

    addUser: async (email, password) => userRow(await admin.addUser(email, password)),
    setPassword: async (userId, password) => (await admin.setPassword(userId, password)).revokedSessions,
    setDisabled: async (userId, disabled) => (disabled ? (await admin.disableUser(userId)).revokedSessions : (await admin.enableUser(userId), 0)),
    removeUser: async (userId) => {
      await admin.removeUser(userId)
    },
    resetMfa: async (userId) => {
      const r = await admin.resetMfa(userId)
      return { wasEnabled: r.wasEnabled, setupRemoved: r.setupRemoved }
    },

    revokeSession: async (sessionId) => {
      await admin.revokeSession(sessionId)
    },
    revokeUserSessions: async (userId) => (await admin.revokeUserSessions(userId)).revoked,

    rotateKey: async () => keyRow((await admin.rotateKey()).key),
    checkRevokeKey: async (kid) => {
      await admin.checkRevokeKey(kid)
    },
    revokeKey: async (kid) => {
      await admin.revokeKey(kid)
    },

    async smoke(input, onStep) {
      const report = (e: SmokeStepEvent): void => onStep(e)
      const result = await runSmoke({
        url: smokeUrl(input.url),
        email: input.email,
        password: input.password,
        onStart: (s) => report({ index: s.index - 1, name: s.name, status: 'running' }),
        onStep: (s) =>
          report({
            index: s.index - 1,
            name: s.name,
            status: s.outcome === 'passed' ? 'pass' : s.outcome === 'failed' ? 'fail' : 'skipped',
            httpStatus: s.status ?? undefined,
            ms: s.outcome === 'skipped' ? undefined : s.ms,
            detail: s.error ?? undefined,
          }),
      })
      return result.ok
    },
  }
}
