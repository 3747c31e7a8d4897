/**
 * POST /api/auth/login, injected into the handler, real LMDB in a temp dir and real argon2 (README,
 * "Call the API"): every row of its error table with exact status and message, the cookie, sessions,
 * and what happens to stored hashes (absurd ones refused unrun, old parameters re-hashed).
 */
import argon2 from 'argon2'
import fc from 'fast-check'
import t, { type Test } from 'tap'
import { parseHashParams } from '../../src/core/passwords.js'
import { defaultHashConcurrency } from '../../src/daemon/services.js'
import { addUser, call, CookieJar, buildApp, type Reply, type TestApp } from '../helpers/app.js'
import { decode } from '../helpers/jwt.js'

const PASSWORD = 'correct horse battery'
const ROOMY = { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1000/1m', AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '1000/1m', AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '1000/1m' }

const login = (app: TestApp, json: unknown, headers: Record<string, string> = {}): Promise<Reply> =>
  call(app, 'POST', '/api/auth/login', { json, headers })

const setCookies = (r: Reply): string[] => {
  const sc = r.headers['set-cookie']
  return sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]
}

function isInvalidCredentials(t: Test, r: Reply): void {
  t.equal(r.status, 401)
  t.same(r.body, { success: false, message: 'Invalid email or password' })
  t.same(setCookies(r), [], 'no cookie')
  t.notOk('www-authenticate' in r.headers)
}

/** Wraps argon2.verify to record which encoded hashes ran and how many ran at once */
function watchArgon2(t: Test): { ran: string[]; maxInFlight: () => number } {
  const real = argon2.verify
  const ran: string[] = []
  let inFlight = 0
  let max = 0
  argon2.verify = async (digest: string, ...rest: unknown[]) => {
    ran.push(digest)
    max = Math.max(max, ++inFlight)
    try {
      return await (real as (...a: unknown[]) => Promise<boolean>)(digest, ...rest)
    } finally {
      inFlight--
    }
  }
  t.teardown(() => {
    argon2.verify = real
  })
  return { ran, maxInFlight: () => max }
}

