/**
 * The use-cases of core/auth-service.ts driven directly, no HTTP: login, register, /me and
 * authenticate, refresh, logout and clearing login limits, on a real LMDB store with real argon2
 * (the services the daemon builds, test/helpers/app.ts buildApp). Each answers with data or throws
 * the AppError whose code the HTTP layer turns into a status (README, error table); what each
 * leaves behind (sessions, users, audit events, metrics) is read back from the store and registry.
 */
import t from 'tap'
import type { ClientContext } from '../../src/core/auth-service.js'
import { hashToken } from '../../src/core/sessions.js'
import { AppError } from '../../src/errors.js'
import { addUser, buildApp, type TestApp } from '../helpers/app.js'
import { signIn } from '../helpers/sign-in.js'

const PASSWORD = 'lantern-orchard-41'
const client: ClientContext = { ip: '203.0.113.9', ipKey: '203.0.113.9', userAgent: 'auth-service-test' }
const ROOMY = {
  AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1000/1m',
  AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '1000/1m',
  AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '1000/1m',
  AUTHD_RATE_LIMIT_LOGIN_PER_DEVICE: '1000/1m',
}

/** the value of one series of a counter in the app's registry (0 when it was never counted) */
async function counted(app: TestApp, name: string, label: string, value: string): Promise<number> {
  const text = await app.metrics.registry.metrics()
  const m = new RegExp(`^${name}\\{${label}="${value}"\\} (\\d+)$`, 'm').exec(text)
  return m === null ? 0 : Number(m[1])
}

const bearer = (token: string): string => `Bearer ${token}`

t.test('login: signs in with the user, a signed access token, a refresh token, a stored session and a device cookie', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  const r = await signIn(app, { email: '  Ann@Example.com ', password: PASSWORD }, client)
  t.same(r.user, { id: ann.id, email: 'ann@example.com' }, 'the email canonicalised to the stored one')
  t.equal(r.expiresIn, 900)
  t.match(r.refreshToken, /^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/)
  t.type(r.deviceCookie, 'string')
  const session = await app.store.getSession(r.sessionId)
  t.match(session, { userId: ann.id, ip: client.ip, userAgent: client.userAgent })
  t.equal(session!.refreshHash, hashToken(r.refreshToken), 'the store keeps the token hashed')
  t.same(await app.auth.authenticate(bearer(r.accessToken)), { user: { id: ann.id, email: 'ann@example.com', mfaEnabled: false }, sessionId: r.sessionId })
  t.equal(await counted(app, 'authd_login_total', 'outcome', 'success'), 1)
})

t.test('login: a user read that fails gives back the attempt counted alongside it', async (t) => {
  const app = await buildApp(t, { env: { ...ROOMY, AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '1/15m' } })
  await addUser(app, 'ann@example.com', PASSWORD)
  const read = app.store.getUserByEmail
  app.store.getUserByEmail = async () => {
    throw new AppError('STORE_UNAVAILABLE', { message: 'the database is unavailable' })
  }
  await t.rejects(app.auth.login({ email: 'ann@example.com', password: 'not the password' }, client), { code: 'STORE_UNAVAILABLE' })
  app.store.getUserByEmail = read
  // with a limit of one failure, the charge of the failed read kept would make this a 429
  await t.rejects(app.auth.login({ email: 'ann@example.com', password: 'not the password' }, client), { code: 'INVALID_CREDENTIALS' })
  await t.rejects(app.auth.login({ email: 'ann@example.com', password: 'not the password' }, client), { code: 'TOO_MANY_LOGINS' }, 'the failure that was checked counts')
})

t.test('login: a refusal is answered as a refusal when the user read fails beside it, its block recorded', async (t) => {
  const app = await buildApp(t, { env: { ...ROOMY, AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '1/15m' } })
  await addUser(app, 'ann@example.com', PASSWORD)
  await t.rejects(app.auth.login({ email: 'ann@example.com', password: 'not the password' }, client), { code: 'INVALID_CREDENTIALS' })
  const read = app.store.getUserByEmail
  app.store.getUserByEmail = async () => {
    throw new AppError('STORE_UNAVAILABLE', { message: 'the database is unavailable' })
  }
  await t.rejects(app.auth.login({ email: 'ann@example.com', password: 'not the password' }, client), { code: 'TOO_MANY_LOGINS' })
  app.store.getUserByEmail = read
  const blocks = await app.store.auditEvents({ limit: 10, event: 'rate_limit.block' })
  t.same(blocks.map((e) => e.detail.limit), ['login.per_ip_email'], 'the first refusal of the window is recorded')
})

