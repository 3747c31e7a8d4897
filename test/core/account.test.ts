/**
 * core/account.ts driven directly (docs/api.md, "The user's own account"): the password change's
 * order of checks and what it does with the login-limit charge at each ending (released, left
 * standing, un-counted, cleared), its write that re-checks the password it proved, and the
 * listing and ending of the user's own sessions. Real LMDB and argon2; the charge is recorded,
 * not counted (the limits themselves are auth-service's and the HTTP tests').
 */
import t, { type Test } from 'tap'
import { createAccount, type AccountDeps, type ChargedCheck, type PasswordChangeOutcome } from '../../src/core/account.js'
import type { Authenticated, ClientContext } from '../../src/core/caller.js'
import { createPasswordHasher, type PasswordHasher } from '../../src/core/passwords.js'
import { createPasswordPolicy } from '../../src/core/password-policy.js'
import { AppError } from '../../src/errors.js'
import type { ConsumeToken } from '../../src/store/rate-limit.js'
import type { SessionRecord, Store, UserRecord } from '../../src/store/store.js'
import { openTestStore, testConfig } from '../helpers/app.js'

const T0 = Date.UTC(2025, 4, 1, 12)
const HOUR = 3_600_000
const DAY = 24 * HOUR
const PASSWORD = 'lantern-orchard-41'
const NEW_PASSWORD = 'copper-meadow-77'
const client: ClientContext = { ip: '203.0.113.9', ipKey: '203.0.113.9', userAgent: 'account-test' }

// one hasher for the file, at the configured (test) cost; the user's hash made once
const config0 = testConfig('/nowhere')
const hasher = await createPasswordHasher({ ...config0.passwords, concurrency: 1, maxQueue: 512 })
const policy = await createPasswordPolicy(config0.passwords)
const HASH = await hasher.hash(PASSWORD)

const session = (id: string, userId: string, fields: Partial<SessionRecord> = {}): SessionRecord => ({
  id,
  userId,
  createdAt: T0 - HOUR,
  lastUsedAt: T0 - HOUR,
  expiresAt: T0 + 29 * DAY,
  ip: '198.51.100.2',
  userAgent: 'curl/8.5.0',
  refreshHash: `h-${id}`,
  previousHash: null,
  rotatedAt: null,
  generation: 0,
  familyHash: `f-${id}`,
  amr: ['pwd'],
  ...fields,
})

interface Setup {
  store: Store
  account: ReturnType<typeof createAccount>
  ann: UserRecord
  who: Authenticated
  /** the charge's life: 'charge <email>', 'release', 'uncharged', 'cleared' */
  charges: string[]
  outcomes: PasswordChangeOutcome[]
  limited: string[]
  refused: object[]
  logs: object[]
  clock: { now: number }
  /** a refusal chargeLogin answers with instead of a charge */
  refuse?: { ok: false; limit: string; retryAfterS: number }
}

async function setup(t: Test, opts: { hasher?: PasswordHasher } = {}): Promise<Setup> {
  const dir = t.testdir()
  const store = await openTestStore(t, dir)
  const ann: UserRecord = { id: 'u-ann', email: 'ann@example.com', passwordHash: HASH, createdAt: T0 - DAY, updatedAt: T0 - DAY, disabled: false }
  await store.createUser(ann)
  await store.createSession(session('s-calling', ann.id))
  await store.createSession(session('s-other', ann.id))
  const s: Setup = {
    store,
    ann,
    who: { user: { id: ann.id, email: ann.email, mfaEnabled: false }, sessionId: 's-calling' },
    charges: [],
    outcomes: [],
    limited: [],
    refused: [],
    logs: [],
    clock: { now: T0 },
  } as unknown as Setup
  const token = { kind: 'rate-limit-token' } as ConsumeToken
  const deps: AccountDeps = {
    config: testConfig(dir),
    store,
    hasher: opts.hasher ?? hasher,
    policy,
    now: () => s.clock.now,
    log: { info: (o) => s.logs.push(o), warn: (o) => s.logs.push(o) },
    events: { passwordChange: (o) => s.outcomes.push(o), rateLimited: (l) => s.limited.push(l) },
    refusals: { refused: (f) => s.refused.push(f) },
    chargeLogin: async (email) => {
      s.charges.push(`charge ${email}`)
      return s.refuse ?? { ok: true, token }
    },
    release: async (c: ChargedCheck) => {
      t.equal(c.token, token, 'the charge made is the one released')
      s.charges.push('release')
    },
    uncharged: async (_c, err) => {
      s.charges.push('uncharged')
      throw err
    },
    chargeCleared: async () => {
      s.charges.push('cleared')
    },
  }
  s.account = createAccount(deps)
  return s
}

