/**
 * The TOTP second factor, injected into the handler (README, "Second factor"): setup, confirm, disable and
 * new recovery codes; a login answered with mfaRequired, then POST /api/auth/login/mfa; every
 * status and message of those endpoints, real argon2 and a real store. The clock is the test's,
 * so codes are computed for known steps.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { codeAt, stepAt } from '../../src/core/totp.js'
import { addUser, ageLimits, call, CookieJar, buildApp, type Reply, type TestApp } from '../helpers/app.js'

const PASSWORD = 'correct horse battery'
const REFRESH = '__Host-authd_rt'
const DEVICE = '__Host-authd_device'
const T0 = Date.UTC(2026, 10, 24, 12, 0, 0)

interface Clock {
  now: () => number
  at: number
}
const clock = (): Clock => {
  const c: Clock = { at: T0, now: () => c.at }
  return c
}

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })
const claims = (token: string): Record<string, unknown> => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>
const cookies = (r: Reply): string[] => {
  const sc = r.headers['set-cookie']
  return sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]
}

async function app(t: Parameters<typeof buildApp>[0], env: Record<string, string> = {}): Promise<TestApp & { clock: Clock }> {
  const c = clock()
  const server = await buildApp(t, { now: c.now, env })
  return Object.assign(server, { clock: c })
}

async function login(a: TestApp, email: string, password = PASSWORD, headers: Record<string, string> = {}): Promise<Reply> {
  return call(a, 'POST', '/api/auth/login', { json: { email, password }, headers })
}

/** a user with the factor on: its secret, recovery codes, and an access token of a password-only session */
async function withFactor(a: TestApp & { clock: Clock }, email: string): Promise<{ secret: string; recoveryCodes: string[]; token: string; userId: string }> {
  const user = await addUser(a, email, PASSWORD)
  const token = (await login(a, email)).body.data.accessToken as string
  const setup = await call(a, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer(token) })
  const secret = setup.body.data.secret as string
  const confirm = await call(a, 'POST', '/api/auth/mfa/totp/confirm', { headers: bearer(token), json: { code: codeAt(secret, stepAt(a.clock.at)) } })
  if (confirm.status !== 200) throw new Error(`confirm: ${confirm.text}`)
  // later steps: the confirming code's step is used
  a.clock.at += 30_000
  return { secret, recoveryCodes: confirm.body.data.recoveryCodes as string[], token, userId: user.id }
}

const mfaToken = async (a: TestApp, email: string): Promise<string> => {
  const r = await login(a, email)
  if (r.body?.data?.mfaRequired !== true) throw new Error(`login: ${r.text}`)
  return r.body.data.mfaToken as string
}
const second = (a: TestApp, body: unknown, headers: Record<string, string> = {}): Promise<Reply> => call(a, 'POST', '/api/auth/login/mfa', { json: body, headers })

t.test('setup answers a new 160-bit secret and its otpauth URL; nothing changes until confirmed; a new setup replaces it', async (t) => {
  const a = await app(t)
  await addUser(a, 'ann+x@example.com', PASSWORD)
  const token = (await login(a, 'ann+x@example.com')).body.data.accessToken as string
  const r = await call(a, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer(token) })
  t.equal(r.status, 200)
  t.equal(r.headers['cache-control'], 'no-store')
  t.same(Object.keys(r.body.data).sort(), ['otpauthUrl', 'secret'])
  const { secret, otpauthUrl } = r.body.data as { secret: string; otpauthUrl: string }
  t.match(secret, /^[A-Z2-7]{32}$/, '160 bits of base32')
  t.equal(otpauthUrl, `otpauth://totp/authd:ann%2Bx%40example.com?secret=${secret}&issuer=authd&algorithm=SHA1&digits=6&period=30`)
  t.same((await call(a, 'GET', '/api/auth/me', { headers: bearer(token) })).body.data.mfaEnabled, false, 'not on before confirm')
  t.equal((await login(a, 'ann+x@example.com')).body.data.mfaRequired, undefined, 'a login still signs in with the password alone')

  const again = await call(a, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer(token) })
  t.equal(again.status, 200)
  t.not(again.body.data.secret, secret, 'a new setup, a new secret')
  const old = await call(a, 'POST', '/api/auth/mfa/totp/confirm', { headers: bearer(token), json: { code: codeAt(secret, stepAt(a.clock.at)) } })
  t.same([old.status, old.body], [400, { success: false, message: 'Invalid code' }], 'the replaced setup is gone')
})