t.test('login: a right password signs in even when its failures cannot be cleared, and says so at warn', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  const release = app.limiter.release
  app.limiter.release = async (token, reset) => {
    if (reset !== undefined) throw new AppError('STORE_UNAVAILABLE', { message: 'the database is unavailable' })
    return release.call(app.limiter, token, reset)
  }
  const r = await signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)
  app.limiter.release = release
  t.equal(r.user.id, ann.id)
  t.ok(await app.store.getSession(r.sessionId), 'the session is written')
  t.match(app.logs.lines.find((l) => l.event === 'login_limits_kept'), { level: 'warn', userId: ann.id })
})

t.test('login: a wrong password, an unknown email and a disabled user all throw INVALID_CREDENTIALS and start no session', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  await addUser(app, 'off@example.com', PASSWORD, { disabled: true })
  await t.rejects(app.auth.login({ email: 'ann@example.com', password: 'not the password' }, client), { code: 'INVALID_CREDENTIALS', message: 'Invalid email or password' })
  await t.rejects(app.auth.login({ email: 'nobody@example.com', password: PASSWORD }, client), { code: 'INVALID_CREDENTIALS' })
  await t.rejects(app.auth.login({ email: 'off@example.com', password: PASSWORD }, client), { code: 'INVALID_CREDENTIALS' })
  t.same(await app.store.listSessions(ann.id), [], 'no session')
  t.equal(await counted(app, 'authd_login_total', 'outcome', 'invalid_credentials'), 3, 'one outcome for the three (metrics.ts loginMetric)')
  const failures = await app.store.auditEvents({ limit: 100, event: 'login.failure' })
  t.same(failures.map((e) => e.detail.reason).sort(), ['bad_password', 'disabled', 'unknown_user'], 'the audit log keeps the reason')
})

t.test('login: missing or blank fields throw before anything is hashed', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  for (const body of [{}, { email: 'ann@example.com' }, { password: PASSWORD }, { email: ' ', password: PASSWORD }, { email: 'ann@example.com', password: '  ' }, { email: 1, password: PASSWORD }]) {
    await t.rejects(app.auth.login(body, client), { code: 'CREDENTIALS_REQUIRED' }, JSON.stringify(body))
  }
  t.equal(await counted(app, 'authd_login_total', 'outcome', 'invalid_input'), 6)
})

t.test('login: refused by login.per_ip with TOO_MANY_LOGINS and its Retry-After, counted before the body is read', async (t) => {
  const app = await buildApp(t, { env: { ...ROOMY, AUTHD_RATE_LIMIT_LOGIN_PER_IP: '2/1m' } })
  await addUser(app, 'ann@example.com', PASSWORD)
  await signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)
  await t.rejects(app.auth.login({}, client), { code: 'CREDENTIALS_REQUIRED' }, 'a malformed request counts too')
  const refused = await app.auth.login({ email: 'ann@example.com', password: PASSWORD }, client).catch((err: unknown) => err)
  t.match(refused, { code: 'TOO_MANY_LOGINS', status: 429 })
  t.ok((refused as { retryAfterS: number }).retryAfterS > 0 && (refused as { retryAfterS: number }).retryAfterS <= 60, 'within the window')
  t.same(app.auth.admitLogin({ ...client, ip: '198.51.100.4', ipKey: '198.51.100.4' }), undefined, 'another address is admitted')
  t.match(app.auth.admitLogin(client), { retryAfterS: Number }, 'and the first one, asked about again after it, is still refused')
  t.same(app.auth.admitLogin({ ...client, ip: '198.51.100.5', ipKey: '198.51.100.5' }), undefined, 'as a third is admitted after that')
  await signIn(app, { email: 'ann@example.com', password: PASSWORD }, { ...client, ip: '198.51.100.4', ipKey: '198.51.100.4' })
})

