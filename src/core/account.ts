/**
 * A signed-in user's own account (docs/api.md, "The user's own account"): change the password, see and end
 * their own sessions. The HTTP layer authenticates the request first (AuthService.authenticate,
 * /me's checks and 401s) and hands in who called; nothing here is reached without a live session.
 */
import type { Config } from '../config/types.js'
import type { SessionEntry, SessionRecord, Store } from '../store/store.js'
import { apiDraft } from './audit.js'
import type { Authenticated, ClientContext, Logger } from './caller.js'
import { AppError, isAppError } from '../errors.js'
import type { PasswordHasher } from './passwords.js'
import type { PasswordPolicy } from './password-policy.js'
import type { ConsumeToken } from '../store/rate-limit.js'
import type { RefusalLog } from './refusal-log.js'
import { expiresIfUnused, isLive } from './sessions.js'

/** authd_password_change_total's outcomes */
export type PasswordChangeOutcome = 'success' | 'invalid_input' | 'incorrect' | 'rate_limited'

/** A session as its user sees it in GET /api/auth/sessions (never a token or its hash) */
export interface OwnSession {
  id: string
  createdAt: string
  lastUsedAt: string
  /** when it ends if left unused: the earlier of the idle and the absolute expiry */
  expiresAt: string
  /** of the request that started the session */
  ip: string
  userAgent: string
  /** the session of the token that asked */
  current: boolean
}

export interface Account {
  /**
   * POST /api/auth/password: checks `currentPassword` as a login would (charged to the login
   * limits), then stores `newPassword`'s hash and ends every other session of the user, in one
   * write. The calling session stays.
   */
  changePassword(who: Authenticated, body: Record<string, unknown>, client: ClientContext): Promise<void>
  /** GET /api/auth/sessions: the user's live sessions, newest first */
  sessions(who: Authenticated): Promise<OwnSession[]>
  /** DELETE /api/auth/sessions/:id: ends one live session of the user's own (the calling one too) */
  revokeSession(who: Authenticated, sessionId: string, client: ClientContext): Promise<void>
}

/**
 * Whether an id from a request can name a session at all: not empty, not absurdly long, no
 * control character (a NUL, which PostgreSQL's text cannot hold, among them). Anything else is
 * looked up, and a miss is the one answer for every session that is not the caller's.
 */
const mayBeSessionId = (id: string): boolean => id.length > 0 && id.length <= 256 && !/[\u0000-\u001f\u007f-\u009f]/.test(id)

/** A password check charged to the login limits (auth-service.ts, chargeLogin) */
export interface ChargedCheck {
  ok: true
  token: ConsumeToken
}

export interface AccountDeps {
  config: Config
  store: Store
  hasher: PasswordHasher
  policy: PasswordPolicy
  now: () => number
  log: Logger
  events: { passwordChange(outcome: PasswordChangeOutcome): void; rateLimited(limit: string): void }
  refusals: Pick<RefusalLog, 'refused'>
  /** the login limits' charge of one password check of `email` (as login charges it) */
  chargeLogin(email: string, userId: string, client: ClientContext): Promise<ChargedCheck | { ok: false; limit: string; retryAfterS: number }>
  /** un-counts a charge whose check never ran */
  release(charge: ChargedCheck): Promise<void>
  /** un-counts a charge whose check was turned away by the hash queue (503), then rethrows */
  uncharged(charge: ChargedCheck, err: unknown): Promise<never>
  /** the password was right: the charge is not a failure, and the address's failures are forgotten */
  chargeCleared(charge: ChargedCheck): Promise<void>
}

/** the stored hash is no longer the one the current password was checked against */
class HashMoved extends Error {
  constructor(readonly stored: string) {
    super('the stored password hash changed')
  }
}

/** index entries read per step when listing a user's sessions */
const PAGE = 256

const iso = (ms: number): string => new Date(ms).toISOString()

