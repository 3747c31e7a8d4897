/**
 * What the terminal UI needs from the rest of authd: the admin operations of `authctl`, async,
 * returning plain rows. The UI never touches the Store or the domain directly, so views and
 * reducers are tested with a fake and `store-deps.ts` adapts the real operations.
 */
import type { AuditFields } from '../store/store.js'

export interface UserRow {
  id: string
  email: string
  createdAt: number
  disabled: boolean
  /** live sessions (refresh tokens) of the user */
  sessions: number
  /** whether the TOTP second factor is on */
  mfaEnabled: boolean
}

export interface SessionRow {
  id: string
  userId: string
  /** the user's email, or the id if the user is gone */
  email: string
  ip: string
  userAgent: string
  createdAt: number
  lastUsedAt: number
  expiresAt: number
}

export interface KeyRow {
  kid: string
  alg: string
  /**
   * the effective state now (a next key whose time has come shows as active, a retiring key
   * whose tokens have all expired as retired)
   */
  state: 'next' | 'active' | 'retiring' | 'retired'
  createdAt: number
  /** when it started signing; for a next key, when it will */
  activatedAt: number | null
  retiringAt: number | null
  retiredAt: number | null
}

export interface Snapshot {
  users: UserRow[]
  /** the most recently used live sessions of users matching the filter (at most SESSIONS_READ) */
  sessions: SessionRow[]
  /** how many live sessions match in all (absent: all are in `sessions`) */
  sessionsTotal?: number
  keys: KeyRow[]
}

/** The Sessions view reads at most this many sessions: a store may hold 100 000 */
export const SESSIONS_READ = 500

export interface SnapshotOptions {
  /** the Sessions view's filter: sessions are read of the users whose email contains it */
  sessionFilter?: string
  /** the filter is a whole email: the sessions of that user alone (`s` on a user) */
  sessionExact?: boolean
  /** aborted when the UI quits: the read stops at its next step */
  signal?: AbortSignal
}

/** An audit event as the Audit view shows it (README, "Audit log"); `at` in ms. */
export interface AuditRow extends AuditFields {
  seq: number
  at: number
}

/** The Audit view reads the newest this many events (of those its filter matches) */
export const AUDIT_READ = 200

export interface AuditReadOptions {
  /**
   * the view's filter: an event name, or a user's email or id, finds that event's or user's
   * events however old; other text, the events whose email, user id or event name contain it
   * among the latest few thousand
   */
  filter: string
  limit: number
}

export interface SmokeInput {
  url: string
  email: string
  password: string
}

/** One smoke step as it happens: first `running`, then `pass` or `fail` with its duration. */
export interface SmokeStepEvent {
  /** position of the step, from 0 */
  index: number
  name: string
  status: 'running' | 'pass' | 'fail' | 'skipped'
  /** HTTP status of the step's request, when it got an answer */
  httpStatus?: number
  ms?: number
  /** why it failed, a plain sentence */
  detail?: string
}

export interface TuiDeps {
  /** which store, for the header: its backend and where it is ("LMDB /var/lib/authd", "PostgreSQL postgres://authd:***@db/authd") */
  storeLabel: string
  /** the URL the smoke view starts with (server.public_url) */
  defaultSmokeUrl: string
  /** the smoke step names in order, shown before a run */
  smokeStepNames: string[]
  now(): number

  /**
   * everything the lists show, read fresh (called about once a second); a long read proceeds in
   * steps that let keys through, so it never holds the UI up
   */
  snapshot(opts?: SnapshotOptions): Promise<Snapshot>

  /** the newest audit events matching the filter, newest first (polled about once a second while the Audit view shows) */
  auditEvents(opts: AuditReadOptions): Promise<AuditRow[]>

  /** creates a user; rejects with the policy or conflict message (e.g. "Password is too common") */
  addUser(email: string, password: string): Promise<UserRow>
  /** sets a new password; the user's sessions are revoked; resolves to how many */
  setPassword(userId: string, password: string): Promise<number>
  /** disabling also revokes the user's sessions; resolves to how many */
  setDisabled(userId: string, disabled: boolean): Promise<number>
  /** deletes the user and its sessions */
  removeUser(userId: string): Promise<void>
  /**
   * as `authctl user mfa reset`: the second factor and its recovery codes go; resolves to whether
   * one was on, and whether only a set-up not yet confirmed was removed
   */
  resetMfa(userId: string): Promise<{ wasEnabled: boolean; setupRemoved: boolean }>

  revokeSession(sessionId: string): Promise<void>
  /** resolves to how many sessions were revoked */
  revokeUserSessions(userId: string): Promise<number>

  /** as `authctl keys rotate`: the new key, next (signing tokens.key_lead later) unless no key signs */
  rotateKey(): Promise<KeyRow>
  /** rejects with the reason `revokeKey` would refuse (a key that is gone), changing nothing: asked before confirming */
  checkRevokeKey(kid: string): Promise<void>
  /** removes a key at once: tokens signed with it stop verifying; the active key is replaced first, as `authctl keys revoke` does */
  revokeKey(kid: string): Promise<void>

  /** runs the smoke steps against a daemon, reporting each; resolves true if all passed */
  smoke(input: SmokeInput, onStep: (step: SmokeStepEvent) => void): Promise<boolean>
}