t.test('login: clearLoginLimits forgets an email’s limits and an address’s', async (t) => {
  const app = await buildApp(t, { env: { ...ROOMY, AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '1/1h', AUTHD_RATE_LIMIT_LOGIN_PER_IP: '2/1h' } })
  await addUser(app, 'ann@example.com', PASSWORD)
  await t.rejects(app.auth.login({ email: 'ann@example.com', password: 'wrong one here' }, client), { code: 'INVALID_CREDENTIALS' })
  await t.rejects(app.auth.login({ email: 'ann@example.com', password: PASSWORD }, client), { code: 'TOO_MANY_LOGINS' }, 'per_email spent')
  t.ok((await app.auth.clearLoginLimits({ email: 'ann@example.com' })) > 0, 'keys of the email went')
  await t.rejects(app.auth.login({ email: 'ann@example.com', password: PASSWORD }, client), { code: 'TOO_MANY_LOGINS' }, 'per_ip is spent now')
  t.ok((await app.auth.clearLoginLimits({ ipKey: client.ipKey })) > 0, 'keys of the address went')
  await signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)
  t.equal(await app.auth.clearLoginLimits({ email: 'nobody@example.com' }), 0, 'nothing to forget')
})

t.test('login: clearing an address forgets its failures per email too (login.per_ip_email), clearing an email forgets them from every address', async (t) => {
  const app = await buildApp(t, { env: { ...ROOMY, AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '2/1h' } })
  await addUser(app, 'ann@example.com', PASSWORD)
  const other = { ...client, ip: '198.51.100.9', ipKey: '198.51.100.9' }
  for (const c of [client, other]) {
    for (let i = 0; i < 2; i++) await t.rejects(app.auth.login({ email: 'ann@example.com', password: 'wrong one here' }, c), { code: 'INVALID_CREDENTIALS' })
    await t.rejects(app.auth.login({ email: 'ann@example.com', password: PASSWORD }, c), { code: 'TOO_MANY_LOGINS' }, `per_ip_email spent from ${c.ip}`)
  }
  // per_ip (50) and per_email (20) have room: only per_ip_email refuses
  t.equal(await app.auth.clearLoginLimits({ ipKey: client.ipKey }), 2, "the address's keys: its per_ip and its per_ip_email with ann")
  await signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)
  await t.rejects(app.auth.login({ email: 'ann@example.com', password: PASSWORD }, other), { code: 'TOO_MANY_LOGINS' }, 'the other address is still refused')
  t.equal(await app.auth.clearLoginLimits({ email: 'ann@example.com' }), 2, "the email's keys: its per_email and the other address's per_ip_email")
  await signIn(app, { email: 'ann@example.com', password: PASSWORD }, other)
})

t.test('login: a user with a second factor gets an mfaToken and no session; loginMfa refuses bad fields and tokens', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  const ann = await addUser(app, 'ann@example.com', PASSWORD, { mfa: { secret: 'JBSWY3DPEHPK3PXP', lastStep: 0, recoveryCodes: [], enabledAt: Date.now() } })
  const r = await app.auth.login({ email: 'ann@example.com', password: PASSWORD }, client)
  t.match(r, { mfaRequired: true, mfaToken: String, expiresIn: Number, user: { id: ann.id, email: 'ann@example.com' } })
  t.same(await app.store.listSessions(ann.id), [], 'no session before the second step')
  await t.rejects(app.auth.loginMfa({ mfaToken: 'x' }, client), { code: 'MFA_FIELDS_REQUIRED' })
  await t.rejects(app.auth.loginMfa({ mfaToken: 'x', code: '123456', recoveryCode: 'abc' }, client), { code: 'MFA_FIELDS_REQUIRED' }, 'not both codes')
  await t.rejects(app.auth.loginMfa({ mfaToken: 'not-a-token', code: '123456' }, client), { code: 'INVALID_MFA_TOKEN' })
  const token = (r as { mfaToken: string }).mfaToken
  await t.rejects(app.auth.loginMfa({ mfaToken: token, code: '000000' }, client), { code: 'INVALID_MFA_CODE' })
})