const ids = (sessions: SessionRecord[]): string[] => sessions.map((x) => x.id).sort()

const MALFORMED = [{}, { currentPassword: PASSWORD }, { newPassword: NEW_PASSWORD }, { currentPassword: PASSWORD, newPassword: '   ' }, { currentPassword: ' \t', newPassword: NEW_PASSWORD }, { currentPassword: 1, newPassword: NEW_PASSWORD }, { currentPassword: PASSWORD, newPassword: ['x'] }]

t.test('changePassword: a missing, non-string or blank password is PASSWORDS_REQUIRED, its charge released: nothing counted, no hash', async (t) => {
  const s = await setup(t)
  const runs = hasher.runs
  for (const body of MALFORMED) {
    await t.rejects(s.account.changePassword(s.who, body, client), { code: 'PASSWORDS_REQUIRED', status: 400, message: 'Current and new password are required' }, JSON.stringify(body))
  }
  t.same(s.charges, MALFORMED.flatMap(() => ['charge ann@example.com', 'release']), 'each charge released: nothing counted to the login limits')
  t.equal(hasher.runs, runs, 'no hash run')
  t.same(s.outcomes, MALFORMED.map(() => 'invalid_input'))
})

t.test('changePassword: while the login limits are spent, TOO_MANY_LOGINS whatever the body holds (nothing checked)', async (t) => {
  const s = await setup(t)
  s.refuse = { ok: false, limit: 'login.per_ip_email', retryAfterS: 517 }
  for (const body of MALFORMED) {
    await t.rejects(s.account.changePassword(s.who, body, client), { code: 'TOO_MANY_LOGINS', status: 429, retryAfterS: 517 }, JSON.stringify(body))
  }
})

t.test('changePassword: a user deleted or disabled since the token was checked is INVALID_ACCESS_TOKEN, nothing charged', async (t) => {
  const s = await setup(t)
  await s.store.updateUser(s.ann.id, (u) => ({ ...u, disabled: true }))
  await t.rejects(s.account.changePassword(s.who, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, client), { code: 'INVALID_ACCESS_TOKEN', status: 401 })
  await s.store.deleteUser(s.ann.id)
  await t.rejects(s.account.changePassword(s.who, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, client), { code: 'INVALID_ACCESS_TOKEN' })
  t.same(s.charges, [])
})

t.test('changePassword: spent login limits answer TOO_MANY_LOGINS with their Retry-After; no hash runs and the refusal is logged', async (t) => {
  const s = await setup(t)
  s.refuse = { ok: false, limit: 'login.per_ip_email', retryAfterS: 517 }
  const runs = hasher.runs
  const err = await s.account.changePassword(s.who, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, client).catch((e: unknown) => e)
  t.match(err, { code: 'TOO_MANY_LOGINS', status: 429, message: 'Too many login attempts', retryAfterS: 517 })
  t.same(s.charges, ['charge ann@example.com'], "charged as a login of the user's stored email")
  t.equal(hasher.runs, runs, 'the current password was not checked')
  t.same(s.outcomes, ['rate_limited'])
  t.same(s.limited, ['login.per_ip_email'])
  t.same(s.refused, [{ event: 'password_change', limit: 'login.per_ip_email', ip: client.ip }])
  t.equal((await s.store.getUser(s.ann.id))!.passwordHash, HASH)
})

