/**
 * core/mfa-service.ts driven directly (docs/api.md, "Second factor"): setup, confirm, disable and
 * new recovery codes, each error with its documented code, the password checks charged to the
 * login limits (and what becomes of each charge), and the writes that find the factor changed
 * meanwhile and then change nothing and record nothing. Real LMDB and argon2; the login-limit
 * charge is recorded, not counted (the limits themselves are the HTTP tests').
 */
import t, { type Test } from 'tap'
import type { Authenticated, ClientContext } from '../../src/core/caller.js'
import type { LoginCharge, LoginCharges, MfaAccountAction } from '../../src/core/auth-service.js'
import { createMfaService, type MfaService } from '../../src/core/mfa-service.js'
import { createPasswordHasher, type PasswordHasher } from '../../src/core/passwords.js'
import { codeAt, hashRecoveryCode, newRecoveryCodes, newTotpSecret, normalRecoveryCode, stepAt } from '../../src/core/totp.js'
import { AppError } from '../../src/errors.js'
import type { ConsumeToken } from '../../src/store/rate-limit.js'
import type { Store, UserRecord } from '../../src/store/store.js'
import { openTestStore, testConfig } from '../helpers/app.js'
import { session } from '../helpers/records.js'

const T0 = Date.UTC(2025, 4, 1, 12, 0, 10)
const PASSWORD = 'lantern-orchard-41'
const client: ClientContext = { ip: '203.0.113.9', ipKey: '203.0.113.9', userAgent: 'mfa-service-test' }

const config0 = testConfig('/nowhere')
const hasher = await createPasswordHasher({ ...config0.passwords, concurrency: 1, maxQueue: 512 })
const HASH = await hasher.hash(PASSWORD)
const SECRET = newTotpSecret()
const OLD = newRecoveryCodes('u-ann')

interface Setup {
  store: Store
  mfa: MfaService
  who: Authenticated
  /** the charge's life: 'charge <email>', 'release', 'uncharged', 'cleared' */
  charges: string[]
  actions: MfaAccountAction[]
  limited: string[]
  refused: object[]
  logs: object[]
  clock: { now: number }
  refuse?: { ok: false; limit: string; retryAfterS: number }
  /** run before each of the service's writes (updateUser): another request's change meanwhile */
  meanwhile?: () => Promise<unknown>
}

/** ann, with the factor on (`on`) or off */
async function setup(t: Test, opts: { on?: boolean; hasher?: PasswordHasher; env?: Record<string, string>; email?: string } = {}): Promise<Setup> {
  const dir = t.testdir()
  const real = await openTestStore(t, dir)
  const ann: UserRecord = { id: 'u-ann', email: opts.email ?? 'ann@example.com', passwordHash: HASH, createdAt: T0, updatedAt: T0, disabled: false }
  if (opts.on === true) ann.mfa = { secret: SECRET, enabledAt: T0 - 1000, lastStep: 5, recoveryCodes: OLD.hashes }
  await real.createUser(ann)
  // the calling session: the service's writes go ahead only while it is stored
  await real.createSession(session('s-calling', ann.id))
  const s = { who: { user: { id: ann.id, email: ann.email, mfaEnabled: opts.on === true }, sessionId: 's-calling' }, charges: [], actions: [], limited: [], refused: [], logs: [], clock: { now: T0 } } as unknown as Setup
  s.store = new Proxy(real, {
    get: (target, name) =>
      name === 'updateUser'
        ? async (...args: Parameters<Store['updateUser']>) => {
            const meanwhile = s.meanwhile
            s.meanwhile = undefined
            await meanwhile?.()
            return target.updateUser(...args)
          }
        : Reflect.get(target, name),
  })
  const token = { kind: 'rate-limit-token' } as ConsumeToken
  const loginCharges: LoginCharges = {
    charge: async (email) => {
      s.charges.push(`charge ${email}`)
      return s.refuse ?? ({ ok: true, token, ipEmailKey: 'k', device: null } satisfies LoginCharge)
    },
    release: async () => void s.charges.push('release'),
    uncharged: async (_c, err) => {
      s.charges.push('uncharged')
      throw err
    },
    cleared: async () => void s.charges.push('cleared'),
  }
  s.mfa = createMfaService({
    config: testConfig(dir, opts.env),
    store: s.store,
    hasher: opts.hasher ?? hasher,
    loginCharges,
    now: () => s.clock.now,
    log: { info: (o) => s.logs.push(o), warn: (o) => s.logs.push(o) },
    events: { mfaAccount: (a) => s.actions.push(a), rateLimited: (l) => s.limited.push(l) },
    refusals: { refused: (f) => s.refused.push(f) },
  })
  return s
}