t.test('the issuer is mfa.issuer, encoded', async (t) => {
  const a = await app(t, { AUTHD_MFA_ISSUER: 'Example Co & Sons' })
  await addUser(a, 'ann@example.com', PASSWORD)
  const token = (await login(a, 'ann@example.com')).body.data.accessToken as string
  const r = await call(a, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer(token) })
  t.match(r.body.data.otpauthUrl, /^otpauth:\/\/totp\/Example%20Co%20%26%20Sons:ann%40example\.com\?secret=[A-Z2-7]{32}&issuer=Example%20Co%20%26%20Sons&algorithm=SHA1&digits=6&period=30$/)
})

t.test('confirm: 409 without a setup, 400 for a wrong code, then ten recovery codes and the factor is on', async (t) => {
  const a = await app(t)
  await addUser(a, 'ann@example.com', PASSWORD)
  const token = (await login(a, 'ann@example.com')).body.data.accessToken as string
  const confirm = (json: unknown): Promise<Reply> => call(a, 'POST', '/api/auth/mfa/totp/confirm', { headers: bearer(token), json })
  t.same((await confirm({ code: '123456' })).body, { success: false, message: 'No two-factor setup in progress' })
  t.equal((await confirm({ code: '123456' })).status, 409)
  const secret = (await call(a, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer(token) })).body.data.secret as string
  const step = stepAt(a.clock.at)
  const wrong = codeAt(secret, step) === '000000' ? '000001' : '000000'
  for (const body of [{ code: wrong }, {}, { code: 123456 }, { code: '' }, { code: codeAt(secret, step + 2) }, { code: codeAt(secret, step - 2) }]) {
    const r = await confirm(body)
    t.same([r.status, r.body], [400, { success: false, message: 'Invalid code' }], JSON.stringify(body))
  }
  const ok = await confirm({ code: codeAt(secret, step + 1) })
  t.equal(ok.status, 200, 'the next step is accepted too')
  t.same(Object.keys(ok.body.data), ['recoveryCodes'])
  t.equal(ok.body.data.recoveryCodes.length, 10)
  for (const c of ok.body.data.recoveryCodes) t.match(c, /^[a-z2-7]{5}-[a-z2-7]{5}$/)
  t.equal((await call(a, 'GET', '/api/auth/me', { headers: bearer(token) })).body.data.mfaEnabled, true, '/me says it is on')
  const stored = (await a.store.getUserByEmail('ann@example.com'))!
  t.equal(stored.mfaSetup, undefined)
  t.equal(stored.mfa!.secret, secret)
  t.equal(stored.mfa!.lastStep, step + 1, 'the confirming step counts as used')
  for (const c of ok.body.data.recoveryCodes) t.notOk(JSON.stringify(stored).includes(c.replace('-', '')) || JSON.stringify(stored).includes(c), 'only hashes are stored')
  t.same((await confirm({ code: codeAt(secret, step + 1) })).body, { success: false, message: 'No two-factor setup in progress' }, 'once confirmed')
  const setup = await call(a, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer(token) })
  t.same([setup.status, setup.body], [409, { success: false, message: 'Two-factor authentication is already enabled' }])
})

t.test('a login with the factor on: mfaRequired, no token and no cookie; a wrong password is the usual 401 exactly', async (t) => {
  const a = await app(t)
  await withFactor(a, 'ann@example.com')
  await addUser(a, 'bob@example.com', PASSWORD)
  const r = await login(a, 'ann@example.com')
  t.equal(r.status, 200)
  t.same(Object.keys(r.body.data).sort(), ['expiresIn', 'methods', 'mfaRequired', 'mfaToken'])
  t.match(r.body.data, { mfaRequired: true, methods: ['totp', 'recovery_code'], expiresIn: 300, mfaToken: String })
  t.same(cookies(r), [], 'no refresh cookie, no device cookie')
  t.notOk(r.text.includes('accessToken'))

  const strip = (x: Reply): unknown => {
    const { date: _d, 'x-request-id': _id, ...rest } = x.headers
    return { status: x.status, headers: rest, text: x.text }
  }
  const withFactorWrong = await login(a, 'ann@example.com', 'wrong password here')
  const withoutWrong = await login(a, 'bob@example.com', 'wrong password here')
  t.same(strip(withFactorWrong), strip(withoutWrong), 'same status, headers and body whether a factor is on or not')
  t.same(withFactorWrong.body, { success: false, message: 'Invalid email or password' })
})