t.test('register: creates the user and signs in; refuses a taken email, a bad email, a weak password, and when closed', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  const r = await app.auth.register({ email: 'New@Example.com', password: PASSWORD, admin: true }, client)
  const user = await app.store.getUserByEmail('new@example.com')
  t.same(r.user, { id: user!.id, email: 'new@example.com' })
  t.same(Object.keys(user!).sort(), ['createdAt', 'disabled', 'email', 'id', 'passwordHash', 'updatedAt'], 'nothing else from the body reaches the record')
  t.match(await app.store.getSession(r.sessionId), { userId: user!.id })
  t.same((await app.store.auditEvents({ limit: 100, event: 'register' })).map((e) => [e.userId, e.sessionId]), [[user!.id, r.sessionId]], 'its event names the session')
  await t.rejects(app.auth.register({ email: 'new@example.com', password: PASSWORD }, client), { code: 'EMAIL_TAKEN' })
  await t.rejects(app.auth.register({ email: 'not an email', password: PASSWORD }, client), { code: 'INVALID_EMAIL' })
  await t.rejects(app.auth.register({ email: 'x'.repeat(2000) + '@example.com', password: PASSWORD }, client), { code: 'INVALID_EMAIL' }, 'too long to canonicalise')
  await t.rejects(app.auth.register({ email: 'weak@example.com', password: 'short' }, client), { code: 'PASSWORD_TOO_SHORT' })
  await t.rejects(app.auth.register({ email: 'weak@example.com' }, client), { code: 'CREDENTIALS_REQUIRED' })
  t.equal(await counted(app, 'authd_register_total', 'outcome', 'success'), 1)
  t.equal(await counted(app, 'authd_register_total', 'outcome', 'conflict'), 1)
  t.equal(await counted(app, 'authd_register_total', 'outcome', 'invalid'), 4)

  const closed = await buildApp(t, { env: { AUTHD_REGISTRATION_ENABLED: 'false' } })
  await t.rejects(closed.auth.register({ email: 'new@example.com', password: PASSWORD }, client), { code: 'REGISTRATION_DISABLED' })
})

t.test('register: refused by register.per_ip once spent, a malformed request counting nothing', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_REGISTER_PER_IP: '1/1h' } })
  await t.rejects(app.auth.register({}, client), { code: 'CREDENTIALS_REQUIRED' })
  await app.auth.register({ email: 'one@example.com', password: PASSWORD }, client)
  await t.rejects(app.auth.register({ email: 'two@example.com', password: PASSWORD }, client), { code: 'TOO_MANY_REGISTRATIONS', retryAfterS: Number })
  t.equal(await app.store.getUserByEmail('two@example.com'), undefined)
})

t.test('me and authenticate: UNAUTHORIZED without a bearer token, INVALID_ACCESS_TOKEN for a bad or ended one', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  const r = await signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)
  const answer = await app.auth.me(bearer(r.accessToken))
  t.match(answer, { user: { id: ann.id, email: 'ann@example.com', mfaEnabled: false } })
  for (const header of [undefined, '', 'Basic abc', 'Bearer', r.accessToken]) {
    await t.rejects(app.auth.me(header), { code: 'UNAUTHORIZED' }, String(header).slice(0, 12))
    await t.rejects(app.auth.authenticate(header), { code: 'UNAUTHORIZED' })
  }
  await t.rejects(app.auth.me('Bearer x.y.z'), { code: 'INVALID_ACCESS_TOKEN' })
  await app.auth.logout(r.refreshToken, {}, client)
  await t.rejects(app.auth.me(bearer(r.accessToken)), { code: 'INVALID_ACCESS_TOKEN' }, 'its session ended')
  await t.rejects(app.auth.authenticate(bearer(r.accessToken)), { code: 'INVALID_ACCESS_TOKEN' })
  t.equal(await counted(app, 'authd_me_total', 'outcome', 'missing'), 5, 'authenticate counts in no metric')
  t.equal(await counted(app, 'authd_me_total', 'outcome', 'invalid'), 2)
})

t.test('refresh: rotates the token; the used one presented again ends the session', async (t) => {
  const app = await buildApp(t, { env: { ...ROOMY, AUTHD_SESSIONS_REUSE_GRACE: '0s' } })
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  const first = await signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)
  const second = await app.auth.refresh(first.refreshToken, client)
  t.equal(second.sessionId, first.sessionId, 'the same session')
  t.not(second.refreshToken, first.refreshToken, 'a new token')
  t.same(second.user, { id: ann.id, email: 'ann@example.com' })
  await app.auth.me(bearer(second.accessToken))
  await t.rejects(app.auth.refresh(first.refreshToken, client), { code: 'INVALID_REFRESH_TOKEN' }, 'the used token')
  t.equal(await app.store.getSession(first.sessionId), undefined, 'reuse ended the session')
  await t.rejects(app.auth.refresh(second.refreshToken, client), { code: 'INVALID_REFRESH_TOKEN' }, 'and its live token with it')
  t.same((await app.store.auditEvents({ limit: 100, event: 'refresh.reuse' })).map((e) => e.sessionId), [first.sessionId])
  t.equal(await counted(app, 'authd_refresh_total', 'outcome', 'reuse'), 1)
})