const ann = async (s: Setup): Promise<UserRecord> => (await s.store.getUser('u-ann'))!
const events = async (s: Setup) => (await s.store.auditEvents({ limit: 20 })).reverse()
const CODES = /^[a-z2-7]{5}-[a-z2-7]{5}$/

t.test('setup: a new 160-bit secret kept unconfirmed, and its otpauth URL with issuer and email encoded; a new setup replaces it', async (t) => {
  const s = await setup(t, { env: { AUTHD_MFA_ISSUER: 'Acme & Co' }, email: 'ann+2fa@example.com' })
  const first = await s.mfa.setup(s.who)
  t.match(first.secret, /^[A-Z2-7]{32}$/, '20 bytes in base32, no padding')
  t.equal(first.otpauthUrl, `otpauth://totp/Acme%20%26%20Co:ann%2B2fa%40example.com?secret=${first.secret}&issuer=Acme%20%26%20Co&algorithm=SHA1&digits=6&period=30`)
  t.same((await ann(s)).mfaSetup, { secret: first.secret, createdAt: T0 })
  t.equal((await ann(s)).mfa, undefined, 'the factor is not on')
  s.clock.now = T0 + 1000
  const second = await s.mfa.setup(s.who)
  t.not(second.secret, first.secret)
  t.same((await ann(s)).mfaSetup, { secret: second.secret, createdAt: T0 + 1000 }, 'the second replaces the first')
  t.same(s.actions, ['setup', 'setup'])
  t.same(await events(s), [], 'a setup records no audit event')
  t.notOk(JSON.stringify(s.logs).includes(first.secret), 'the secret is not logged')
})

t.test('setup: MFA_ALREADY_ENABLED when the factor is on, also when it came on meanwhile; INVALID_ACCESS_TOKEN for a user gone', async (t) => {
  const on = await setup(t, { on: true })
  await t.rejects(on.mfa.setup(on.who), { code: 'MFA_ALREADY_ENABLED', status: 409, message: 'Two-factor authentication is already enabled' })
  t.equal((await ann(on)).mfaSetup, undefined)

  const racing = await setup(t)
  racing.meanwhile = () => racing.store.updateUser('u-ann', (u) => ({ ...u, mfa: { secret: SECRET, enabledAt: T0, lastStep: 1, recoveryCodes: [] } }))
  await t.rejects(racing.mfa.setup(racing.who), { code: 'MFA_ALREADY_ENABLED' })
  t.equal((await ann(racing)).mfaSetup, undefined, 'no setup stored beside the factor')
  t.same(racing.actions, [])

  const gone = await setup(t)
  await gone.store.deleteUser('u-ann')
  await t.rejects(gone.mfa.setup(gone.who), { code: 'INVALID_ACCESS_TOKEN', status: 401 })
})