t.test('login/mfa with a TOTP code: signs in with both cookies and amr pwd+otp+mfa; the token and the code work once', async (t) => {
  const a = await app(t)
  const { secret, userId } = await withFactor(a, 'ann@example.com')
  const token = await mfaToken(a, 'ann@example.com')
  const code = codeAt(secret, stepAt(a.clock.at))
  const r = await second(a, { mfaToken: token, code })
  t.equal(r.status, 200)
  t.same(Object.keys(r.body.data).sort(), ['accessToken', 'expiresIn', 'tokenType', 'user'])
  t.same(r.body.data.user, { id: userId, email: 'ann@example.com' })
  const set = cookies(r)
  t.ok(set.some((c) => c.startsWith(`${REFRESH}=`) && /HttpOnly/.test(c) && /Secure/.test(c)), 'the refresh cookie')
  t.ok(set.some((c) => c.startsWith(`${DEVICE}=`)), 'the device cookie')
  t.same(claims(r.body.data.accessToken).amr, ['pwd', 'otp', 'mfa'])
  t.equal((await call(a, 'GET', '/api/auth/me', { headers: bearer(r.body.data.accessToken) })).body.data.mfaEnabled, true)

  const reused = await second(a, { mfaToken: token, code: codeAt(secret, stepAt(a.clock.at) + 1) })
  t.same([reused.status, reused.body], [401, { success: false, message: 'Invalid or expired MFA token' }], 'a used mfaToken')
  const invalidCodes = async (): Promise<number> =>
    Number(/^authd_mfa_total\{outcome="invalid_code"\} (\d+)$/m.exec((await call(a, 'GET', '/metrics')).text)?.[1] ?? 0)
  const wrongBefore = await invalidCodes()
  const wrongOnUsed = await second(a, { mfaToken: token, code: code === '000000' ? '111111' : '000000' })
  t.same([wrongOnUsed.status, wrongOnUsed.body], [401, { success: false, message: 'Invalid or expired MFA token' }], 'a used mfaToken with a wrong code: the token is what is refused')
  t.equal(await invalidCodes(), wrongBefore, 'not counted as a wrong code')
  const replay = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), code })
  t.same([replay.status, replay.body], [401, { success: false, message: 'Invalid code' }], 'the same code again, with a new mfaToken')
  t.same(cookies(replay), [])
  const older = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), code: codeAt(secret, stepAt(a.clock.at) - 1) })
  t.equal(older.status, 401, "a code of a step before the last one accepted")
  const next = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), code: codeAt(secret, stepAt(a.clock.at) + 1) })
  t.equal(next.status, 200, 'the next step still works')
})

t.test('a wrong code does not use up the mfaToken', async (t) => {
  const a = await app(t)
  const { secret } = await withFactor(a, 'ann@example.com')
  const token = await mfaToken(a, 'ann@example.com')
  const code = codeAt(secret, stepAt(a.clock.at))
  const wrong = code === '999999' ? '999998' : '999999'
  const r = await second(a, { mfaToken: token, code: wrong })
  t.same([r.status, r.body], [401, { success: false, message: 'Invalid code' }])
  t.same(cookies(r), [])
  t.equal((await second(a, { mfaToken: token, code })).status, 200)
})

t.test('login/mfa with a recovery code: amr pwd+mfa, each code once, in any case and spacing', async (t) => {
  const a = await app(t)
  const { recoveryCodes } = await withFactor(a, 'ann@example.com')
  const r = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), recoveryCode: recoveryCodes[4]!.toUpperCase() })
  t.equal(r.status, 200)
  t.same(claims(r.body.data.accessToken).amr, ['pwd', 'mfa'])
  t.ok(cookies(r).some((c) => c.startsWith(`${REFRESH}=`)))
  const again = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), recoveryCode: recoveryCodes[4] })
  t.same([again.status, again.body], [401, { success: false, message: 'Invalid code' }], 'a recovery code works once')
  t.equal((await a.store.getUserByEmail('ann@example.com'))!.mfa!.recoveryCodes.length, 9)
  const spaced = recoveryCodes[5]!.replace('-', ' ')
  t.equal((await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), recoveryCode: spaced })).status, 200)
  const bad = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), recoveryCode: 'aaaaa-aaaaa' })
  t.same([bad.status, bad.body], [401, { success: false, message: 'Invalid code' }])
})

