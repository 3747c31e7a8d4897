/**
 * A signed-in user's second factor (docs/api.md, "Second factor"): set up TOTP, confirm it with a code
 * (the factor is then on, with ten recovery codes), turn it off, or get new recovery codes. The
 * caller is the user of a live access token (AuthService.authenticate); turning the factor off and
 * new recovery codes also take the password. No HTTP and no LMDB here.
 */
import type { Config } from '../config/types.js'
import type { AuditDraft, Store, UserRecord } from '../store/store.js'
import { apiDraft, type AuditEventName } from './audit.js'
import type { AuthEvents, Authenticated, ClientContext, Logger, LoginCharges } from './auth-service.js'
import { AppError } from '../errors.js'
import type { PasswordHasher } from './passwords.js'
import type { RefusalLog } from './refusal-log.js'
import { matchTotp, newRecoveryCodes, newTotpSecret, otpauthUrl } from './totp.js'

export interface MfaServiceDeps {
  config: Config
  store: Store
  hasher: PasswordHasher
  /** the login limits, charged by a password check as by a login (AuthService.loginCharges) */
  loginCharges: LoginCharges
  now: () => number
  log: Logger
  events: Pick<AuthEvents, 'mfaAccount' | 'rateLimited'>
  refusals: Pick<RefusalLog, 'refused'>
}

export interface MfaService {
  /** a new TOTP secret, kept unconfirmed (replacing an earlier unconfirmed one) */
  setup(who: Authenticated): Promise<{ secret: string; otpauthUrl: string }>
  /** `{code}` of the setup's secret: the factor is on; its ten recovery codes, shown this once */
  confirm(who: Authenticated, body: Record<string, unknown>, client: ClientContext): Promise<{ recoveryCodes: string[] }>
  /** `{password}`: the factor is off, its recovery codes void */
  disable(who: Authenticated, body: Record<string, unknown>, client: ClientContext): Promise<void>
  /** `{password}`: ten new recovery codes, the old ones void */
  newRecoveryCodes(who: Authenticated, body: Record<string, unknown>, client: ClientContext): Promise<{ recoveryCodes: string[] }>
}

/** a record without the unconfirmed setup */
const withoutSetup = (u: UserRecord): UserRecord => {
  const { mfaSetup: _setup, ...rest } = u
  return rest
}