t.test('confirm: MFA_NO_SETUP without a setup; INVALID_SETUP_CODE for a wrong, missing or malformed code, the setup kept', async (t) => {
  const s = await setup(t)
  await t.rejects(s.mfa.confirm(s.who, { code: '123456' }, client), { code: 'MFA_NO_SETUP', status: 409, message: 'No two-factor setup in progress' })
  const { secret } = await s.mfa.setup(s.who)
  const now = stepAt(T0)
  const right = codeAt(secret, now)
  const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0')
  for (const body of [{ code: wrong }, {}, { code: Number(right) }, { code: `${right}0` }, { code: right.slice(1) }, { code: codeAt(secret, now - 2) }, { code: codeAt(secret, now + 2) }, { code: codeAt(SECRET, now) }]) {
    await t.rejects(s.mfa.confirm(s.who, body, client), { code: 'INVALID_SETUP_CODE', status: 400, message: 'Invalid code' }, JSON.stringify(body))
  }
  t.same((await ann(s)).mfaSetup?.secret, secret, 'the setup is still there to confirm')
  t.equal((await ann(s)).mfa, undefined)
  t.same(s.actions, ['setup', ...Array(8).fill('invalid_code')])
  t.same(s.charges, [], 'a code is no password: nothing charged to the login limits')
})

t.test('confirm: the setup’s code (of the step before, now or after) turns the factor on with ten recovery codes, kept hashed, and the code’s step used', async (t) => {
  for (const offset of [-1, 0, 1]) {
    await t.test(`step ${offset}`, async (t) => {
      const s = await setup(t)
      const { secret } = await s.mfa.setup(s.who)
      s.clock.now = T0 + 2000
      const step = stepAt(s.clock.now) + offset
      const { recoveryCodes } = await s.mfa.confirm(s.who, { code: codeAt(secret, step) }, client)
      t.equal(recoveryCodes.length, 10)
      t.ok(recoveryCodes.every((c) => CODES.test(c)), 'xxxxx-xxxxx')
      t.equal(new Set(recoveryCodes).size, 10)
      const u = await ann(s)
      t.equal(u.mfaSetup, undefined, 'the setup is used up')
      t.same(u.mfa, { secret, enabledAt: T0 + 2000, lastStep: step, recoveryCodes: recoveryCodes.map((c) => hashRecoveryCode('u-ann', normalRecoveryCode(c)!)) })
      t.equal(u.updatedAt, T0 + 2000)
      t.notOk(JSON.stringify(u).includes(recoveryCodes[0]!.replace('-', '')), 'no code kept as it is')
      t.match(await events(s), [{ event: 'mfa.enable', actor: 'api', userId: 'u-ann', email: 'ann@example.com', sessionId: 's-calling', ip: client.ip, detail: {} }])
      t.same(s.actions, ['setup', 'enable'])
      t.notOk(JSON.stringify(s.logs).includes(recoveryCodes[0]!), 'no recovery code logged')
      await t.rejects(s.mfa.confirm(s.who, { code: codeAt(secret, step) }, client), { code: 'MFA_NO_SETUP' }, 'confirmed once')
    })
  }
})

t.test('confirm: a setup replaced between the check and the write is MFA_NO_SETUP; the new one stays unconfirmed and nothing is recorded', async (t) => {
  const s = await setup(t)
  const { secret } = await s.mfa.setup(s.who)
  let replacement = ''
  s.meanwhile = async () => {
    replacement = (await s.mfa.setup(s.who)).secret
  }
  await t.rejects(s.mfa.confirm(s.who, { code: codeAt(secret, stepAt(T0)) }, client), { code: 'MFA_NO_SETUP' })
  const u = await ann(s)
  t.equal(u.mfa, undefined, 'the factor is not on')
  t.equal(u.mfaSetup?.secret, replacement)
  t.same(await events(s), [], 'no mfa.enable')
  t.notOk(s.actions.includes('enable'))
})