t.test("changePassword: a new password the rules refuse gets the rule's error; the charge is released and the current password never checked", async (t) => {
  const s = await setup(t)
  const runs = hasher.runs
  const cases: Array<[string, { code: string; message: string; status?: number }]> = [
    ['short', { code: 'PASSWORD_TOO_SHORT', status: 400, message: 'Password must be at least 8 characters' }],
    ['x'.repeat(257), { code: 'PASSWORD_TOO_LONG', message: 'Password must be at most 256 characters' }],
    ['password123', { code: 'PASSWORD_TOO_COMMON', message: 'Password is too common' }],
  ]
  for (const [newPassword, expected] of cases) {
    // a wrong current password too: it is not reached, so it is no failed login
    await t.rejects(s.account.changePassword(s.who, { currentPassword: 'not the password', newPassword }, client), expected)
  }
  t.same(s.charges, ['charge ann@example.com', 'release', 'charge ann@example.com', 'release', 'charge ann@example.com', 'release'])
  t.equal(hasher.runs, runs, 'no hash run')
  t.same(s.outcomes, ['invalid_input', 'invalid_input', 'invalid_input'])
})

t.test('changePassword: a wrong current password is CURRENT_PASSWORD_INCORRECT; the charge stands as a failure and nothing changes', async (t) => {
  const s = await setup(t)
  await t.rejects(s.account.changePassword(s.who, { currentPassword: 'not the password', newPassword: NEW_PASSWORD }, client), {
    code: 'CURRENT_PASSWORD_INCORRECT',
    status: 403,
    message: 'Current password is incorrect',
  })
  t.same(s.charges, ['charge ann@example.com'], 'neither released nor cleared')
  t.same(s.outcomes, ['incorrect'])
  t.equal((await s.store.getUser(s.ann.id))!.passwordHash, HASH)
  t.same(ids(await s.store.listSessions(s.ann.id)), ['s-calling', 's-other'])
  t.same(await s.store.auditEvents({ limit: 10 }), [], 'no event')
  t.match(s.logs, [{ event: 'password_change', outcome: 'incorrect', userId: s.ann.id, sessionId: 's-calling', ip: client.ip }])
  t.notOk(JSON.stringify(s.logs).includes('not the password'), 'the password tried is not logged')
})

t.test('changePassword: a check the hash queue turns away (BUSY) un-counts the charge and passes the 503 on', async (t) => {
  const busy: PasswordHasher = { ...hasher, verify: () => Promise.reject(new AppError('BUSY', { retryAfterS: 1 })), hash: (p) => hasher.hash(p) }
  const s = await setup(t, { hasher: busy })
  await t.rejects(s.account.changePassword(s.who, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, client), { code: 'BUSY', status: 503, retryAfterS: 1 })
  t.same(s.charges, ['charge ann@example.com', 'uncharged'])
  t.same(s.outcomes, [], 'no outcome: nothing was decided')
  t.equal((await s.store.getUser(s.ann.id))!.passwordHash, HASH)
})

t.test('changePassword: the right current password clears the charge, stores the new hash and ends every other session in one write with its event', async (t) => {
  const s = await setup(t)
  await s.store.createSession(session('s-third', s.ann.id))
  await s.store.createUser({ ...s.ann, id: 'u-bob', email: 'bob@example.com' })
  await s.store.createSession(session('s-bob', 'u-bob'))
  s.clock.now = T0 + 5_000
  await s.account.changePassword(s.who, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, client)
  t.same(s.charges, ['charge ann@example.com', 'cleared'])
  t.same(s.outcomes, ['success'])
  const stored = (await s.store.getUser(s.ann.id))!
  t.not(stored.passwordHash, HASH)
  t.equal(stored.updatedAt, T0 + 5_000)
  t.ok(await hasher.verify(stored.passwordHash, NEW_PASSWORD), 'the new password verifies')
  t.notOk(await hasher.verify(stored.passwordHash, PASSWORD), 'the old one no longer does')
  t.same(ids(await s.store.listSessions(s.ann.id)), ['s-calling'], 'the calling session goes on, the others ended')
  t.same(ids(await s.store.listSessions('u-bob')), ['s-bob'], "another user's sessions are untouched")
  const events = await s.store.auditEvents({ limit: 10 })
  t.match(events, [{ event: 'password.change', actor: 'api', userId: s.ann.id, email: 'ann@example.com', sessionId: 's-calling', ip: client.ip, userAgent: client.userAgent, detail: {}, time: new Date(T0 + 5_000).toISOString() }])
  t.equal(events.length, 1)
  t.match(s.logs, [{ event: 'password_change', outcome: 'success', userId: s.ann.id, sessionsEnded: 2 }])
  t.notOk(JSON.stringify(s.logs).includes(NEW_PASSWORD) || JSON.stringify(s.logs).includes(PASSWORD), 'no password in the log')
})