export function createAccount(deps: AccountDeps): Account {
  const { store, hasher, log, events, config } = deps
  const policy = config.sessions

  return {
    async changePassword(who, body, client) {
      const userId = who.user.id
      const user = await store.getUser(userId)
      // gone or disabled since the token was checked: what /me would answer now
      if (user === undefined || user.disabled) throw new AppError('INVALID_ACCESS_TOKEN')
      // A wrong current password is a failed login of this email: charged before anything is
      // checked, so a spent limit answers 429 without a hash, and concurrent guesses run no more
      // hashes than the limit allows.
      const charge = await deps.chargeLogin(user.email, userId, client)
      if (!charge.ok) {
        events.passwordChange('rate_limited')
        events.rateLimited(charge.limit)
        deps.refusals.refused({ event: 'password_change', limit: charge.limit, ip: client.ip }, 'password change refused by rate limit')
        throw new AppError('TOO_MANY_LOGINS', { retryAfterS: charge.retryAfterS })
      }
      // the body is looked at only now (docs/api.md: while the limits are spent, 429 whatever it
      // holds); a request without both passwords checked nothing and is not counted
      const { currentPassword, newPassword } = body
      if (typeof currentPassword !== 'string' || typeof newPassword !== 'string' || currentPassword.trim() === '' || newPassword.trim() === '') {
        await deps.release(charge)
        events.passwordChange('invalid_input')
        throw new AppError('PASSWORDS_REQUIRED')
      }
      try {
        deps.policy.check(newPassword)
      } catch (err) {
        // the current password was not checked: nothing failed
        await deps.release(charge)
        events.passwordChange('invalid_input')
        throw err
      }
      const ok = await hasher.verify(user.passwordHash, currentPassword).catch((err: unknown) => deps.uncharged(charge, err))
      if (!ok) {
        events.passwordChange('incorrect')
        log.info({ event: 'password_change', outcome: 'incorrect', userId, sessionId: who.sessionId, ip: client.ip }, 'password change refused: wrong current password')
        throw new AppError('CURRENT_PASSWORD_INCORRECT')
      }
      await deps.chargeCleared(charge)
      // at the current parameters, whatever the old hash's were
      const passwordHash = await hasher.hash(newPassword)
      const at = deps.now()
      const audit = [apiDraft('password.change', client, { at, userId, email: user.email, sessionId: who.sessionId })]
      // written only while the stored hash is `checked`, the one the current password was checked
      // against (thrown from inside the write, which is then abandoned)
      const write = (checked: string) =>
        store.updateUserEndingSessions(
          userId,
          (u) => {
            if (u.disabled) throw new AppError('CURRENT_PASSWORD_INCORRECT')
            if (u.passwordHash !== checked) throw new HashMoved(u.passwordHash)
            return { ...u, passwordHash, updatedAt: at }
          },
          who.sessionId,
          audit,
          // only while the caller's session is still stored: one ended meanwhile changes nothing
          who.sessionId,
        )
      let changed
      try {
        // A hash that moved is checked once more (one argon2 run more, only then): a concurrent
        // login's re-hash at new parameters holds the same password; a change by another request
        // or an admin does not, and this request's password is no longer the current one.
        changed = await write(user.passwordHash).catch(async (err: unknown) => {
          if (err instanceof HashMoved && (await hasher.verify(err.stored, currentPassword))) return write(err.stored)
          throw err
        })
      } catch (err) {
        if (err instanceof HashMoved || (isAppError(err) && err.code === 'CURRENT_PASSWORD_INCORRECT')) {
          events.passwordChange('incorrect')
          throw new AppError('CURRENT_PASSWORD_INCORRECT')
        }
        throw err
      }
      if (changed === undefined) throw new AppError('INVALID_ACCESS_TOKEN')
      events.passwordChange('success')
      log.info(
        { event: 'password_change', outcome: 'success', userId, sessionId: who.sessionId, ip: client.ip, sessionsEnded: changed.ended },
        'password changed: the other sessions ended',
      )
    },

    async sessions(who) {
      const userId = who.user.id
      const now = deps.now()
      // the small index entries first (a user has at most sessions.max_per_user live ones, but
      // expired ones wait for the sweep), then only the live sessions' records
      const live: string[] = []
      let after: SessionEntry | undefined
      for (;;) {
        const page = await store.sessionEntries({ userId, after, limit: PAGE })
        for (const e of page) if (isLive(e, now, policy)) live.push(e.id)
        if (page.length < PAGE) break
        after = page[page.length - 1]
      }
      const records = (await store.getSessions(live)).filter((s): s is SessionRecord => s !== undefined && s.userId === userId && isLive(s, now, policy))
      records.sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      return records.map((s) => ({
        id: s.id,
        createdAt: iso(s.createdAt),
        lastUsedAt: iso(s.lastUsedAt),
        expiresAt: iso(expiresIfUnused(s, policy)),
        ip: s.ip,
        userAgent: s.userAgent,
        current: s.id === who.sessionId,
      }))
    },

    async revokeSession(who, sessionId, client) {
      // another user's session, an ended one and one that never was: one answer
      const s = !mayBeSessionId(sessionId) ? undefined : await store.getSession(sessionId)
      const audit = s === undefined ? [] : [apiDraft('session.revoke', client, { at: deps.now(), userId: s.userId, email: who.user.email, sessionId: s.id, detail: { current: s.id === who.sessionId } })]
      if (s === undefined || s.userId !== who.user.id || !isLive(s, deps.now(), policy)) throw new AppError('SESSION_NOT_FOUND')
      // only while the calling session still stands: one that a password change has just ended
      // (after its token was checked) must not end the session that made the change
      const revoked = await store.revokeSession(s.id, audit, { sessionId: who.sessionId, userId: who.user.id })
      if (revoked === undefined) throw new AppError('INVALID_ACCESS_TOKEN')
      if (!revoked) throw new AppError('SESSION_NOT_FOUND')
      log.info({ event: 'session_revoke', userId: s.userId, sessionId: s.id, current: s.id === who.sessionId, ip: client.ip }, 'session ended by its user')
    },
  }
}