for (const op of ['disable', 'newRecoveryCodes'] as const) {
  const run = async (s: Setup, body: Record<string, unknown>): Promise<void> => {
    if (op === 'disable') await s.mfa.disable(s.who, body, client)
    else await s.mfa.newRecoveryCodes(s.who, body, client)
  }

  t.test(`${op}: MFA_NOT_ENABLED when the factor is off, before the password is looked at`, async (t) => {
    const s = await setup(t)
    await s.mfa.setup(s.who)
    await t.rejects(run(s, { password: PASSWORD }), { code: 'MFA_NOT_ENABLED', status: 409, message: 'Two-factor authentication is not enabled' })
    t.same(s.charges, [])
    t.ok((await ann(s)).mfaSetup, 'an unconfirmed setup is left alone')
  })

  t.test(`${op}: a missing, empty or non-string password is CURRENT_PASSWORD_INCORRECT, its charge released: nothing counted, no hash`, async (t) => {
    const s = await setup(t, { on: true })
    const runs = hasher.runs
    const bodies = [{}, { password: '' }, { password: 42 }, { password: [PASSWORD] }]
    for (const body of bodies) {
      await t.rejects(run(s, body), { code: 'CURRENT_PASSWORD_INCORRECT', status: 403, message: 'Current password is incorrect' }, JSON.stringify(body))
    }
    t.same(s.charges, bodies.flatMap(() => ['charge ann@example.com', 'release']))
    t.equal(hasher.runs, runs)
    t.same(s.actions, Array(4).fill('wrong_password'))
    t.same((await ann(s)).mfa?.recoveryCodes, OLD.hashes)
  })

  t.test(`${op}: while the login limits are spent, TOO_MANY_LOGINS whatever the body holds`, async (t) => {
    const s = await setup(t, { on: true })
    s.refuse = { ok: false, limit: 'login.per_email', retryAfterS: 1200 }
    for (const body of [{}, { password: '' }, { password: 42 }]) {
      await t.rejects(run(s, body), { code: 'TOO_MANY_LOGINS', status: 429, retryAfterS: 1200 }, JSON.stringify(body))
    }
  })

  t.test(`${op}: spent login limits are TOO_MANY_LOGINS with their Retry-After, the password unchecked and nothing changed`, async (t) => {
    const s = await setup(t, { on: true })
    s.refuse = { ok: false, limit: 'login.per_email', retryAfterS: 1200 }
    const runs = hasher.runs
    await t.rejects(run(s, { password: PASSWORD }), { code: 'TOO_MANY_LOGINS', status: 429, message: 'Too many login attempts', retryAfterS: 1200 })
    t.same(s.charges, ['charge ann@example.com'])
    t.equal(hasher.runs, runs, 'no hash run')
    t.same(s.limited, ['login.per_email'])
    t.same(s.refused, [{ event: 'mfa_change', limit: 'login.per_email', ip: client.ip }], 'logged as the refused change it is (no login was counted)')
    t.same((await ann(s)).mfa?.recoveryCodes, OLD.hashes)
    t.same(await events(s), [])
  })

  t.test(`${op}: a wrong password is CURRENT_PASSWORD_INCORRECT; the charge stands as a failed login and nothing changes`, async (t) => {
    const s = await setup(t, { on: true })
    await t.rejects(run(s, { password: 'not the password' }), { code: 'CURRENT_PASSWORD_INCORRECT' })
    t.same(s.charges, ['charge ann@example.com'], 'neither released nor cleared')
    t.same(s.actions, ['wrong_password'])
    t.same((await ann(s)).mfa, { secret: SECRET, enabledAt: T0 - 1000, lastStep: 5, recoveryCodes: OLD.hashes })
    t.same(await events(s), [])
    t.notOk(JSON.stringify(s.logs).includes('not the password'))
  })

  t.test(`${op}: a check the hash queue turns away (BUSY) un-counts the charge and passes the 503 on`, async (t) => {
    const busy: PasswordHasher = { ...hasher, verify: () => Promise.reject(new AppError('BUSY', { retryAfterS: 1 })) }
    const s = await setup(t, { on: true, hasher: busy })
    await t.rejects(run(s, { password: PASSWORD }), { code: 'BUSY', status: 503 })
    t.same(s.charges, ['charge ann@example.com', 'uncharged'])
    t.same((await ann(s)).mfa?.recoveryCodes, OLD.hashes)
  })
}