t.test('login/mfa: 400 when the token or the code is missing, or both codes are sent', async (t) => {
  const a = await app(t)
  await withFactor(a, 'ann@example.com')
  const token = await mfaToken(a, 'ann@example.com')
  for (const body of [{}, { mfaToken: token }, { code: '123456' }, { mfaToken: '', code: '123456' }, { mfaToken: token, code: '' }, { mfaToken: token, code: 123456 }, { mfaToken: 5, code: '123456' }, { mfaToken: token, code: '123456', recoveryCode: 'aaaaa-aaaaa' }, { mfaToken: token, recoveryCode: null }]) {
    const r = await second(a, body)
    t.same([r.status, r.body], [400, { success: false, message: 'MFA token and code are required' }], JSON.stringify(body).slice(0, 60))
  }
  const json = await call(a, 'POST', '/api/auth/login/mfa', { body: '{', headers: { 'content-type': 'application/json' } })
  t.same([json.status, json.body], [400, { success: false, message: 'Invalid JSON body' }])
})

t.test('login/mfa: 401 for an mfaToken that is forged, expired, of a changed password, a reset factor or a disabled user', async (t) => {
  const a = await app(t)
  const { secret, userId } = await withFactor(a, 'ann@example.com')
  const code = (): string => codeAt(secret, stepAt(a.clock.at))
  const invalid = async (token: string, what: string): Promise<void> => {
    const r = await second(a, { mfaToken: token, code: code() })
    t.same([r.status, r.body], [401, { success: false, message: 'Invalid or expired MFA token' }], what)
    t.same(cookies(r), [], `${what}: no cookie`)
  }
  await invalid('garbage', 'garbage')
  const good = await mfaToken(a, 'ann@example.com')
  await invalid(`${good.split('.')[0]}.${Buffer.alloc(32).toString('base64url')}`, 'a forged MAC')
  a.clock.at += 5 * 60_000
  await invalid(good, 'five minutes old')

  const beforePasswd = await mfaToken(a, 'ann@example.com')
  await a.store.updateUser(userId, (u) => ({ ...u, passwordHash: `${u.passwordHash}x` }))
  await invalid(beforePasswd, 'the password changed since')
  await a.store.updateUser(userId, (u) => ({ ...u, passwordHash: u.passwordHash.slice(0, -1) }))

  const beforeDisable = await mfaToken(a, 'ann@example.com')
  await a.store.updateUser(userId, (u) => ({ ...u, disabled: true }))
  await invalid(beforeDisable, 'the user was disabled since')
  await a.store.updateUser(userId, (u) => ({ ...u, disabled: false }))

  const beforeReset = await mfaToken(a, 'ann@example.com')
  await a.store.updateUser(userId, (u) => {
    const { mfa: _m, mfaSetup: _s, ...rest } = u
    return rest
  })
  await invalid(beforeReset, 'the factor was reset since')

  // the factor set up again, with a new secret: the token of the old one stays void, even with a
  // code of the new one
  const passwordSession = (await login(a, 'ann@example.com')).body.data.accessToken as string
  const setup = await call(a, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer(passwordSession) })
  const secret2 = setup.body.data.secret as string
  t.equal((await call(a, 'POST', '/api/auth/mfa/totp/confirm', { headers: bearer(passwordSession), json: { code: codeAt(secret2, stepAt(a.clock.at)) } })).status, 200)
  a.clock.at += 30_000
  const again = await second(a, { mfaToken: beforeReset, code: codeAt(secret2, stepAt(a.clock.at)) })
  t.same([again.status, again.body], [401, { success: false, message: 'Invalid or expired MFA token' }], 'the factor reset and set up again since: void with the new code')
  const fresh = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), code: codeAt(secret2, stepAt(a.clock.at)) })
  t.equal(fresh.status, 200, 'a token of the new factor, with its code')
})