t.test('signs in: 200 with the token, the user, and the refresh cookie with production attributes', async (t) => {
  const app = await buildApp(t)
  const user = await addUser(app, 'ann@example.com', PASSWORD)
  const r = await login(app, { email: 'ann@example.com', password: PASSWORD }, { 'user-agent': 'login-test/1.0' })
  t.equal(r.status, 200)
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(r.headers['cache-control'], 'no-store')
  t.equal(r.headers['x-content-type-options'], 'nosniff')
  t.same(Object.keys(r.body).sort(), ['data', 'success'])
  t.equal(r.body.success, true)
  t.same(Object.keys(r.body.data).sort(), ['accessToken', 'expiresIn', 'tokenType', 'user'])
  t.equal(r.body.data.tokenType, 'Bearer')
  t.equal(r.body.data.expiresIn, 900)
  t.same(r.body.data.user, { id: user.id, email: 'ann@example.com' })

  const cookies = setCookies(r)
  t.equal(cookies.length, 2, 'the refresh cookie, then the device cookie (test/http/device-cookie.test.ts)')
  const [nameValue, ...attrs] = cookies[0]!.split('; ')
  t.match(nameValue, /^__Host-authd_rt=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/)
  t.same(attrs.sort(), ['HttpOnly', 'Max-Age=2592000', 'Path=/', 'SameSite=Strict', 'Secure'])

  const claims = decode(r.body.data.accessToken).payload
  t.equal(claims.sub, user.id)
  const session = await app.store.getSession(claims.sid as string)
  t.ok(session, 'the token names a stored session')
  t.match(session, { userId: user.id, ip: '127.0.0.1', userAgent: 'login-test/1.0' })
  t.notOk(JSON.stringify(session).includes(nameValue!.split('=')[1]!), 'the store never holds the refresh token itself')

  const me = await call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${r.body.data.accessToken}` } })
  t.same(me.body, { success: true, data: { id: user.id, email: 'ann@example.com', mfaEnabled: false } })
})

t.test('with --dev the cookie is authd_rt and not Secure', async (t) => {
  const app = await buildApp(t, { dev: true })
  await addUser(app, 'ann@example.com', PASSWORD)
  const r = await login(app, { email: 'ann@example.com', password: PASSWORD })
  t.equal(r.status, 200)
  const [nameValue, ...attrs] = setCookies(r)[0]!.split('; ')
  t.match(nameValue, /^authd_rt=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/)
  t.same(attrs.sort(), ['HttpOnly', 'Max-Age=2592000', 'Path=/', 'SameSite=Strict'])
})

t.test('starts a new session on every login, even when an old refresh cookie is presented', async (t) => {
  const app = await buildApp(t)
  const user = await addUser(app, 'ann@example.com', PASSWORD)
  const jar = new CookieJar('__Host-authd_rt')
  const first = await login(app, { email: 'ann@example.com', password: PASSWORD })
  jar.take(first)
  const oldCookie = jar.value
  const second = await login(app, { email: 'ann@example.com', password: PASSWORD }, jar.header())
  t.equal(second.status, 200)
  jar.take(second)
  t.not(jar.value, oldCookie, 'a new refresh token')
  const sid1 = decode(first.body.data.accessToken).payload.sid
  const sid2 = decode(second.body.data.accessToken).payload.sid
  t.not(sid1, sid2, 'a new session')
  t.equal(await app.store.countSessions(user.id), 2, 'the old session is left alone')
})

t.test('answers 400 "Email and password are required" for missing, non-string or blank fields', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  await addUser(app, 'ann@example.com', PASSWORD)
  const cases: Array<[string, { json?: unknown; body?: string; headers?: Record<string, string> }]> = [
    ['an empty body', { body: '' }],
    ['an empty body with a JSON content type', { body: '', headers: { 'content-type': 'application/json' } }],
    ['an empty body with another content type', { body: '', headers: { 'content-type': 'text/plain' } }],
    ['an empty object', { json: {} }],
    ['no password', { json: { email: 'ann@example.com' } }],
    ['no email', { json: { password: PASSWORD } }],
    ['a numeric email', { json: { email: 42, password: PASSWORD } }],
    ['a numeric password', { json: { email: 'ann@example.com', password: 12345678 } }],
    ['a null password', { json: { email: 'ann@example.com', password: null } }],
    ['an array password', { json: { email: 'ann@example.com', password: [PASSWORD] } }],
    ['an object email', { json: { email: { $ne: null }, password: PASSWORD } }],
    ['a boolean password', { json: { email: 'ann@example.com', password: true } }],
    ['an empty email', { json: { email: '', password: PASSWORD } }],
    ['an empty password', { json: { email: 'ann@example.com', password: '' } }],
    ['a blank email', { json: { email: ' \t\n ', password: PASSWORD } }],
    ['a blank password', { json: { email: 'ann@example.com', password: '   ' } }],
    ['fields under other names', { json: { username: 'ann@example.com', pass: PASSWORD } }],
  ]
  const runs = app.hasher.runs
  for (const [name, opts] of cases) {
    const r = await call(app, 'POST', '/api/auth/login', opts)
    t.equal(r.status, 400, name)
    t.same(r.body, { success: false, message: 'Email and password are required' }, name)
    t.same(setCookies(r), [], name)
  }
  t.equal(app.hasher.runs, runs, 'no hash ran for malformed input')
})

t.test('a login whose body cannot be read is refused with its own answer, counted as invalid input, and hashes nothing', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  for (const [body, headers, status, message] of [
    ['{"email":', { 'content-type': 'application/json' }, 400, 'Invalid JSON body'],
    ['email=ann@example.com', { 'content-type': 'application/x-www-form-urlencoded' }, 415, 'Content-Type must be application/json'],
    [JSON.stringify({ email: 'ann@example.com', password: 'x'.repeat(20_000) }), { 'content-type': 'application/json' }, 413, 'Request body too large'],
  ] as const) {
    const r = await call(app, 'POST', '/api/auth/login', { body, headers })
    t.equal(r.status, status, message)
    t.same(r.body, { success: false, message })
  }
  const text = (await call(app, 'GET', '/metrics')).text
  t.match(text, /^authd_login_total\{outcome="invalid_input"\} 3$/m)
  t.equal(app.hasher.runs, 0, 'no hash ran')
})

t.test('answers 401 "Invalid email or password" for an unknown email, a wrong password, or a disabled user', async (t) => {
  const app = await buildApp(t, { env: ROOMY, argon2: 'configured' })
  await addUser(app, 'ann@example.com', PASSWORD)
  await addUser(app, 'dis@example.com', PASSWORD, { disabled: true })
  const cases: Array<[string, unknown]> = [
    ['unknown email', { email: 'nobody@example.com', password: PASSWORD }],
    ['wrong password', { email: 'ann@example.com', password: 'wrong horse battery' }],
    ['password differing in case', { email: 'ann@example.com', password: PASSWORD.toUpperCase() }],
    ['password with a trailing space', { email: 'ann@example.com', password: `${PASSWORD} ` }],
    ['disabled user, right password', { email: 'dis@example.com', password: PASSWORD }],
    ['disabled user, wrong password', { email: 'dis@example.com', password: 'wrong horse battery' }],
    ['an email too long to be a store key', { email: `${'a'.repeat(5000)}@example.com`, password: PASSWORD }],
    ['an email that is not an email', { email: 'not an email', password: PASSWORD }],
  ]
  const watch = watchArgon2(t)
  for (const [name, json] of cases) {
    await t.test(name, async (t) => {
      const runs = app.hasher.runs
      watch.ran.length = 0
      isInvalidCredentials(t, await login(app, json))
      t.equal(app.hasher.runs, runs + 1, 'exactly one argon2 verification ran')
      // the same work whatever the reason (unknown emails run the dummy): the same time
      t.equal(watch.ran.length, 1)
      t.same(parseHashParams(watch.ran[0]!), { memoryKib: 19456, timeCost: 2, parallelism: 1 }, 'at the configured parameters')
    })
  }
})

t.test('gives byte-identical bodies and headers for an unknown email and a wrong password', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  await addUser(app, 'ann@example.com', PASSWORD)
  await addUser(app, 'dis@example.com', PASSWORD, { disabled: true })
  const strip = (r: Reply): Record<string, unknown> => {
    const { date: _d, 'x-request-id': _id, ...rest } = r.headers
    return rest
  }
  const unknown = await login(app, { email: 'nobody@example.com', password: PASSWORD })
  const wrong = await login(app, { email: 'ann@example.com', password: 'wrong horse battery' })
  const disabled = await login(app, { email: 'dis@example.com', password: PASSWORD })
  t.equal(unknown.status, 401)
  t.equal(wrong.text, unknown.text)
  t.equal(disabled.text, unknown.text)
  t.same(strip(wrong), strip(unknown))
  t.same(strip(disabled), strip(unknown))
  t.same(Object.keys(wrong.headers).sort(), Object.keys(unknown.headers).sort(), 'the same header names, in full')
  t.ok(unknown.headers.date && unknown.headers['x-request-id'], 'only Date and x-request-id were set aside')
})

t.test('answers 429 "Too many login attempts" with Retry-After, without running argon2', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '2/15m' } })
  await addUser(app, 'ann@example.com', PASSWORD)
  for (let i = 0; i < 2; i++) t.equal((await login(app, { email: 'ann@example.com', password: 'wrong' })).status, 401)
  const runs = app.hasher.runs
  const r = await login(app, { email: 'ann@example.com', password: PASSWORD })
  t.equal(r.status, 429)
  t.same(r.body, { success: false, message: 'Too many login attempts' })
  t.match(r.headers['retry-after'], /^[1-9]\d*$/)
  t.ok(Number(r.headers['retry-after']) <= 900)
  t.equal(app.hasher.runs, runs, 'argon2 did not run')
})

t.test('maps case and Unicode variants of an email to one account', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  const user = await addUser(app, 'kate.kirk@example.com', PASSWORD)
  const plain = 'kate.kirk@example.com'
  const variant = fc.tuple(fc.array(fc.nat(4), { minLength: plain.length, maxLength: plain.length }), fc.constantFrom('', ' ', '\u3000', '\t')).map(([choices, pad]) => {
    let out = ''
    for (let i = 0; i < plain.length; i++) {
      const ch = plain[i]!
      const c = choices[i]!
      if (/[a-z]/.test(ch)) {
        const forms = [ch, ch.toUpperCase(), String.fromCodePoint(0xff41 + ch.charCodeAt(0) - 97), String.fromCodePoint(0xff21 + ch.charCodeAt(0) - 97)]
        if (ch === 'k') forms.push('\u212a')
        out += forms[c % forms.length]
      } else if (ch === '@' && c % 2 === 1) out += '\uff20'
      else out += ch
    }
    return pad + out + pad
  })
  const fixed = ['\u212aATE.\u212aIRK@EXAMPLE.COM', '\uff2b\uff41\uff54\uff45.kirk@example.com', ' Kate.Kirk\uff20Example.Com ']
  const seen: string[] = []
  await fc.assert(
    fc.asyncProperty(variant, async (email) => {
      seen.push(email)
      const r = await login(app, { email, password: PASSWORD })
      return r.status === 200 && r.body.data.user.id === user.id && r.body.data.user.email === plain
    }),
    { numRuns: 12, examples: fixed.map((e) => [e]) },
  )
  t.ok(seen.some((e) => e.includes('\u212a')), 'the KELVIN SIGN was among the variants')
  t.equal((await app.store.listUsers()).length, 1)
})

t.test('refuses a stored hash with absurd parameters without running it: 401 at once, the dummy ran instead', async (t) => {
  const app = await buildApp(t, { argon2: 'configured' })
  const good = await app.hasher.hash(PASSWORD)
  const absurd = good.replace('m=19456', 'm=2097152')
  t.not(absurd, good)
  await addUser(app, 'ann@example.com', PASSWORD, { passwordHash: absurd })
  const watch = watchArgon2(t)
  const runs = app.hasher.runs
  const started = performance.now()
  const r = await login(app, { email: 'ann@example.com', password: PASSWORD })
  const ms = performance.now() - started
  isInvalidCredentials(t, r)
  t.ok(ms < 2000, `answered in ${Math.round(ms)} ms`)
  t.equal(app.hasher.runs, runs + 1, 'one hash ran')
  t.equal(watch.ran.length, 1)
  t.not(watch.ran[0], absurd, 'not the absurd one')
  t.same(parseHashParams(watch.ran[0]!), { memoryKib: 19456, timeCost: 2, parallelism: 1 }, 'the dummy, at the configured parameters')
  t.equal((await app.store.getUserByEmail('ann@example.com'))!.passwordHash, absurd, 'and the record is not re-hashed')
})

t.test('re-hashes on login when the stored hash was made under other parameters', async (t) => {
  const app = await buildApp(t, { argon2: 'configured' })
  const old = await argon2.hash(PASSWORD, { type: argon2.argon2id, memoryCost: 32768, timeCost: 3, parallelism: 1 })
  const user = await addUser(app, 'ann@example.com', PASSWORD, { passwordHash: old })
  const r = await login(app, { email: 'ann@example.com', password: PASSWORD })
  t.equal(r.status, 200)
  const stored = (await app.store.getUser(user.id))!
  t.not(stored.passwordHash, old, 'the stored hash changed')
  t.same(parseHashParams(stored.passwordHash), { memoryKib: 19456, timeCost: 2, parallelism: 1 }, 'to the configured parameters')
  t.ok(await argon2.verify(stored.passwordHash, PASSWORD), 'and still verifies the same password')
  t.ok(stored.updatedAt >= user.updatedAt)
  t.equal((await login(app, { email: 'ann@example.com', password: PASSWORD })).status, 200, 'the next login works')
  t.equal((await app.store.getUser(user.id))!.passwordHash, stored.passwordHash, 'and does not re-hash again')
})

t.test('does not re-hash on a failed login', async (t) => {
  const app = await buildApp(t)
  const old = await argon2.hash(PASSWORD, { type: argon2.argon2id, memoryCost: 32768, timeCost: 3, parallelism: 1 })
  const user = await addUser(app, 'ann@example.com', PASSWORD, { passwordHash: old })
  isInvalidCredentials(t, await login(app, { email: 'ann@example.com', password: 'wrong horse battery' }))
  t.equal((await app.store.getUser(user.id))!.passwordHash, old)
})

t.test('runs at most two argon2 hashes at once under concurrent logins (one on two cores)', async (t) => {
  const app = await buildApp(t, { env: ROOMY, argon2: 'configured' })
  await addUser(app, 'ann@example.com', PASSWORD)
  const watch = watchArgon2(t)
  let maxPending = 0
  const sampler = setInterval(() => {
    maxPending = Math.max(maxPending, app.hasher.pending)
  }, 1)
  const replies = await Promise.all(
    Array.from({ length: 8 }, (_, i) => login(app, i % 2 === 0 ? { email: 'ann@example.com', password: `wrong ${i}` } : { email: `nobody${i}@example.com`, password: PASSWORD })),
  )
  clearInterval(sampler)
  t.same(
    replies.map((r) => r.status),
    Array(8).fill(401),
  )
  t.equal(watch.ran.length, 8)
  t.equal(watch.maxInFlight(), defaultHashConcurrency(), 'the queue width at a time')
  t.ok(maxPending > 2, `the others queued (up to ${maxPending} pending)`)
  t.equal(app.hasher.pending, 0)
})

t.test('answers 503 "Server busy" with Retry-After and no stack when the hash queue is full', async (t) => {
  const app = await buildApp(t, { env: ROOMY, hashConcurrency: 1, hashMaxQueue: 1, argon2: 'configured' })
  await addUser(app, 'ann@example.com', PASSWORD)
  const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => login(app, { email: `nobody${i}@example.com`, password: PASSWORD })))
  const busy = replies.filter((r) => r.status === 503)
  t.ok(busy.length >= 1, `${busy.length} refused`)
  t.ok(replies.filter((r) => r.status === 401).length >= 2, 'the running one and the queued one answered')
  t.same(replies.filter((r) => r.status !== 503 && r.status !== 401), [], 'nothing else')
  for (const r of busy) {
    t.same(r.body, { success: false, message: 'Server busy, try again shortly' })
    t.equal(r.headers['retry-after'], '1')
    t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
    t.notMatch(r.text, /Error|at \S+:\d+|\.ts|\.js/)
  }
  t.equal((await login(app, { email: 'ann@example.com', password: PASSWORD })).status, 200, 'fine again once the queue drains')
})

t.test('a login turned away by the full hash queue (503) is not counted as a failed attempt', async (t) => {
  // hashes five times the default cost: the queue stays full while the third login makes its way to it
  // (its round trips to a loaded database included)
  const app = await buildApp(t, { env: { ...ROOMY, AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '1/15m', AUTHD_PASSWORDS_TIME_COST: '10' }, hashConcurrency: 1, hashMaxQueue: 1 })
  await addUser(app, 'ann@example.com', PASSWORD)
  // one hash running and one queued: the queue is full
  const others = Promise.all([0, 1].map((i) => login(app, { email: `nobody${i}@example.com`, password: PASSWORD })))
  const deadline = Date.now() + 5_000
  while (app.hasher.pending < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1))
  const busy = await login(app, { email: 'ann@example.com', password: 'wrong-password' })
  t.equal(busy.status, 503, 'turned away while the queue is full')
  t.same((await others).map((r) => r.status), [401, 401])
  // with a limit of one failure, a counted 503 would make this a 429
  const first = await login(app, { email: 'ann@example.com', password: 'wrong-password' })
  t.equal(first.status, 401, 'the 503 used none of per_ip_email (1/15m)')
  const second = await login(app, { email: 'ann@example.com', password: 'wrong-password' })
  t.equal(second.status, 429, 'the failure that was checked counts')
})

t.test('counts login outcomes in the metrics', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '3/15m' } })
  await addUser(app, 'ann@example.com', PASSWORD)
  await addUser(app, 'dis@example.com', PASSWORD, { disabled: true })
  await login(app, { email: 'ann@example.com', password: PASSWORD })
  await login(app, { email: 'nobody@example.com', password: PASSWORD })
  await login(app, { email: 'dis@example.com', password: PASSWORD })
  await login(app, {})
  for (let i = 0; i < 4; i++) await login(app, { email: 'ann@example.com', password: 'wrong' })
  const text = (await call(app, 'GET', '/metrics')).text
  t.match(text, /^authd_login_total\{outcome="success"\} 1$/m)
  // unknown email, disabled user and wrong password are one outcome: /metrics tells no email's existence
  t.match(text, /^authd_login_total\{outcome="invalid_credentials"\} 5$/m)
  t.match(text, /^authd_login_total\{outcome="invalid_input"\} 1$/m)
  t.match(text, /^authd_login_total\{outcome="rate_limited"\} 1$/m)
  t.match(text, /^authd_rate_limited_total\{limit="login.per_ip_email"\} 1$/m, 'named after the limit that refused it')
  t.match(text, /^authd_rate_limited_total\{limit="login.per_email"\} 0$/m, 'another limit: there, at 0')
  t.match(text, /^authd_http_request_duration_seconds_count\{route="\/api\/auth\/login",method="POST",status="401"\} 5$/m)
})

t.test('an email holding a NUL or another control character is an unknown email: 401 on either store, never a 500', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  await addUser(app, 'ada@example.com', PASSWORD)
  for (const email of ['ada\u0000@example.com', 'a\u0000b@example.com', '\u0000', 'ada@example.com\u0000', 'ada\u0007@example.com', 'ada\u009f@example.com']) {
    const r = await login(app, { email, password: PASSWORD })
    t.equal(r.status, 401, JSON.stringify(email))
    t.same(r.body, { success: false, message: 'Invalid email or password' })
  }
  t.notOk(app.logs.lines.some((l) => Number(l.level) >= 50), 'nothing logged as an error')
  t.equal((await login(app, { email: 'ada@example.com', password: PASSWORD })).status, 200, 'the user itself still signs in')
})

t.test('logins of one user at once, right after a change of parameters: every one signs in, whichever re-hash lands first (a re-hash is no password change)', async (t) => {
  const app = await buildApp(t, { env: ROOMY })
  const old = await argon2.hash(PASSWORD, { type: argon2.argon2id, memoryCost: 2048, timeCost: 2, parallelism: 1 })
  const user = await addUser(app, 'ann@example.com', PASSWORD, { passwordHash: old })
  for (const n of [2, 4]) {
    await app.store.updateUser(user.id, (u) => ({ ...u, passwordHash: old }))
    const rs = await Promise.all(Array.from({ length: n }, (_, i) => login(app, { email: 'ann@example.com', password: PASSWORD }, { 'user-agent': `device ${i}` })))
    t.same(rs.map((r) => r.status), Array(n).fill(200), `${n} at once: all 200`)
    t.not((await app.store.getUser(user.id))!.passwordHash, old, 're-hashed')
  }
  const failures = (await app.store.auditEvents({ limit: 100 })).filter((e) => e.event === 'login.failure')
  t.same(failures, [], 'no login.failure recorded for a right password')
})