t.test('disable: the right password clears the charge; the factor, its recovery codes and any pending setup are gone, with mfa.disable', async (t) => {
  const s = await setup(t, { on: true })
  await s.store.updateUser('u-ann', (u) => ({ ...u, mfaSetup: { secret: newTotpSecret(), createdAt: T0 } }))
  s.clock.now = T0 + 3000
  await s.mfa.disable(s.who, { password: PASSWORD }, client)
  t.same(s.charges, ['charge ann@example.com', 'cleared'])
  const u = await ann(s)
  t.equal(u.mfa, undefined)
  t.equal(u.mfaSetup, undefined)
  t.equal(u.updatedAt, T0 + 3000)
  t.equal(u.passwordHash, HASH, 'the password is as it was')
  t.match(await events(s), [{ event: 'mfa.disable', userId: 'u-ann', sessionId: 's-calling', ip: client.ip, detail: {} }])
  t.equal((await events(s)).length, 1)
  t.same(s.actions, ['disable'])
  await t.rejects(s.mfa.disable(s.who, { password: PASSWORD }, client), { code: 'MFA_NOT_ENABLED' }, 'and off it stays')
})

t.test('disable: a factor already turned off meanwhile (another tab, another instance): 409 as for one off before, no second mfa.disable, and a set-up begun since is kept', async (t) => {
  const s = await setup(t, { on: true })
  const setupSince = { secret: newTotpSecret(), createdAt: T0 }
  s.meanwhile = () => s.store.updateUser('u-ann', ({ mfa: _mfa, ...u }) => ({ ...u, mfaSetup: setupSince }))
  await t.rejects(s.mfa.disable(s.who, { password: PASSWORD }, client), { code: 'MFA_NOT_ENABLED', status: 409 })
  t.equal((await ann(s)).mfa, undefined)
  t.same((await ann(s)).mfaSetup, setupSince, 'not this disable\'s to remove')
  t.same(await events(s), [], 'the write changed nothing')
})

t.test('newRecoveryCodes: the right password clears the charge; ten new codes, the old void, the factor itself kept, with mfa.recovery_codes', async (t) => {
  const s = await setup(t, { on: true })
  s.clock.now = T0 + 4000
  const { recoveryCodes } = await s.mfa.newRecoveryCodes(s.who, { password: PASSWORD }, client)
  t.same(s.charges, ['charge ann@example.com', 'cleared'])
  t.equal(recoveryCodes.length, 10)
  t.ok(recoveryCodes.every((c) => CODES.test(c)))
  t.notOk(recoveryCodes.some((c) => OLD.codes.includes(c)), 'none of the old codes')
  const u = await ann(s)
  t.same(u.mfa, { secret: SECRET, enabledAt: T0 - 1000, lastStep: 5, recoveryCodes: recoveryCodes.map((c) => hashRecoveryCode('u-ann', normalRecoveryCode(c)!)) })
  t.equal(u.updatedAt, T0 + 4000)
  t.match(await events(s), [{ event: 'mfa.recovery_codes', userId: 'u-ann', sessionId: 's-calling', detail: {} }])
  t.same(s.actions, ['recovery_codes'])
})

t.test('newRecoveryCodes: a factor turned off between the check and the write is MFA_NOT_ENABLED, with no codes stored and no event', async (t) => {
  const s = await setup(t, { on: true })
  s.meanwhile = () => s.store.updateUser('u-ann', ({ mfa: _mfa, ...u }) => u)
  await t.rejects(s.mfa.newRecoveryCodes(s.who, { password: PASSWORD }, client), { code: 'MFA_NOT_ENABLED' })
  t.equal((await ann(s)).mfa, undefined, 'not brought back')
  t.same(await events(s), [])
  t.notOk(s.actions.includes('recovery_codes'))
})