t.test('an mfaToken holds no digest of the password hash, and no part of it repeats from token to token', async (t) => {
  const a = await app(t)
  const { userId } = await withFactor(a, 'ann@example.com')
  const hash = (await a.store.getUser(userId))!.passwordHash
  const payloads = await Promise.all([1, 2].map(async () => Buffer.from((await mfaToken(a, 'ann@example.com')).split('.')[0]!, 'base64url').toString('utf8')))
  const digest = createHash('sha256').update(hash).digest()
  for (const p of payloads) {
    t.notOk(p.includes(digest.toString('base64url', 0, 16)), 'not the digest it used to carry')
    t.notOk(p.includes(hash), 'not the hash')
  }
  const parts = payloads.map((p) => p.split('.'))
  t.equal(parts[0]![0], userId, 'the user id, as the token says whose it is')
  t.not(parts[0]![2], parts[1]![2], 'its id differs')
  t.not(parts[0]![3], parts[1]![3], 'its binding differs')
})

t.test('failed codes are limited per user: 429 Too many attempts with Retry-After, whichever mfaToken, even for a right code', async (t) => {
  const a = await app(t)
  const { secret } = await withFactor(a, 'ann@example.com')
  const code = codeAt(secret, stepAt(a.clock.at))
  const wrong = code === '111111' ? '111112' : '111111'
  for (let i = 0; i < 5; i++) {
    const r = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), code: wrong })
    t.equal(r.status, 401, `failure ${i + 1}`)
  }
  const r = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), code })
  t.same([r.status, r.body], [429, { success: false, message: 'Too many attempts' }])
  t.match(r.headers['retry-after'], /^\d+$/)
  t.same(cookies(r), [])
  const recovery = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), recoveryCode: 'aaaaa-aaaaa' })
  t.equal(recovery.status, 429, 'recovery codes count alike')
  a.clock.at += 15 * 60_000 + 1000
  await ageLimits(a, 15 * 60_000 + 1000)
  const later = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), code: codeAt(secret, stepAt(a.clock.at)) })
  t.equal(later.status, 200, 'after the window, a right code signs in')
})

t.test('fifty concurrent wrong codes: exactly five are checked, forty-five get 429', async (t) => {
  const a = await app(t)
  const { secret } = await withFactor(a, 'ann@example.com')
  const code = codeAt(secret, stepAt(a.clock.at))
  const wrong = code === '222222' ? '222223' : '222222'
  const tokens = await Promise.all([0, 1, 2].map(() => mfaToken(a, 'ann@example.com')))
  const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => second(a, { mfaToken: tokens[i % 3], code: wrong })))
  t.equal(replies.filter((r) => r.status === 401 && r.body.message === 'Invalid code').length, 5)
  t.equal(replies.filter((r) => r.status === 429 && r.body.message === 'Too many attempts').length, 45)
})

t.test('concurrent second steps with one mfaToken and right codes: exactly one session', async (t) => {
  const a = await app(t)
  const { secret, recoveryCodes, userId } = await withFactor(a, 'ann@example.com')
  const before = await a.store.countSessions(userId)
  const token = await mfaToken(a, 'ann@example.com')
  const s = stepAt(a.clock.at)
  const bodies = [
    { mfaToken: token, code: codeAt(secret, s) },
    { mfaToken: token, code: codeAt(secret, s + 1) },
    { mfaToken: token, recoveryCode: recoveryCodes[0] },
    { mfaToken: token, recoveryCode: recoveryCodes[1] },
  ]
  const replies = await Promise.all(bodies.map((b) => second(a, b)))
  t.equal(replies.filter((r) => r.status === 200).length, 1, 'one wins')
  t.ok(replies.filter((r) => r.status !== 200).every((r) => r.status === 401 && r.body.message === 'Invalid or expired MFA token'))
  t.equal(await a.store.countSessions(userId), before + 1)
})

