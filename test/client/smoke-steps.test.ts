/**
 * The smoke steps (src/client/smoke-steps.ts; README, "Administer with authctl", Smoke): login →
 * me → refresh → me → logout → refresh with the token that was live before logout, which must
 * answer 401. In process: against authd itself (an in-process app on 127.0.0.1:0), and against a
 * double on 127.0.0.1:0 for what authd never does. Each step's own decisions: the first failure
 * named with why, the rest skipped, a Retry-After shown, no answer at all naming the URL. authctl's
 * printing of the result is test/cli/smoke.test.ts's.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { describeNetworkError, runSmoke, SMOKE_STEP_NAMES, type SmokeResult, type SmokeStep } from '../../src/client/smoke-steps.js'
import { addUser, startServer } from '../helpers/app.js'
import { fakeAuthd, type Misbehave } from '../helpers/fake-authd.js'

const PASSWORD = 'correct horse battery'
const EMAIL = 'smoke@example.com'

const summary = (r: SmokeResult): Array<[string, number | null, SmokeStep['outcome']]> => r.steps.map((s) => [s.name, s.status, s.outcome])
const skippedAfter = (r: SmokeResult, index: number): boolean => r.steps.slice(index).every((s) => s.outcome === 'skipped' && s.status === null && s.error === null && s.ms === 0)

t.test('against authd: all six steps pass, the last refresh refused with the cookie that was live before logout', async (t) => {
  const app = await startServer(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  const r = await runSmoke({ url: `${app.url}//`, email: EMAIL, password: PASSWORD })
  t.equal(r.ok, true)
  t.equal(r.url, app.url, 'trailing slashes dropped from the URL')
  t.equal(r.email, EMAIL)
  t.equal(r.failedStep, null)
  t.same(summary(r), [
    ['login', 200, 'passed'],
    ['me', 200, 'passed'],
    ['refresh', 200, 'passed'],
    ['me_refreshed', 200, 'passed'],
    ['logout', 200, 'passed'],
    ['refresh_after_logout', 401, 'passed'],
  ])
  t.same(
    r.steps.map((s) => [s.index, s.method, s.path, s.expectedStatus]),
    [
      [1, 'POST', '/api/auth/login', 200],
      [2, 'GET', '/api/auth/me', 200],
      [3, 'POST', '/api/auth/refresh', 200],
      [4, 'GET', '/api/auth/me', 200],
      [5, 'POST', '/api/auth/logout', 200],
      [6, 'POST', '/api/auth/refresh', 401],
    ],
  )
  t.ok(r.steps.every((s) => s.error === null && s.retryAfter === null && Number.isInteger(s.ms) && s.ms >= 0))
  t.ok(Number.isInteger(r.totalMs) && r.totalMs >= 0)
  t.notMatch(JSON.stringify(r), PASSWORD, 'the password is not in the result')
  t.same(await app.store.listSessions(user.id), [], 'the smoke run left no live session behind')
})

t.test('reports each step through its callbacks, in order, as it runs, skipped ones included', async (t) => {
  const url = await fakeAuthd(t, () => undefined)
  const events: string[] = []
  const result = await runSmoke({
    url,
    email: EMAIL,
    password: 'pw',
    onStart: (s) => events.push(`start ${s.index} ${s.name}`),
    onStep: (s) => events.push(`done ${s.index} ${s.name} ${s.outcome}`),
  })
  // the double does not end sessions on logout, so the last step must catch it
  t.equal(result.ok, false)
  t.equal(result.failedStep, 'refresh_after_logout')
  t.equal(result.steps[5]!.error, 'expected 401, got 200')
  t.same(
    events,
    SMOKE_STEP_NAMES.flatMap((name, i) => [`start ${i + 1} ${name}`, `done ${i + 1} ${name} ${i === 5 ? 'failed' : 'passed'}`]),
  )

  const failing = await fakeAuthd(t, (p) => (p === '/api/auth/me' ? [500, { success: false, message: 'Internal server error' }] : undefined))
  const later: string[] = []
  await runSmoke({ url: failing, email: EMAIL, password: 'pw', onStart: (s) => later.push(`start ${s.name}`), onStep: (s) => later.push(`${s.outcome} ${s.name}`) })
  t.same(later, ['start login', 'passed login', 'start me', 'failed me', 'skipped refresh', 'skipped me_refreshed', 'skipped logout', 'skipped refresh_after_logout'], 'a skipped step is reported, never started')
})

t.test('against authd: a wrong password fails step 1 with authd’s message, the rest skipped; then the login limit’s 429 shows its Retry-After', async (t) => {
  const app = await startServer(t, { now: () => Date.UTC(2026, 0, 1), env: { AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '1/1h' } })
  await addUser(app, EMAIL, PASSWORD)
  const wrong = await runSmoke({ url: app.url, email: EMAIL, password: 'not the password' })
  t.equal(wrong.ok, false)
  t.equal(wrong.failedStep, 'login')
  t.match(wrong.steps[0], { status: 401, outcome: 'failed', error: 'expected 200, got 401: Invalid email or password', retryAfter: null })
  t.ok(skippedAfter(wrong, 1), 'steps 2-6 skipped')

  // that failure spent the email's budget of one an hour
  const r = await runSmoke({ url: app.url, email: EMAIL, password: PASSWORD })
  const login = r.steps[0]!
  t.equal(login.status, 429)
  t.equal(login.retryAfter, '3600', 'the whole window: the clock stands still')
  t.equal(login.error, 'expected 200, got 429: Too many login attempts (Retry-After: 3600 s)')
  t.equal(r.failedStep, 'login')
})

t.test('a Retry-After as an HTTP date is shown as sent; a failure without one adds nothing', async (t) => {
  const url = await fakeAuthd(t, (p) =>
    p === '/api/auth/login' ? [429, { success: false, message: 'Too many login attempts' }, { 'retry-after': '37' }] : undefined,
  )
  const r = await runSmoke({ url, email: EMAIL, password: 'pw' })
  t.match(r.steps[0], { status: 429, outcome: 'failed', retryAfter: '37', error: 'expected 200, got 429: Too many login attempts (Retry-After: 37 s)' })
  t.equal(r.steps[1]!.retryAfter, null, 'a skipped step has none')

  const dated = await fakeAuthd(t, (p) =>
    p === '/api/auth/refresh' ? [503, { success: false, message: 'Server busy, try again shortly' }, { 'retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT' }] : undefined,
  )
  const busy = await runSmoke({ url: dated, email: EMAIL, password: 'pw' })
  t.match(busy.steps[2], { retryAfter: 'Wed, 21 Oct 2026 07:28:00 GMT', error: 'expected 200, got 503: Server busy, try again shortly (Retry-After: Wed, 21 Oct 2026 07:28:00 GMT)' })

  const plain = await fakeAuthd(t, (p) => (p === '/api/auth/me' ? [502, 'Bad Gateway'] : undefined))
  const proxy = await runSmoke({ url: plain, email: EMAIL, password: 'pw' })
  t.match(proxy.steps[1], { status: 502, retryAfter: null, error: 'expected 200, got 502' }, 'a body that is not JSON: the status alone')
})

t.test('each step fails on what it checks beyond the status, and the rest is skipped', async (t) => {
  const cases: Array<[string, Misbehave, string, string]> = [
    ['a login whose body is not the envelope', (p) => (p === '/api/auth/login' ? [200, 'welcome'] : undefined), 'login', 'the body is not {success:true, data:{…}}'],
    ['a login that says success: false', (p) => (p === '/api/auth/login' ? [200, { success: false, data: {} }] : undefined), 'login', 'the body is not {success:true, data:{…}}'],
    ['a login without a token', (p) => (p === '/api/auth/login' ? [200, { success: true, data: { user: { id: 'u1' } } }] : undefined), 'login', 'no accessToken in the body'],
    ['a login with an empty token', (p) => (p === '/api/auth/login' ? [200, { success: true, data: { accessToken: '', user: { id: 'u1' } } }, { 'set-cookie': 'rt=a' }] : undefined), 'login', 'no accessToken in the body'],
    ['a login without a user id', (p) => (p === '/api/auth/login' ? [200, { success: true, data: { accessToken: 'x' } }, { 'set-cookie': 'rt=a' }] : undefined), 'login', 'no user id in the body'],
    ['a login without a cookie', (p) => (p === '/api/auth/login' ? [200, { success: true, data: { accessToken: 'x', user: { id: 'u1' } } }] : undefined), 'login', 'no refresh cookie was set'],
    ['a me that answers for another user', (p) => (p === '/api/auth/me' ? [200, { success: true, data: { id: 'someone-else', email: 'x@example.com' } }] : undefined), 'me', '/me answered for another user'],
    ['a refresh that fails', (p) => (p === '/api/auth/refresh' ? [401, { success: false, message: 'Invalid or expired refresh token' }] : undefined), 'refresh', 'expected 200, got 401: Invalid or expired refresh token'],
    [
      'a refresh that does not rotate the cookie',
      (p) => (p === '/api/auth/refresh' ? [200, { success: true, data: { accessToken: 'token9', user: { id: 'u1' } } }, { 'set-cookie': 'rt=r1; Path=/' }] : undefined),
      'refresh',
      'the refresh cookie was not rotated',
    ],
    [
      'a refresh that clears the cookie',
      (p) => (p === '/api/auth/refresh' ? [200, { success: true, data: { accessToken: 'token9', user: { id: 'u1' } } }, { 'set-cookie': 'rt=; Path=/; Max-Age=0' }] : undefined),
      'refresh',
      'the refresh cookie was not rotated',
    ],
    ['a me after refresh for another user', (() => { let n = 0; return (p: string) => (p === '/api/auth/me' && ++n === 2 ? [200, { success: true, data: { id: 'u2' } }] : undefined) })() as Misbehave, 'me_refreshed', '/me answered for another user'],
    ['a logout that errs', (p) => (p === '/api/auth/logout' ? [500, { success: false, message: 'Internal server error' }] : undefined), 'logout', 'expected 200, got 500: Internal server error'],
    ['a logout whose body is not the envelope', (p) => (p === '/api/auth/logout' ? [200, '{}'] : undefined), 'logout', 'the body is not {success:true, data:{…}}'],
  ]
  for (const [name, misbehave, step, error] of cases) {
    const url = await fakeAuthd(t, misbehave)
    const r = await runSmoke({ url, email: EMAIL, password: 'pw' })
    t.equal(r.failedStep, step, name)
    const failed = r.steps.find((s) => s.outcome === 'failed')!
    t.equal(failed.error, error, name)
    t.ok(skippedAfter(r, failed.index), `${name}: the rest is skipped`)
  }
})

t.test('the refresh after logout sends the cookie that was live before it, whatever logout set', async (t) => {
  const seen: string[] = []
  const url = await fakeAuthd(t, (p, req) => {
    if (p === '/api/auth/refresh') seen.push(req.headers.cookie ?? '')
    return undefined
  })
  await runSmoke({ url, email: EMAIL, password: 'pw' })
  t.same(seen, ['rt=r1', 'rt=r2'], 'the login’s cookie, then the refreshed one again after logout cleared it')
})

t.test('no answer at all: connection refused names the URL; a silent server is given up after the timeout', async (t) => {
  // a port that was just let go: nothing listens there
  const gone = createServer()
  await new Promise<void>((r) => gone.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(gone.address() as AddressInfo).port}`
  await new Promise<void>((r) => gone.close(() => r()))
  const refused = await runSmoke({ url, email: EMAIL, password: 'pw' })
  t.match(refused.steps[0], { status: null, outcome: 'failed', error: `connection refused at ${url} (is authd running at this URL?)` })
  t.equal(refused.failedStep, 'login')
  t.ok(skippedAfter(refused, 1))

  const silent = createServer(() => {}) // never answers
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
  t.teardown(() => {
    silent.closeAllConnections()
    return new Promise<void>((r) => silent.close(() => r()))
  })
  const r = await runSmoke({ url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, email: EMAIL, password: 'pw', timeoutMs: 150 })
  t.match(r.steps[0], { status: null, outcome: 'failed', error: 'no response within 150 ms' })
})

t.test('network errors name the URL: host not found, connection refused, a timeout, anything else', async (t) => {
  // (no name is looked up here: the errors are those undici gives, as objects)
  const url = 'https://auth.example.com'
  t.equal(describeNetworkError(Object.assign(new Error('getaddrinfo ENOTFOUND auth.example.com'), { code: 'ENOTFOUND' }), 5000, url), 'host not found: auth.example.com (in https://auth.example.com)')
  t.equal(describeNetworkError(Object.assign(new Error('fetch failed'), { cause: { code: 'EAI_AGAIN' } }), 5000, url), 'host not found: auth.example.com (in https://auth.example.com)')
  t.equal(describeNetworkError({ code: 'ENOTFOUND' }, 5000, 'not a url'), 'host not found: not a url (in not a url)', 'a URL that does not parse is named whole')
  t.equal(describeNetworkError({ code: 'ECONNREFUSED' }, 5000, url), 'connection refused at https://auth.example.com (is authd running at this URL?)')
  t.equal(describeNetworkError({ cause: { code: 'ECONNREFUSED' } }, 5000, url), 'connection refused at https://auth.example.com (is authd running at this URL?)', 'the code on the cause')
  for (const code of ['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']) t.equal(describeNetworkError({ code }, 750, url), 'no response within 750 ms', code)
  t.equal(describeNetworkError(new Error('socket hang up'), 5000, url), 'request to https://auth.example.com failed: socket hang up')
  t.equal(describeNetworkError('weird', 5000, url), 'request to https://auth.example.com failed: weird', 'not even an error')
})

t.test('an https URL for a plain-HTTP port: one line that says TLS failed, not OpenSSL text', async (t) => {
  const plain = createServer((_req, res) => res.end('{}'))
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r))
  t.teardown(() => plain.close())
  const url = `https://127.0.0.1:${(plain.address() as AddressInfo).port}`
  const r = await runSmoke({ url, email: EMAIL, password: 'pw', timeoutMs: 2000 })
  const error = (r.steps[0] as { error?: string }).error ?? ''
  t.match(error, new RegExp(`^TLS failed at ${url.replace(/\./g, '\\.')} \\(ERR_SSL_[A-Z_]+\\): does that port serve https\\?$`))
  t.notMatch(error, /\n/, 'one line')
  t.equal(describeNetworkError(new Error('first line\n  second line'), 5000, url), `request to ${url} failed: first line`, "a message's first line")
})

t.test('a run that fails after its login signs that session out: the login cookie is sent to logout once, and nothing of it is reported', async (t) => {
  const logouts: string[] = []
  const url = await fakeAuthd(t, (path, req) => {
    if (path === '/api/auth/logout') logouts.push(req.headers.cookie ?? '')
    return path === '/api/auth/me' ? [500, { success: false, message: 'Internal server error' }] : undefined
  })
  const r = await runSmoke({ url, email: EMAIL, password: 'pw' })
  t.equal(r.failedStep, 'me')
  t.same(summary(r).map(([name, , outcome]) => [name, outcome]), [
    ['login', 'passed'],
    ['me', 'failed'],
    ['refresh', 'skipped'],
    ['me_refreshed', 'skipped'],
    ['logout', 'skipped'],
    ['refresh_after_logout', 'skipped'],
  ])
  t.same(logouts, ['rt=r1'], "the login's session signed out")
  // the double does not end sessions: the last step fails, after the logout step passed
  const late = await runSmoke({ url: await fakeAuthd(t, (path, req) => (path === '/api/auth/logout' ? (logouts.push(req.headers.cookie ?? ''), undefined) : undefined)), email: EMAIL, password: 'pw' })
  t.equal(late.failedStep, 'refresh_after_logout')
  t.equal(logouts.length, 2, 'a run whose logout step passed signs out once, in that step')
})

t.test('--timeout bounds the whole request: a server that trickles its body is given up after it', async (t) => {
  const trickle = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.write('{"success":true,')
    // a byte every 50 ms, for far longer than the timeout: each gap is inside undici's own timeouts
    const timer = setInterval(() => res.write(' '), 50)
    res.on('close', () => clearInterval(timer))
    setTimeout(() => {
      clearInterval(timer)
      res.end('"data":{}}')
    }, 5000).unref()
  })
  await new Promise<void>((r) => trickle.listen(0, '127.0.0.1', r))
  t.teardown(() => {
    trickle.closeAllConnections()
    return new Promise<void>((r) => trickle.close(() => r()))
  })
  const started = performance.now()
  const r = await runSmoke({ url: `http://127.0.0.1:${(trickle.address() as AddressInfo).port}`, email: EMAIL, password: 'pw', timeoutMs: 300 })
  t.match(r.steps[0], { name: 'login', status: null, outcome: 'failed', error: 'no response within 300 ms' })
  t.ok(performance.now() - started < 2000, `given up well before the body ended (${Math.round(performance.now() - started)} ms)`)
})
