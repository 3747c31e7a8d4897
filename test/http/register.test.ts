/**
 * POST /api/auth/register, injected into the handler (README, "Call the API"): every status and message,
 * the cookie it sets, canonical-email uniqueness under concurrency, and mass assignment.
 */
import t from 'tap'
import { ageLimits, call, CookieJar, openTestStore, retryAfterIs, buildApp, type Reply, type TestApp } from '../helpers/app.js'
import { AppError } from '../../src/errors.js'
import type { Store } from '../../src/store/store.js'

const PASSWORD = 'vermilion-otter-42'
const ABSOLUTE_TTL_S = 30 * 24 * 3600

function setCookies(reply: Reply): string[] {
  const sc = reply.headers['set-cookie']
  return sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]
}

const register = (app: TestApp, json: unknown, headers: Record<string, string> = {}): Promise<Reply> =>
  call(app, 'POST', '/api/auth/register', { json, headers })

t.test('registers, signs the new user in and sets the refresh cookie with the production attributes', async (t) => {
  const app = await buildApp(t, { argon2: 'configured' })
  const res = await register(app, { email: '  Zoe@Example.COM ', password: PASSWORD })
  t.equal(res.status, 201)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(res.headers['cache-control'], 'no-store')
  t.equal(res.body.success, true)
  const data = res.body.data
  t.same(Object.keys(data).sort(), ['accessToken', 'expiresIn', 'tokenType', 'user'])
  t.equal(data.tokenType, 'Bearer')
  t.equal(data.expiresIn, 900)
  t.equal(data.user.email, 'zoe@example.com', 'stored and answered in canonical form')
  t.match(data.user.id, /^[A-Za-z0-9_-]{22}$/)

  const cookies = setCookies(res)
  t.equal(cookies.length, 2, 'the refresh cookie, then the device cookie (test/http/device-cookie.test.ts)')
  const [nameValue, ...attrs] = cookies[0]!.split('; ')
  t.match(nameValue, /^__Host-authd_rt=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/, '256-bit token under the __Host- name')
  t.same(attrs.sort(), ['HttpOnly', `Max-Age=${ABSOLUTE_TTL_S}`, 'Path=/', 'SameSite=Strict', 'Secure'].sort())

  const stored = await app.store.getUserByEmail('zoe@example.com')
  t.ok(stored)
  t.equal(stored!.id, data.user.id)
  t.equal(stored!.disabled, false)
  t.match(stored!.passwordHash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
  t.equal(await app.store.countSessions(stored!.id), 1, 'signed in: one session')

  const me = await call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${data.accessToken}` } })
  t.same(me.body, { success: true, data: { id: stored!.id, email: 'zoe@example.com', mfaEnabled: false } })

  const jar = new CookieJar('__Host-authd_rt')
  jar.take(res)
  const refreshed = await call(app, 'POST', '/api/auth/refresh', { headers: jar.header() })
  t.equal(refreshed.status, 200, 'the refresh cookie from register works')

  t.notOk(app.logs.text().includes(PASSWORD), 'the password never reaches the log')
  t.notOk(app.logs.text().includes(jar.value!), 'nor the refresh token')
})

t.test('with --dev the cookie is authd_rt and not Secure', async (t) => {
  const app = await buildApp(t, { dev: true })
  const res = await register(app, { email: 'dev@example.com', password: PASSWORD })
  t.equal(res.status, 201)
  const [nameValue, ...attrs] = setCookies(res)[0]!.split('; ')
  t.match(nameValue, /^authd_rt=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/)
  t.same(attrs.sort(), ['HttpOnly', `Max-Age=${ABSOLUTE_TTL_S}`, 'Path=/', 'SameSite=Strict'].sort())
})

t.test('ignores every field but email and password (mass assignment)', async (t) => {
  const app = await buildApp(t)
  const res = await register(app, {
    email: 'mallory@example.com',
    password: PASSWORD,
    id: 'x',
    disabled: true,
    passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$AAAA$AAAA',
    createdAt: 0,
    role: 'admin',
  })
  t.equal(res.status, 201)
  t.not(res.body.data.user.id, 'x', 'the id is made by the server')
  t.equal(await app.store.getUser('x'), undefined)
  const user = (await app.store.getUserByEmail('mallory@example.com'))!
  t.same(Object.keys(user).sort(), ['createdAt', 'disabled', 'email', 'id', 'passwordHash', 'updatedAt'])
  t.equal(user.disabled, false)
  t.not(user.createdAt, 0)
  t.not(user.passwordHash, '$argon2id$v=19$m=19456,t=2,p=1$AAAA$AAAA')
  const login = await call(app, 'POST', '/api/auth/login', { json: { email: 'mallory@example.com', password: PASSWORD } })
  t.equal(login.status, 200, 'the account is enabled and has the password sent')
})

t.test('409 for case and Unicode variants of a registered email', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_REGISTER_PER_IP: '100/1h' } })
  t.equal((await register(app, { email: 'a@x.io', password: PASSWORD })).status, 201)
  // full-width letters and the full-width commercial at fold to ASCII under NFKC
  for (const variant of ['A@X.io', 'a@X.IO', ' a@x.io\t', '\uff41\uff20\uff58.\uff49\uff4f', '\uff21@\uff38.io']) {
    const res = await register(app, { email: variant, password: PASSWORD })
    t.equal(res.status, 409, JSON.stringify(variant))
    t.same(res.body, { success: false, message: 'Email already registered' })
    t.same(setCookies(res), [], 'no cookie on a conflict')
  }
  t.equal((await app.store.listUsers()).length, 1)
})

t.test('look-alike accounts: a U-label domain and its A-label are one account, and either form signs in', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_REGISTER_PER_IP: '100/1h' } })
  const first = await register(app, { email: 'ann@b\u00fccher.example', password: PASSWORD })
  t.equal(first.status, 201)
  t.equal(first.body.data.user.email, 'ann@xn--bcher-kva.example', 'stored with the domain in ASCII')
  for (const variant of ['ann@xn--bcher-kva.example', 'Ann@B\u00dcCHER.example', 'ann@b\u00fccher\u3002example']) {
    const res = await register(app, { email: variant, password: PASSWORD })
    t.equal(res.status, 409, JSON.stringify(variant))
    t.same(res.body, { success: false, message: 'Email already registered' })
  }
  for (const email of ['ann@b\u00fccher.example', 'ANN@xn--bcher-kva.example']) {
    const login = await call(app, 'POST', '/api/auth/login', { json: { email, password: PASSWORD } })
    t.equal(login.status, 200, `login as ${JSON.stringify(email)}`)
    t.equal(login.body.data.user.id, first.body.data.user.id)
  }
  t.same((await app.store.listUsers()).map((u) => u.email), ['ann@xn--bcher-kva.example'])
})

t.test('50 concurrent registrations of one email (in variants) make exactly one account', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_REGISTER_PER_IP: '100/1h' } })
  const variants = ['race@example.com', 'RACE@example.com', 'Race@Example.Com', '\uff52ace@example.com', ' race@example.com ']
  const replies = await Promise.all(
    Array.from({ length: 50 }, (_, i) => register(app, { email: variants[i % variants.length], password: `${PASSWORD}-${i}` })),
  )
  const statuses = replies.map((r) => r.status)
  t.equal(statuses.filter((s) => s === 201).length, 1, 'one 201')
  t.equal(statuses.filter((s) => s === 409).length, 49, 'forty-nine 409')
  const users = await app.store.listUsers()
  t.equal(users.length, 1)
  t.equal(users[0]!.email, 'race@example.com')
  const winner = replies.find((r) => r.status === 201)!
  t.equal(winner.body.data.user.id, users[0]!.id)
  t.equal(await app.store.countSessions(users[0]!.id), 1, 'only the winner was signed in')
})

t.test('400 Email and password are required', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_REGISTER_PER_IP: '100/1h' } })
  const bodies: unknown[] = [
    {},
    { email: 'a@x.io' },
    { password: PASSWORD },
    { email: '', password: PASSWORD },
    { email: '   ', password: PASSWORD },
    { email: 'a@x.io', password: '   ' },
    { email: 42, password: PASSWORD },
    { email: 'a@x.io', password: ['x'] },
    { email: null, password: null },
  ]
  for (const body of bodies) {
    const res = await register(app, body)
    t.equal(res.status, 400, JSON.stringify(body))
    t.same(res.body, { success: false, message: 'Email and password are required' })
  }
  t.equal((await app.store.listUsers()).length, 0)
})

t.test('400 Invalid email address', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_REGISTER_PER_IP: '100/1h' } })
  const local250 = 'a'.repeat(250)
  const cases: Record<string, string> = {
    'no @': 'ann.example.com',
    'two @': 'ann@home@example.com',
    'empty local part': '@example.com',
    'empty domain': 'ann@',
    'over 254 bytes': `${local250}@x.io`, // 255 bytes
    'over 254 bytes in UTF-8, under in characters': `${'é'.repeat(125)}@x.io`, // 130 chars, 255 bytes
    'NUL': 'ann\u0000@example.com',
    'C0 control': 'an\u0001n@example.com',
    'newline inside': 'ann\n@example.com',
    'DEL': 'ann\u007f@example.com',
    'C1 control': 'ann\u0085@example.com',
    'space inside': 'ann smith@example.com',
    'zero-width space': 'ann\u200b@example.com',
    'zero-width space inside the domain': 'ann@exa\u200bmple.com',
    'soft hyphen': 'an\u00adn@example.com',
    'soft hyphen inside the domain': 'ann@ex\u00adample.com',
    'right-to-left override': 'ann\u202e@example.com',
    'left-to-right mark': 'ann@example.com\u200e',
    'trailing-dot domain': 'ann@example.com.',
    'domain ToASCII refuses': 'ann@xn--zz.example',
  }
  for (const [why, email] of Object.entries(cases)) {
    const res = await register(app, { email, password: PASSWORD })
    t.equal(res.status, 400, why)
    t.same(res.body, { success: false, message: 'Invalid email address' }, why)
  }
  t.equal((await app.store.listUsers()).length, 0)
  const edge = `${'a'.repeat(249)}@x.io` // exactly 254 bytes
  t.equal((await register(app, { email: edge, password: PASSWORD })).status, 201, 'exactly 254 bytes is accepted')
})

t.test('password length is counted in code points', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_REGISTER_PER_IP: '100/1h' } })
  const emoji = '\u{1F98A}' // one code point, two UTF-16 units
  const short = await register(app, { email: 'short@x.io', password: emoji.repeat(7) })
  t.equal(short.status, 400, '7 emoji are 14 UTF-16 units but 7 characters')
  t.same(short.body, { success: false, message: 'Password must be at least 8 characters' })
  t.equal((await register(app, { email: 'eight@x.io', password: emoji.repeat(8) })).status, 201, '8 emoji are enough')

  const long = await register(app, { email: 'long@x.io', password: emoji.repeat(257) })
  t.equal(long.status, 400)
  t.same(long.body, { success: false, message: 'Password must be at most 256 characters' })
  t.equal((await register(app, { email: 'max@x.io', password: emoji.repeat(256) })).status, 201, '256 emoji (512 units) are allowed')
  const login = await call(app, 'POST', '/api/auth/login', { json: { email: 'max@x.io', password: emoji.repeat(256) } })
  t.equal(login.status, 200)

  // counted as sent, not after NFKC (which the hash uses): U+FB03 "ﬃ" is one code point, "ffi" after it
  const ligature = '\uFB03'
  const few = await register(app, { email: 'lig@x.io', password: ligature.repeat(3) })
  t.same([few.status, few.body], [400, { success: false, message: 'Password must be at least 8 characters' }], '3 ligatures are 3 characters, not 9')
  const many = await register(app, { email: 'lig200@x.io', password: ligature.repeat(200) })
  t.equal(many.status, 201, '200 ligatures are 200 characters, under 256 (600 after NFKC)')
  const back = await call(app, 'POST', '/api/auth/login', { json: { email: 'lig200@x.io', password: 'ffi'.repeat(200) } })
  t.equal(back.status, 200, 'and the password is the NFKC form, as every password is hashed')
})

t.test('the limits follow passwords.min_length and max_length', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_PASSWORDS_MIN_LENGTH: '12', AUTHD_PASSWORDS_MAX_LENGTH: '16' } })
  t.same((await register(app, { email: 'a@x.io', password: 'tangerine-9' })).body, { success: false, message: 'Password must be at least 12 characters' })
  t.same((await register(app, { email: 'a@x.io', password: 'tangerine-quartz-9' })).body, { success: false, message: 'Password must be at most 16 characters' })
})

t.test('400 Password is too common, from the bundled list, in any case', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_REGISTER_PER_IP: '100/1h' } })
  for (const password of ['password', '12345678', 'iloveyou', 'Sunshine', 'QWERTYUIOP']) {
    const res = await register(app, { email: 'c@x.io', password })
    t.equal(res.status, 400, password)
    t.same(res.body, { success: false, message: 'Password is too common' })
  }
  t.equal((await app.store.listUsers()).length, 0)
})

t.test('403 Registration is disabled', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_REGISTRATION_ENABLED: 'false' } })
  const runs = app.hasher.runs
  const res = await register(app, { email: 'a@x.io', password: PASSWORD })
  t.equal(res.status, 403)
  t.same(res.body, { success: false, message: 'Registration is disabled' })
  t.same(setCookies(res), [])
  t.equal((await app.store.listUsers()).length, 0)
  t.equal(app.hasher.runs, runs, 'nothing was hashed')
})

t.test('429 Too many registration attempts with Retry-After, per client IP', async (t) => {
  let now = 1_700_000_000_000
  const app = await buildApp(t, { now: () => now, env: { AUTHD_RATE_LIMIT_REGISTER_PER_IP: '2/1h' } })
  const started = performance.now()
  t.equal((await register(app, { email: 'one@x.io', password: PASSWORD })).status, 201)
  // a malformed request takes no limiter key (README, "Rate limits")
  t.equal((await register(app, { email: 'bad' , password: PASSWORD })).status, 400, 'a malformed attempt is answered…')
  t.equal((await register(app, { email: 'two@x.io', password: PASSWORD })).status, 201, '…and not counted')
  const runs = app.hasher.runs
  const res = await register(app, { email: 'three@x.io', password: PASSWORD })
  t.equal(res.status, 429)
  t.same(res.body, { success: false, message: 'Too many registration attempts' })
  t.ok(retryAfterIs(res.headers['retry-after'], 3600, started), `Retry-After: 3600 (${res.headers['retry-after']})`)
  t.same(setCookies(res), [])
  t.equal(app.hasher.runs, runs, 'argon2 is not run for a refused attempt')
  t.equal(await app.store.getUserByEmail('three@x.io'), undefined)
  now += 3600_000
  await ageLimits(app, 3600_000)
  t.equal((await register(app, { email: 'three@x.io', password: PASSWORD })).status, 201, 'allowed again after the window')
})

t.test('a register whose session cannot be written leaves no account behind: 503, and the same register sent again succeeds (never 409)', async (t) => {
  const dir = t.testdir()
  const real = await openTestStore(t, dir)
  // the first write that would start a session fails, as a database that times out does
  let failNext = true
  const unavailable = (): never => {
    failNext = false
    throw new AppError('STORE_UNAVAILABLE')
  }
  const store: Store = {
    ...real,
    createUser: async (...a) => (failNext && a[2] !== undefined ? unavailable() : real.createUser(...a)),
    createSession: async (...a) => (failNext ? unavailable() : real.createSession(...a)),
    createSessionFor: async (...a) => (failNext ? unavailable() : real.createSessionFor(...a)),
  }
  const app = await buildApp(t, { dir, store })
  const first = await register(app, { email: 'ada@example.com', password: PASSWORD })
  t.equal(first.status, 503)
  t.same(first.body, { success: false, message: 'Service unavailable' })
  t.equal(first.headers['retry-after'], '1')
  t.equal(await real.getUserByEmail('ada@example.com'), undefined, 'no account without its session')
  const again = await register(app, { email: 'ada@example.com', password: PASSWORD })
  t.equal(again.status, 201, 'sent again, it succeeds')
  const user = await real.getUserByEmail('ada@example.com')
  t.equal(await real.countSessions(user!.id), 1, 'with its one session')
})

t.test('a register whose keys read fails (the database out of reach) answers 503 before writing anything: the same register sent again succeeds', async (t) => {
  const dir = t.testdir()
  const real = await openTestStore(t, dir)
  let failKeys = false
  const store: Store = {
    ...real,
    keysVersion: async () => {
      if (failKeys) {
        failKeys = false
        throw new AppError('STORE_UNAVAILABLE')
      }
      return real.keysVersion()
    },
  }
  const app = await buildApp(t, { dir, store })
  failKeys = true
  const first = await register(app, { email: 'ada@example.com', password: PASSWORD })
  t.equal(first.status, 503)
  t.equal(await real.getUserByEmail('ada@example.com'), undefined, 'nothing written')
  t.equal((await register(app, { email: 'ada@example.com', password: PASSWORD })).status, 201, 'sent again, it succeeds')
})