t.test('changePassword: a password changed or the user disabled between the check and the write is CURRENT_PASSWORD_INCORRECT, and nothing is written', async (t) => {
  for (const meanwhile of ['an admin set another password', 'an admin disabled the user'] as const) {
    await t.test(meanwhile, async (t) => {
      let s: Setup
      // the new hash is computed after the check: the store changes while it runs
      const racing: PasswordHasher = {
        ...hasher,
        verify: (h, p) => hasher.verify(h, p),
        hash: async (p) => {
          await s.store.updateUser(s.ann.id, (u) => (meanwhile === 'an admin disabled the user' ? { ...u, disabled: true } : { ...u, passwordHash: 'by-the-admin' }))
          return hasher.hash(p)
        },
      }
      s = await setup(t, { hasher: racing })
      await t.rejects(s.account.changePassword(s.who, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, client), { code: 'CURRENT_PASSWORD_INCORRECT' })
      t.same(s.outcomes, ['incorrect'])
      const stored = (await s.store.getUser(s.ann.id))!
      t.equal(stored.passwordHash, meanwhile === 'an admin disabled the user' ? HASH : 'by-the-admin', "the request's hash was not stored")
      t.same(ids(await s.store.listSessions(s.ann.id)), ['s-calling', 's-other'], 'no session ended')
      t.same(await s.store.auditEvents({ limit: 10, event: 'password.change' }), [], 'no event')
    })
  }
})

t.test('changePassword: a user deleted between the check and the write is INVALID_ACCESS_TOKEN', async (t) => {
  let s: Setup
  const racing: PasswordHasher = {
    ...hasher,
    verify: (h, p) => hasher.verify(h, p),
    hash: async (p) => {
      await s.store.deleteUser(s.ann.id)
      return hasher.hash(p)
    },
  }
  s = await setup(t, { hasher: racing })
  await t.rejects(s.account.changePassword(s.who, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, client), { code: 'INVALID_ACCESS_TOKEN' })
  t.notOk(s.outcomes.includes('success'))
  t.equal(await s.store.getUser(s.ann.id), undefined, 'not brought back')
})

t.test('sessions: the live ones of this user only, newest first, ISO times, expiresAt the earlier of idle and absolute expiry, the caller marked', async (t) => {
  const s = await setup(t)
  // setup's two: created T0 - 1h, idle expiry T0 + 7d - 1h before the absolute T0 + 29d
  await s.store.createSession(session('s-near-end', s.ann.id, { createdAt: T0 - 20 * DAY, lastUsedAt: T0 - 1000, expiresAt: T0 + HOUR }))
  await s.store.createSession(session('s-idle-ended', s.ann.id, { createdAt: T0 - 10 * DAY, lastUsedAt: T0 - 7 * DAY }))
  await s.store.createSession(session('s-absolute-ended', s.ann.id, { createdAt: T0 - 30 * DAY, lastUsedAt: T0 - 1000, expiresAt: T0 }))
  await s.store.createSession(session('s-newest', s.ann.id, { createdAt: T0 - 60_000, lastUsedAt: T0 - 1000, ip: '2001:db8::7', userAgent: 'Firefox' }))
  await s.store.createUser({ ...s.ann, id: 'u-bob', email: 'bob@example.com' })
  await s.store.createSession(session('s-bob', 'u-bob', { createdAt: T0 }))
  const list = await s.account.sessions(s.who)
  t.same(
    list.map((x) => x.id),
    ['s-newest', 's-calling', 's-other', 's-near-end'],
    'newest createdAt first; neither ended one (idle, absolute at exactly now) nor bob’s',
  )
  t.same(list[0], {
    id: 's-newest',
    createdAt: new Date(T0 - 60_000).toISOString(),
    lastUsedAt: new Date(T0 - 1000).toISOString(),
    expiresAt: new Date(T0 - 1000 + 7 * DAY).toISOString(),
    ip: '2001:db8::7',
    userAgent: 'Firefox',
    current: false,
  })
  t.equal(list[3]!.expiresAt, new Date(T0 + HOUR).toISOString(), 'the absolute expiry when it comes first')
  t.same(list.map((x) => x.current), [false, true, false, false])
  t.notOk(JSON.stringify(list).includes('h-'), 'no token hash')
})