export function createMfaService(deps: MfaServiceDeps): MfaService {
  const { config, store, hasher, loginCharges, log, events, refusals } = deps

  /**
   * The event of a change `change` decides on inside the write: the array the store reads once
   * `change` has run, holding the event only if `change` made the change (a write that finds the
   * setup replaced or the factor gone meanwhile records nothing).
   */
  const eventIf = (event: AuditEventName, who: Authenticated, client: ClientContext) => {
    const audit: AuditDraft[] = []
    return {
      audit,
      made: (made: boolean): void => {
        audit.length = 0
        if (made) audit.push(apiDraft(event, client, { at: deps.now(), userId: who.user.id, email: who.user.email, sessionId: who.sessionId }))
      },
    }
  }

  /** the caller's record; its token was checked against the store just now */
  const userOf = async (who: Authenticated): Promise<UserRecord> => {
    const user = await store.getUser(who.user.id)
    if (user === undefined) throw new AppError('INVALID_ACCESS_TOKEN')
    return user
  }

  /**
   * The password of `user`, checked as a login checks it: counted before the hash as a failed
   * login of that email (login.per_ip_email and login.per_email), so a stolen access token is no
   * way around the login limits to guess the password; while they are spent, 429 without a check,
   * whatever the body holds.
   */
  async function checkPassword(user: UserRecord, password: unknown, client: ClientContext): Promise<void> {
    const charge = await loginCharges.charge(user.email, user.id, client)
    if (!charge.ok) {
      events.rateLimited(charge.limit)
      refusals.refused({ event: 'mfa_change', limit: charge.limit, ip: client.ip }, 'second-factor change refused by rate limit')
      throw new AppError('TOO_MANY_LOGINS', { retryAfterS: charge.retryAfterS })
    }
    // no password at all: nothing was checked, and nothing is counted
    if (typeof password !== 'string' || password === '') {
      await loginCharges.release(charge)
      events.mfaAccount('wrong_password')
      throw new AppError('CURRENT_PASSWORD_INCORRECT')
    }
    const ok = await hasher.verify(user.passwordHash, password).catch((err: unknown) => loginCharges.uncharged(charge, err))
    if (!ok) {
      events.mfaAccount('wrong_password')
      log.info({ event: 'mfa_change', outcome: 'wrong_password', ip: client.ip, userId: user.id }, 'second-factor change refused')
      throw new AppError('CURRENT_PASSWORD_INCORRECT')
    }
    await loginCharges.cleared(charge)
  }

  return {
    async setup(who) {
      const user = await userOf(who)
      if (user.mfa !== undefined) throw new AppError('MFA_ALREADY_ENABLED')
      const secret = newTotpSecret()
      const stored = await store.updateUser(user.id, (u) => (u.mfa !== undefined ? u : { ...u, mfaSetup: { secret, createdAt: deps.now() } }), [], who.sessionId)
      if (stored === undefined) throw new AppError('INVALID_ACCESS_TOKEN')
      if (stored.mfa !== undefined) throw new AppError('MFA_ALREADY_ENABLED')
      events.mfaAccount('setup')
      log.info({ event: 'mfa_change', outcome: 'setup', userId: user.id }, 'second factor set up (unconfirmed)')
      return { secret, otpauthUrl: otpauthUrl(config.mfa.issuer, stored.email, secret) }
    },

    async confirm(who, body, client) {
      const user = await userOf(who)
      const setup = user.mfaSetup
      if (setup === undefined) throw new AppError('MFA_NO_SETUP')
      const now = deps.now()
      const step = typeof body.code === 'string' ? matchTotp(setup.secret, body.code, now, -1) : null
      if (step === null) {
        events.mfaAccount('invalid_code')
        throw new AppError('INVALID_SETUP_CODE')
      }
      const { codes, hashes } = newRecoveryCodes(user.id)
      let confirmed = false
      const enabled = eventIf('mfa.enable', who, client)
      const stored = await store.updateUser(user.id, (u) => {
        // the very setup that was checked (not one that replaced it meanwhile)
        confirmed = u.mfaSetup?.secret === setup.secret && u.mfa === undefined
        enabled.made(confirmed)
        if (!confirmed) return u
        // the confirming code's step counts as used: it cannot sign in afterwards
        return { ...withoutSetup(u), mfa: { secret: setup.secret, enabledAt: now, lastStep: step, recoveryCodes: hashes }, updatedAt: now }
      }, enabled.audit, who.sessionId)
      // the caller's session ended (or the user went) while this request ran: nothing written
      if (stored === undefined) throw new AppError('INVALID_ACCESS_TOKEN')
      if (!confirmed) throw new AppError('MFA_NO_SETUP')
      events.mfaAccount('enable')
      log.info({ event: 'mfa_change', outcome: 'enable', userId: user.id }, 'second factor turned on')
      return { recoveryCodes: codes }
    },

    async disable(who, body, client) {
      const user = await userOf(who)
      if (user.mfa === undefined) throw new AppError('MFA_NOT_ENABLED')
      await checkPassword(user, body.password, client)
      const now = deps.now()
      const disabled = eventIf('mfa.disable', who, client)
      // checked again in the write: a disable that came first (another tab, another instance)
      // leaves this one nothing to turn off, and a set-up begun since is not this one's to remove
      let wasOn = false
      const stored = await store.updateUser(user.id, (u) => {
        wasOn = u.mfa !== undefined
        disabled.made(wasOn)
        if (!wasOn) return u
        const { mfa: _mfa, ...rest } = withoutSetup(u)
        return { ...rest, updatedAt: now }
      }, disabled.audit, who.sessionId)
      if (stored === undefined) throw new AppError('INVALID_ACCESS_TOKEN')
      if (!wasOn) throw new AppError('MFA_NOT_ENABLED')
      events.mfaAccount('disable')
      log.info({ event: 'mfa_change', outcome: 'disable', ip: client.ip, userId: user.id }, 'second factor turned off')
    },

    async newRecoveryCodes(who, body, client) {
      const user = await userOf(who)
      if (user.mfa === undefined) throw new AppError('MFA_NOT_ENABLED')
      await checkPassword(user, body.password, client)
      const { codes, hashes } = newRecoveryCodes(user.id)
      const renewed = eventIf('mfa.recovery_codes', who, client)
      const stored = await store.updateUser(
        user.id,
        (u) => {
          renewed.made(u.mfa !== undefined)
          return u.mfa === undefined ? u : { ...u, mfa: { ...u.mfa, recoveryCodes: hashes }, updatedAt: deps.now() }
        },
        renewed.audit,
        who.sessionId,
      )
      if (stored === undefined) throw new AppError('INVALID_ACCESS_TOKEN')
      if (stored.mfa === undefined) throw new AppError('MFA_NOT_ENABLED')
      events.mfaAccount('recovery_codes')
      log.info({ event: 'mfa_change', outcome: 'recovery_codes', ip: client.ip, userId: user.id }, 'new recovery codes')
      return { recoveryCodes: codes }
    },
  }
}