t.test('disable: 409 when off, 403 for a wrong password, then off, and a login signs in with the password', async (t) => {
  const a = await app(t)
  await addUser(a, 'bob@example.com', PASSWORD)
  const bobToken = (await login(a, 'bob@example.com')).body.data.accessToken as string
  const off = await call(a, 'POST', '/api/auth/mfa/totp/disable', { headers: bearer(bobToken), json: { password: PASSWORD } })
  t.same([off.status, off.body], [409, { success: false, message: 'Two-factor authentication is not enabled' }])

  const { token } = await withFactor(a, 'ann@example.com')
  for (const json of [{ password: 'wrong password here' }, {}, { password: 5 }]) {
    const r = await call(a, 'POST', '/api/auth/mfa/totp/disable', { headers: bearer(token), json })
    t.same([r.status, r.body], [403, { success: false, message: 'Current password is incorrect' }], JSON.stringify(json))
  }
  const r = await call(a, 'POST', '/api/auth/mfa/totp/disable', { headers: bearer(token), json: { password: PASSWORD } })
  t.same([r.status, r.body], [200, { success: true, data: {} }])
  t.equal((await call(a, 'GET', '/api/auth/me', { headers: bearer(token) })).body.data.mfaEnabled, false)
  const plain = await login(a, 'ann@example.com')
  t.ok(plain.body.data.accessToken, 'a password alone signs in again')
  t.same(claims(plain.body.data.accessToken).amr, ['pwd'])
})

t.test('a wrong password at disable counts as a failed login: the login limits answer 429 Too many login attempts', async (t) => {
  const a = await app(t, { AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '3/15m' })
  const { token } = await withFactor(a, 'ann@example.com')
  // the setup's login used none of the budget (a success clears it)
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) {
    statuses.push((await call(a, 'POST', '/api/auth/mfa/totp/disable', { headers: bearer(token), json: { password: 'wrong password here' } })).status)
  }
  t.same(statuses, [403, 403, 403, 429])
  const r = await call(a, 'POST', '/api/auth/mfa/totp/disable', { headers: bearer(token), json: { password: PASSWORD } })
  t.same([r.status, r.body.message], [429, 'Too many login attempts'], 'not checked while spent')
  t.match(r.headers['retry-after'], /^\d+$/)
  t.equal((await login(a, 'ann@example.com')).status, 429, 'and the login itself is limited')
})

t.test("disable and recovery-codes from the user's own browser (its device cookie) are counted per device, as at login: per_email spent by others does not stop them", async (t) => {
  const a = await app(t, { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1/32', AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '3/1h' })
  const { token } = await withFactor(a, 'ann@example.com')
  // the user's browser: a device cookie of this user, from a sign-in with both steps
  const first = await login(a, 'ann@example.com', PASSWORD, { 'x-forwarded-for': '198.51.100.1' })
  const secret = (await a.store.getUserByEmail('ann@example.com'))!.mfa!.secret
  const step = await call(a, 'POST', '/api/auth/login/mfa', { json: { mfaToken: first.body.data.mfaToken, code: codeAt(secret, stepAt(a.clock.at)) }, headers: { 'x-forwarded-for': '198.51.100.1' } })
  t.equal(step.status, 200)
  const device = cookies(step).find((c) => c.startsWith(`${DEVICE}=`))!.split(';')[0]!
  // someone else spends per_email for this email, from three addresses
  for (let i = 0; i < 3; i++) t.equal((await login(a, 'ann@example.com', 'wrong password here', { 'x-forwarded-for': `203.0.113.${i}` })).status, 401)
  t.equal((await login(a, 'ann@example.com', PASSWORD, { 'x-forwarded-for': '203.0.113.9' })).status, 429, 'per_email is spent')
  const headers = { ...bearer(token), cookie: device, 'x-forwarded-for': '198.51.100.1' }
  const codes = await call(a, 'POST', '/api/auth/mfa/recovery-codes', { headers, json: { password: PASSWORD } })
  t.equal(codes.status, 200, 'recovery-codes from the browser with its device cookie')
  const off = await call(a, 'POST', '/api/auth/mfa/totp/disable', { headers, json: { password: PASSWORD } })
  t.equal(off.status, 200, 'disable from the browser with its device cookie')
})

t.test('recovery-codes: 409 when off, 403 for a wrong password, then ten new codes and the old ones void', async (t) => {
  const a = await app(t)
  await addUser(a, 'bob@example.com', PASSWORD)
  const bobToken = (await login(a, 'bob@example.com')).body.data.accessToken as string
  const off = await call(a, 'POST', '/api/auth/mfa/recovery-codes', { headers: bearer(bobToken), json: { password: PASSWORD } })
  t.same([off.status, off.body], [409, { success: false, message: 'Two-factor authentication is not enabled' }])

  const { token, recoveryCodes } = await withFactor(a, 'ann@example.com')
  const wrong = await call(a, 'POST', '/api/auth/mfa/recovery-codes', { headers: bearer(token), json: { password: 'wrong password here' } })
  t.same([wrong.status, wrong.body], [403, { success: false, message: 'Current password is incorrect' }])
  const r = await call(a, 'POST', '/api/auth/mfa/recovery-codes', { headers: bearer(token), json: { password: PASSWORD } })
  t.equal(r.status, 200)
  t.equal(r.body.data.recoveryCodes.length, 10)
  t.notOk(r.body.data.recoveryCodes.some((c: string) => recoveryCodes.includes(c)), 'all new')
  const old = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), recoveryCode: recoveryCodes[0] })
  t.same([old.status, old.body.message], [401, 'Invalid code'], 'an old code is void')
  t.equal((await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), recoveryCode: r.body.data.recoveryCodes[0] })).status, 200)
})