t.test('sessions: read past the first page of the index, where ended sessions wait for the sweep', async (t) => {
  const s = await setup(t)
  // 300 ended sessions whose ids sort before the live ones: the live ones are on the second page
  await Promise.all(Array.from({ length: 300 }, (_, i) => s.store.createSession(session(`s-a${String(i).padStart(3, '0')}`, s.ann.id, { expiresAt: T0 - 1 }))))
  await s.store.createSession(session('s-z-live', s.ann.id, { createdAt: T0 - 2 * HOUR }))
  t.same((await s.account.sessions(s.who)).map((x) => x.id), ['s-calling', 's-other', 's-z-live'])
})

t.test('revokeSession: another user’s, an ended, an unknown and an empty id are all SESSION_NOT_FOUND, and each session goes on', async (t) => {
  const s = await setup(t)
  await s.store.createUser({ ...s.ann, id: 'u-bob', email: 'bob@example.com' })
  await s.store.createSession(session('s-bob', 'u-bob'))
  await s.store.createSession(session('s-ended', s.ann.id, { lastUsedAt: T0 - 7 * DAY }))
  for (const id of ['s-bob', 's-ended', 'no-such-session', '']) {
    await t.rejects(s.account.revokeSession(s.who, id, client), { code: 'SESSION_NOT_FOUND', status: 404, message: 'Session not found' }, JSON.stringify(id))
  }
  t.ok(await s.store.getSession('s-bob'), "bob's session goes on")
  t.ok(await s.store.getSession('s-ended'), 'the ended one is left to the sweep')
  t.same(await s.store.auditEvents({ limit: 10 }), [], 'no event')
})

t.test('revokeSession: from a session that a password change ended after its token was checked: 401, and the session it named goes on', async (t) => {
  const s = await setup(t)
  // the password change (from s-other) committed between the calling session's check and this write
  await s.store.revokeSession('s-calling')
  await t.rejects(s.account.revokeSession(s.who, 's-other', client), { code: 'INVALID_ACCESS_TOKEN', status: 401 })
  t.ok(await s.store.getSession('s-other'), 'the session that changed the password stays')
  t.same(await s.store.auditEvents({ limit: 10 }), [], 'no event')
})

t.test('revokeSession: ends an own live session, then the calling one itself, each with its session.revoke event', async (t) => {
  const s = await setup(t)
  await s.account.revokeSession(s.who, 's-other', client)
  t.equal(await s.store.getSession('s-other'), undefined)
  t.ok(await s.store.getSession('s-calling'))
  await t.rejects(s.account.revokeSession(s.who, 's-other', client), { code: 'SESSION_NOT_FOUND' }, 'once')
  await s.account.revokeSession(s.who, 's-calling', client)
  t.same(await s.store.listSessions(s.ann.id), [])
  const events = (await s.store.auditEvents({ limit: 10 })).reverse()
  t.match(events, [
    { event: 'session.revoke', userId: s.ann.id, email: 'ann@example.com', sessionId: 's-other', ip: client.ip, detail: { current: false } },
    { event: 'session.revoke', userId: s.ann.id, sessionId: 's-calling', detail: { current: true } },
  ])
  t.equal(events.length, 2)
  t.match(s.logs, [{ event: 'session_revoke', sessionId: 's-other', current: false }, { event: 'session_revoke', sessionId: 's-calling', current: true }])
})