t.test('refresh: REFRESH_REQUIRED without a token, INVALID_REFRESH_TOKEN for a malformed one or a disabled user, TOO_MANY_REQUESTS past refresh.per_ip', async (t) => {
  const app = await buildApp(t, { env: { ...ROOMY, AUTHD_RATE_LIMIT_REFRESH_PER_IP: '2/1m' } })
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  await t.rejects(app.auth.refresh(undefined, client), { code: 'REFRESH_REQUIRED' })
  await t.rejects(app.auth.refresh('', client), { code: 'REFRESH_REQUIRED' })
  await t.rejects(app.auth.refresh('not-a-token', client), { code: 'INVALID_REFRESH_TOKEN' }, 'refused before it is counted')
  const r = await signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)
  await app.store.updateUser(ann.id, (u) => ({ ...u, disabled: true }))
  await t.rejects(app.auth.refresh(r.refreshToken, client), { code: 'INVALID_REFRESH_TOKEN' }, 'a disabled user')
  await t.rejects(app.auth.refresh(`${'A'.repeat(22)}.${'b'.repeat(43)}`, client), { code: 'INVALID_REFRESH_TOKEN' }, 'no such session')
  await t.rejects(app.auth.refresh(r.refreshToken, client), { code: 'TOO_MANY_REQUESTS', retryAfterS: Number }, 'the third counted one')
})

t.test('logout: ends the session of any of its tokens; all: true ends every session only for the live token', async (t) => {
  const app = await buildApp(t, { env: { ...ROOMY, AUTHD_SESSIONS_REUSE_GRACE: '0s' } })
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  const login = () => signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)
  const a = await login()
  const b = await login()
  const c = await login()
  await app.auth.logout(undefined, {}, client)
  await app.auth.logout('junk', { all: true }, client)
  t.equal((await app.store.listSessions(ann.id)).length, 3, 'no token, or a malformed one: nothing ends')

  const aNext = await app.auth.refresh(a.refreshToken, client)
  await app.auth.logout(a.refreshToken, { all: true }, client)
  t.same((await app.store.listSessions(ann.id)).map((s) => s.id).sort(), [b.sessionId, c.sessionId].sort(), 'a used token ends its own session only')
  await t.rejects(app.auth.refresh(aNext.refreshToken, client), { code: 'INVALID_REFRESH_TOKEN' }, 'its live token with it')

  await app.auth.logout(b.refreshToken, { all: true }, client)
  t.same(await app.store.listSessions(ann.id), [], 'the live token with all: true ends every session')
  t.same((await app.store.auditEvents({ limit: 100, event: 'logout' })).map((e) => e.detail), [{ all: true }, {}], 'newest first')
})

t.test('rate_limit.block: once per key and window across 10 050 blocked addresses, each refused again and again', async (t) => {
  // more keys than a side record of the blocks kept (10 000): the limiter marks each key's own entry
  const app = await buildApp(t, { env: { ...ROOMY, AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1/15m' } })
  const clients = Array.from({ length: 10_050 }, (_, i): ClientContext => {
    const ip = `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`
    return { ip, ipKey: ip, userAgent: 'flood' }
  })
  t.equal(clients.filter((c) => app.auth.admitLogin(c) === undefined).length, clients.length, 'each address counted once')
  // each address refused three times over, in turns: the refusals are answered at once, the
  // block's append a promise (awaited together: one commit for many)
  for (let round = 0; round < 3; round++) {
    const pending: Array<unknown> = []
    let refused = 0
    for (const c of clients) {
      const r = app.auth.admitLogin(c)
      if (r instanceof Promise) pending.push(r)
      else if (r !== undefined) refused++
    }
    const answered = await Promise.all(pending)
    t.equal(refused + answered.filter((a) => a !== undefined).length, clients.length, `round ${round + 1}: every address refused`)
    t.equal(pending.length, round === 0 ? clients.length : 0, `round ${round + 1}: ${round === 0 ? 'each address’s first refusal records its block' : 'no refusal records anything'}`)
  }
  const blocks = await app.store.auditEvents({ limit: 20_000, event: 'rate_limit.block' })
  t.equal(blocks.length, clients.length, 'one rate_limit.block per address')
  t.equal(new Set(blocks.map((e) => e.ip)).size, clients.length, 'each address once')
})