t.test('the bearer endpoints answer /me’s 401s', async (t) => {
  const a = await app(t)
  for (const path of ['/api/auth/mfa/totp/setup', '/api/auth/mfa/totp/confirm', '/api/auth/mfa/totp/disable', '/api/auth/mfa/recovery-codes']) {
    const none = await call(a, 'POST', path, { json: {} })
    t.same([none.status, none.body, none.headers['www-authenticate']], [401, { success: false, message: 'Unauthorized' }, 'Bearer'], `${path}: no token`)
    const bad = await call(a, 'POST', path, { json: {}, headers: bearer('x.y.z') })
    t.same([bad.status, bad.body, bad.headers['www-authenticate']], [401, { success: false, message: 'Invalid or expired access token' }, 'Bearer error="invalid_token"'], `${path}: a bad token`)
    t.equal((await call(a, 'GET', path)).status, 405, `${path}: GET`)
  }
  t.equal((await call(a, 'GET', '/api/auth/login/mfa')).status, 405)
})

t.test('browsers: /login/mfa refuses a foreign origin like the cookie endpoints; the bearer ones are CORS like /me', async (t) => {
  const a = await app(t, { AUTHD_CORS_ORIGINS: 'https://app.example.com' })
  const { secret } = await withFactor(a, 'ann@example.com')
  const token = await mfaToken(a, 'ann@example.com')
  const foreign = await second(a, { mfaToken: token, code: codeAt(secret, stepAt(a.clock.at)) }, { origin: 'https://evil.example' })
  t.same([foreign.status, foreign.body], [403, { success: false, message: 'Forbidden origin' }])
  t.same(cookies(foreign), [])
  const pre = await call(a, 'OPTIONS', '/api/auth/login/mfa', { headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } })
  t.equal(pre.status, 403)
  const setupPre = await call(a, 'OPTIONS', '/api/auth/mfa/totp/setup', { headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } })
  t.equal(setupPre.status, 204, 'a bearer endpoint has no cookie: its preflight is answered')
  t.equal(setupPre.headers['access-control-allow-origin'], undefined)
  const allowed = await second(a, { mfaToken: token, code: codeAt(secret, stepAt(a.clock.at)) }, { origin: 'https://app.example.com' })
  t.equal(allowed.status, 200, 'the token was not used up by the refused request')
  t.equal(allowed.headers['access-control-allow-origin'], 'https://app.example.com')
})

t.test('amr: pwd for a password login and register; a refresh keeps the session’s amr', async (t) => {
  const a = await app(t)
  const reg = await call(a, 'POST', '/api/auth/register', { json: { email: 'new@example.com', password: PASSWORD } })
  t.same(claims(reg.body.data.accessToken).amr, ['pwd'])
  const { secret } = await withFactor(a, 'ann@example.com')
  const viaTotp = await second(a, { mfaToken: await mfaToken(a, 'ann@example.com'), code: codeAt(secret, stepAt(a.clock.at)) })
  const jar = new CookieJar(REFRESH)
  jar.take(viaTotp)
  for (let i = 0; i < 2; i++) {
    a.clock.at += 1000
    const r = await call(a, 'POST', '/api/auth/refresh', { headers: jar.header() })
    t.equal(r.status, 200)
    jar.take(r)
    t.same(claims(r.body.data.accessToken).amr, ['pwd', 'otp', 'mfa'], `refresh ${i + 1} keeps it`)
  }
  const plainJar = new CookieJar(REFRESH)
  plainJar.take(reg)
  const r = await call(a, 'POST', '/api/auth/refresh', { headers: plainJar.header() })
  t.same(claims(r.body.data.accessToken).amr, ['pwd'])
})

t.test('a stolen password alone never yields a cookie or a token', async (t) => {
  const a = await app(t)
  const { secret } = await withFactor(a, 'ann@example.com')
  const seen: Reply[] = []
  const say = async (r: Promise<Reply>): Promise<Reply> => {
    const reply = await r
    seen.push(reply)
    return reply
  }
  const json = (body: unknown): { json: unknown } => ({ json: body })
  const first = await say(login(a, 'ann@example.com'))
  const token = first.body.data.mfaToken as string
  const guess = codeAt(secret, stepAt(a.clock.at)) === '123456' ? '654321' : '123456'
  await say(call(a, 'POST', '/api/auth/login', json({ email: 'ANN@example.com ', password: PASSWORD })))
  await say(second(a, { mfaToken: token, code: guess }))
  await say(second(a, { mfaToken: token, recoveryCode: 'aaaaa-aaaaa' }))
  await say(second(a, { mfaToken: token }))
  await say(call(a, 'POST', '/api/auth/login/mfa', json({ email: 'ann@example.com', password: PASSWORD })))
  await say(call(a, 'POST', '/api/auth/register', json({ email: 'ann@example.com', password: PASSWORD })))
  await say(call(a, 'POST', '/api/auth/refresh', json({ email: 'ann@example.com', password: PASSWORD })))
  await say(call(a, 'POST', '/api/auth/logout', json({ email: 'ann@example.com', password: PASSWORD })))
  // the mfaToken is no bearer token
  for (const path of ['/api/auth/mfa/totp/setup', '/api/auth/mfa/totp/disable', '/api/auth/mfa/recovery-codes']) {
    await say(call(a, 'POST', path, { json: { password: PASSWORD }, headers: bearer(token) }))
  }
  await say(call(a, 'GET', '/api/auth/me', { headers: bearer(token) }))
  t.equal(seen.length, 13)
  for (const r of seen) {
    t.notOk(cookies(r).some((c) => !/Max-Age=0/.test(c)), `${r.status} ${r.text.slice(0, 60)}: no cookie set`)
    t.notOk(/accessToken|refreshToken/.test(r.text), 'no token')
  }
  t.equal(await a.store.countSessions((await a.store.getUserByEmail('ann@example.com'))!.id), 1, 'only the session the test made before the factor was on')
})

t.test('logins at once right after a change of parameters: each mfaToken completes the second step, whichever re-hash landed first (a re-hash is no password change)', async (t) => {
  const a = await app(t, { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1000/1m', AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '1000/1m', AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '1000/1m' })
  const { recoveryCodes, userId } = await withFactor(a, 'ann@example.com')
  // the stored hash made under other parameters, as after a change of passwords.*
  const { default: argon2 } = await import('argon2')
  const old = await argon2.hash(PASSWORD, { type: argon2.argon2id, memoryCost: 2048, timeCost: 2, parallelism: 1 })
  await a.store.updateUser(userId, (u) => ({ ...u, passwordHash: old }))
  const firsts = await Promise.all([0, 1, 2].map((i) => login(a, 'ann@example.com', PASSWORD, { 'user-agent': `device ${i}` })))
  t.same(firsts.map((r) => r.body.data?.mfaRequired), [true, true, true])
  t.not((await a.store.getUser(userId))!.passwordHash, old, 're-hashed')
  for (const [i, r] of firsts.entries()) {
    const step = await call(a, 'POST', '/api/auth/login/mfa', { json: { mfaToken: r.body.data.mfaToken, recoveryCode: recoveryCodes[i] } })
    t.equal(step.status, 200, `token ${i} completes the second step`)
  }
})
