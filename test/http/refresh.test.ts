/**
 * POST /api/auth/refresh, injected into the handler, with a cookie jar (README, "Call the API"): rotation,
 * reuse detection and its grace, concurrency, expiry, every status and message.
 */
import { createHash } from 'node:crypto'
import t, { type Test } from 'tap'
import { addUser, ageLimits, call, CookieJar, retryAfterIs, buildApp, openTestStore, type Reply, type TestApp, type Target } from '../helpers/app.js'

const EMAIL = 'rita@example.com'
const PASSWORD = 'saffron-heron-77'
const COOKIE = '__Host-authd_rt'
const CLEARED = `${COOKIE}=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict`

const sha256 = (s: string): string => createHash('sha256').update(s).digest('base64url')

function setCookies(reply: Reply): string[] {
  const sc = reply.headers['set-cookie']
  return sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]
}

/** A clock the test moves; starts at a fixed wall time */
function clock() {
  let now = 1_700_000_000_000
  return { now: () => now, advance: (ms: number) => (now += ms) }
}

async function login(app: TestApp, jar: CookieJar, email = EMAIL, password = PASSWORD): Promise<Reply> {
  const res = await call(app, 'POST', '/api/auth/login', { json: { email, password } })
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`)
  jar.take(res)
  return res
}

const refreshWith = (app: TestApp, token: string | undefined, headers: Record<string, string> = {}): Promise<Reply> =>
  call(app, 'POST', '/api/auth/refresh', { headers: { ...(token === undefined ? {} : { cookie: `${COOKIE}=${token}` }), ...headers } })

const me = (app: TestApp, accessToken: string): Promise<Reply> =>
  call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${accessToken}` } })

const tokenOf = (reply: Reply): string => {
  const jar = new CookieJar(COOKIE)
  jar.take(reply)
  if (jar.value === undefined) throw new Error('no refresh cookie in the reply')
  return jar.value
}

function sessionIdOf(accessToken: string): string {
  return JSON.parse(Buffer.from(accessToken.split('.')[1]!, 'base64url').toString('utf8')).sid as string
}

/**
 * A server on a clock the test moves, with the user signed in once: `first` is that login's
 * reply, `sid` its session, `rt0` its refresh token (also in `jar`)
 */
async function signedIn(t: Test, env: Record<string, string> = {}) {
  const c = clock()
  const app = await buildApp(t, { now: c.now, env })
  await addUser(app, EMAIL, PASSWORD)
  const jar = new CookieJar(COOKIE)
  const first = await login(app, jar)
  return { c, app, jar, first, sid: sessionIdOf(first.body.data.accessToken), rt0: jar.value! }
}

t.test('rotates on every use: a new cookie with the same attributes, and the old token is used', async (t) => {
  const app = await buildApp(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  const jar = new CookieJar(COOKIE)
  const first = await login(app, jar)
  const rt0 = jar.value!

  const res = await call(app, 'POST', '/api/auth/refresh', { headers: jar.header() })
  t.equal(res.status, 200)
  t.equal(res.headers['cache-control'], 'no-store')
  t.same(Object.keys(res.body.data).sort(), ['accessToken', 'expiresIn', 'tokenType', 'user'])
  t.equal(res.body.data.tokenType, 'Bearer')
  t.equal(res.body.data.expiresIn, 900)
  t.same(res.body.data.user, { id: user.id, email: EMAIL })
  t.equal(sessionIdOf(res.body.data.accessToken), sessionIdOf(first.body.data.accessToken), 'same session')
  const cookies = setCookies(res)
  t.equal(cookies.length, 1)
  const [nameValue, ...attrs] = cookies[0]!.split('; ')
  t.match(nameValue, new RegExp(`^${COOKIE}=[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}$`))
  t.same(attrs.sort(), ['HttpOnly', 'Max-Age=2592000', 'Path=/', 'SameSite=Strict', 'Secure'].sort())
  jar.take(res)
  t.not(jar.value, rt0, 'a new token')
  t.equal((await me(app, res.body.data.accessToken)).status, 200)

  const session = (await app.store.getSession(sessionIdOf(first.body.data.accessToken)))!
  t.equal(session.generation, 1)
  t.equal(session.refreshHash, sha256(jar.value!), 'the store holds the hash of the live token')
  const record = JSON.stringify(await app.store.listSessions())
  t.notOk(record.includes(rt0) || record.includes(jar.value!), 'and never a token itself')
})

t.test('RT0→RT1→RT2→RT3, then RT0 again ends the session: every token and its access tokens', async (t) => {
  const { c, app, jar, first, sid } = await signedIn(t)
  const tokens = [jar.value!]
  const access = [first.body.data.accessToken as string]
  for (let i = 1; i <= 3; i++) {
    const res = await refreshWith(app, tokens[i - 1])
    t.equal(res.status, 200, `RT${i - 1} → RT${i}`)
    tokens.push(tokenOf(res))
    access.push(res.body.data.accessToken)
  }
  t.equal(new Set(tokens).size, 4, 'four distinct tokens')
  t.equal((await me(app, access[3]!)).status, 200)

  c.advance(10_001) // past the reuse grace of every rotation
  const reuse = await refreshWith(app, tokens[0])
  t.equal(reuse.status, 401)
  t.same(reuse.body, { success: false, message: 'Invalid or expired refresh token' })
  t.same(setCookies(reuse), [CLEARED], 'the cookie is cleared')
  t.equal(await app.store.getSession(sid), undefined, 'the session is gone')

  for (const i of [3, 2, 1]) {
    const res = await refreshWith(app, tokens[i])
    t.equal(res.status, 401, `RT${i} is refused after the reuse`)
    t.same(res.body, { success: false, message: 'Invalid or expired refresh token' })
  }
  for (const [i, token] of access.entries()) {
    const res = await me(app, token)
    t.equal(res.status, 401, `access token ${i} of the session is refused by /me`)
    t.same(res.body, { success: false, message: 'Invalid or expired access token' })
  }
})

t.test('within the reuse grace the same successor comes back; after it, reuse revokes', async (t) => {
  const { c, app, rt0 } = await signedIn(t)
  const rt1 = tokenOf(await refreshWith(app, rt0))

  c.advance(9_000)
  const again = await refreshWith(app, rt0)
  t.equal(again.status, 200, 'a second tab presenting RT0 9 s later')
  t.equal(tokenOf(again), rt1, 'gets the same successor')
  c.advance(1_000)
  const atEdge = await refreshWith(app, rt0)
  t.equal(atEdge.status, 200, 'exactly at the 10 s grace still answers')
  t.equal(tokenOf(atEdge), rt1)
  t.equal((await me(app, atEdge.body.data.accessToken)).status, 200)

  // RT1 is still the live token: the grace answers did not rotate anything
  const rt2 = tokenOf(await refreshWith(app, rt1))
  t.not(rt2, rt1)
  c.advance(10_001)
  const late = await refreshWith(app, rt1)
  t.equal(late.status, 401, 'RT1 presented 10.001 s after its rotation is a reuse')
  t.same(setCookies(late), [CLEARED])
  t.equal((await refreshWith(app, rt2)).status, 401, 'and the session ended with it')
})

t.test('within the grace of its own rotation, a token several rotations old gets the live token; after it, reuse', async (t) => {
  // a page reloaded twice while a request with the first cookie was still on its way
  const { c, app, rt0 } = await signedIn(t)
  const rt1 = tokenOf(await refreshWith(app, rt0))
  c.advance(3_000)
  const rt2 = tokenOf(await refreshWith(app, rt1))
  c.advance(7_000) // rt0 was replaced 10 s ago, rt1 7 s ago
  const late = await refreshWith(app, rt0)
  t.equal(late.status, 200, 'RT0, two rotations back, at the edge of its grace')
  t.equal(tokenOf(late), rt2, 'gets the live token, the one the other requests got')
  t.equal((await refreshWith(app, rt1)).status, 200)
  c.advance(1)
  t.equal((await refreshWith(app, rt0)).status, 401, 'RT0 past its grace: a reuse')
  t.equal((await refreshWith(app, rt2)).status, 401, 'the live token died with the session')
})

t.test('a used token is recognised however many rotations ago it was used: it ends the session', async (t) => {
  const { c, app, jar, sid } = await signedIn(t, { AUTHD_RATE_LIMIT_REFRESH_PER_IP: '1000/5m' })
  const tokens = [jar.value!]
  for (let i = 0; i < 40; i++) {
    c.advance(60_000)
    tokens.push(tokenOf(await refreshWith(app, tokens[tokens.length - 1])))
  }
  t.equal((await app.store.getSession(sid))!.generation, 40)
  // a cookie stolen at login and replayed hours later, 40 rotations on
  const replay = await refreshWith(app, tokens[0])
  t.equal(replay.status, 401)
  t.same(setCookies(replay), [CLEARED])
  t.equal(await app.store.getSession(sid), undefined, 'the session is ended')
  t.equal((await refreshWith(app, tokens[40])).status, 401, 'its live token with it')

  // a token of the right shape and an unknown family touches nothing
  const other = new CookieJar(COOKIE)
  await login(app, other)
  const sid2 = (await app.store.listSessions())[0]!.id
  const forged = `${'A'.repeat(22)}.${other.value!.slice(23)}`
  t.equal((await refreshWith(app, forged)).status, 401)
  t.ok(await app.store.getSession(sid2), 'a stranger cannot end a session by guessing')
})

t.test('logout with any token the session had ends it; {"all":true} only with the live one or one replaced within the grace', async (t) => {
  const { c, app, sid, rt0 } = await signedIn(t)
  const other = new CookieJar(COOKIE)
  await login(app, other) // the same user, another device
  let live = rt0
  for (let i = 0; i < 35; i++) {
    c.advance(60_000)
    live = tokenOf(await refreshWith(app, live))
  }
  const logout = (url: Target, token: string, all: boolean) => call(url, 'POST', '/api/auth/logout', { json: all ? { all: true } : {}, headers: { cookie: `${COOKIE}=${token}` } })
  const out = await logout(app, rt0, true)
  t.equal(out.status, 200)
  t.equal(await app.store.getSession(sid), undefined, 'the login token, 35 rotations old, still names its session')
  t.equal((await refreshWith(app, live)).status, 401)
  t.equal((await refreshWith(app, other.value)).status, 200, 'but a used token cannot sign the user out everywhere')

  const { app: app2, rt0: live2 } = await signedIn(t)
  const device = new CookieJar(COOKIE)
  await login(app2, device)
  t.equal((await logout(app2, live2, true)).status, 200)
  t.equal((await app2.store.listSessions()).length, 0, 'the live token can')

  // a token replaced a moment ago (its response lost): refresh would answer it with the live one
  const { c: c3, app: app3, rt0: first3 } = await signedIn(t)
  await login(app3, new CookieJar(COOKIE))
  c3.advance(1_000)
  t.equal((await refreshWith(app3, first3)).status, 200)
  t.equal((await app3.store.listSessions()).length, 2)
  t.equal((await logout(app3, first3, true)).status, 200)
  t.equal((await app3.store.listSessions()).length, 0, 'a token replaced within the grace can')
})

t.test('20 concurrent refreshes with one token leave exactly one live successor', async (t) => {
  const app = await buildApp(t, { now: clock().now }) // still: all twenty fall inside the grace however slow the machine
  await addUser(app, EMAIL, PASSWORD)
  const jar = new CookieJar(COOKIE)
  const first = await login(app, jar)
  const sid = sessionIdOf(first.body.data.accessToken)
  const replies = await Promise.all(Array.from({ length: 20 }, () => refreshWith(app, jar.value)))
  const ok = replies.filter((r) => r.status === 200)
  t.ok(ok.length >= 1, `${ok.length} answered 200`)
  t.ok(replies.every((r) => r.status === 200 || r.status === 401), 'only 200 or 401')
  const successors = new Set(ok.map(tokenOf))
  t.equal(successors.size, 1, 'every 200 carries the same successor')
  const session = await app.store.getSession(sid)
  t.ok(session, 'the session lives (all within the grace)')
  t.equal(session!.generation, 1, 'rotated exactly once')
  const [live] = successors
  t.equal(session!.refreshHash, sha256(live!), 'the store holds that successor and no other')
  t.equal((await refreshWith(app, live)).status, 200, 'and it works')
})

t.test('with no grace, concurrent refreshes never leave two live successors', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_SESSIONS_REUSE_GRACE: '0s' } })
  await addUser(app, EMAIL, PASSWORD)
  const jar = new CookieJar(COOKIE)
  const first = await login(app, jar)
  const sid = sessionIdOf(first.body.data.accessToken)
  const replies = await Promise.all(Array.from({ length: 20 }, () => refreshWith(app, jar.value)))
  const successors = new Set(replies.filter((r) => r.status === 200).map(tokenOf))
  t.ok(successors.size <= 1, `${successors.size} distinct successors`)
  const session = await app.store.getSession(sid)
  const live = [...successors].filter((tok) => session !== undefined && session.refreshHash === sha256(tok))
  if (session !== undefined) {
    t.equal(live.length, 1, 'the live successor is the one answered')
    t.equal(session.generation, 1)
  } else {
    t.pass('a concurrent presentation counted as reuse and ended the session')
    for (const tok of successors) t.equal((await refreshWith(app, tok)).status, 401)
  }
})

t.test('a reuse is logged at warn with session id and ip, never the token, and counted', async (t) => {
  const { c, app, sid, rt0 } = await signedIn(t)
  const rt1 = tokenOf(await refreshWith(app, rt0))
  const rt2 = tokenOf(await refreshWith(app, rt1))
  const metric = async (): Promise<number> => {
    const text = (await call(app, 'GET', '/metrics')).text
    const m = /^authd_refresh_total\{outcome="reuse"\} (\d+)$/m.exec(text)
    return m === null ? 0 : Number(m[1])
  }
  t.equal(await metric(), 0)
  c.advance(10_001) // past the reuse grace
  t.equal((await refreshWith(app, rt0)).status, 401)
  t.equal(await metric(), 1, 'authd_refresh_total{outcome="reuse"} went up by one')

  const warnings = app.logs.lines.filter((l) => l.level === 'warn')
  t.equal(warnings.length, 1)
  t.match(warnings[0], { event: 'refresh_reuse', sessionId: sid, ip: '127.0.0.1' })
  const text = app.logs.text()
  for (const tok of [rt0, rt1, rt2]) t.notOk(text.includes(tok), 'no refresh token in the log')
  t.notOk(text.includes(sha256(rt0)), 'nor its hash')
  t.notOk(text.includes(rt0.slice(0, 22)) || text.includes(sha256(rt0.slice(0, 22))), 'nor its family, nor the hash of that')

  t.equal((await refreshWith(app, rt2)).status, 401, 'a token of the ended session')
  t.equal(await metric(), 1, 'is not a second reuse: the session is simply unknown now')
})

t.test('401 Refresh token is required without a cookie', async (t) => {
  const app = await buildApp(t)
  for (const headers of <Array<Record<string, string>>>[{}, { cookie: 'other=1' }, { cookie: `${COOKIE}=` }]) {
    const res = await call(app, 'POST', '/api/auth/refresh', { headers })
    t.equal(res.status, 401, JSON.stringify(headers))
    t.same(res.body, { success: false, message: 'Refresh token is required' })
  }
})

t.test('401 Invalid or expired refresh token for junk and unknown tokens, with the cookie cleared', async (t) => {
  const app = await buildApp(t)
  for (const junk of ['junk', 'A'.repeat(43), 'A'.repeat(44), '%E2%82%AC', 'x'.repeat(3000)]) {
    const res = await refreshWith(app, junk)
    t.equal(res.status, 401, junk.slice(0, 20))
    t.same(res.body, { success: false, message: 'Invalid or expired refresh token' })
    t.same(setCookies(res), [CLEARED])
  }
})

t.test('the body of a refresh is ignored: only the cookie counts', async (t) => {
  const app = await buildApp(t)
  await addUser(app, EMAIL, PASSWORD)
  const jar = new CookieJar(COOKIE)
  await login(app, jar)
  const other = new CookieJar(COOKIE)
  await login(app, other)
  const res = await call(app, 'POST', '/api/auth/refresh', { json: { refreshToken: other.value }, headers: jar.header() })
  t.equal(res.status, 200)
  const noCookie = await call(app, 'POST', '/api/auth/refresh', { json: { refreshToken: other.value } })
  t.same(noCookie.body, { success: false, message: 'Refresh token is required' })
  t.equal((await refreshWith(app, other.value)).status, 200, 'the token in the body was not used')
})

t.test('idle expiry: a token unused for sessions.idle_ttl is refused and the cookie cleared', async (t) => {
  const { c, app, jar, sid } = await signedIn(t, { AUTHD_SESSIONS_IDLE_TTL: '1h', AUTHD_SESSIONS_ABSOLUTE_TTL: '1d' })

  c.advance(3_600_000 - 1)
  const justInTime = await refreshWith(app, jar.value)
  t.equal(justInTime.status, 200, 'one millisecond before the idle expiry')
  jar.take(justInTime)
  c.advance(3_600_000 - 1)
  const again = await refreshWith(app, jar.value)
  t.equal(again.status, 200, 'each use restarts the idle clock')
  jar.take(again)

  c.advance(3_600_000)
  const expired = await refreshWith(app, jar.value)
  t.equal(expired.status, 401)
  t.same(expired.body, { success: false, message: 'Invalid or expired refresh token' })
  t.same(setCookies(expired), [CLEARED])
  t.equal(await app.store.getSession(sid), undefined, 'the expired session is removed')
})

t.test('absolute expiry: no refresh past sessions.absolute_ttl, however often used', async (t) => {
  const { c, app, jar, first } = await signedIn(t, { AUTHD_SESSIONS_IDLE_TTL: '1h', AUTHD_SESSIONS_ABSOLUTE_TTL: '2h' })
  t.match(setCookies(first)[0], /; Max-Age=7200;/, 'the cookie lives as long as the session')
  for (let i = 0; i < 2; i++) {
    c.advance(50 * 60_000)
    const res = await refreshWith(app, jar.value)
    t.equal(res.status, 200, `refresh at ${(i + 1) * 50} min`)
    // the session's time left, not a new absolute_ttl: the browser drops the cookie as it ends
    t.match(setCookies(res)[0], new RegExp(`; Max-Age=${7200 - (i + 1) * 3000};`), `its cookie lives the ${120 - (i + 1) * 50} min left`)
    jar.take(res)
  }
  c.advance(20 * 60_000) // 120 min after login
  const expired = await refreshWith(app, jar.value)
  t.equal(expired.status, 401, 'refused at the absolute expiry although used 20 min ago')
  t.same(expired.body, { success: false, message: 'Invalid or expired refresh token' })
  t.same(setCookies(expired), [CLEARED])
  t.equal((await app.store.listSessions()).length, 0)
})

t.test('a lowered sessions.absolute_ttl ends the sessions already older than it, as a lowered idle_ttl does: refresh, /me, the session list', async (t) => {
  const c = clock()
  const dir = t.testdir()
  const store = await openTestStore(t, dir)
  const started = c.now()
  const before = await buildApp(t, { dir, store, now: c.now, env: { AUTHD_SESSIONS_IDLE_TTL: '1d', AUTHD_SESSIONS_ABSOLUTE_TTL: '30d' } })
  await addUser(before, EMAIL, PASSWORD)
  const jar = new CookieJar(COOKIE)
  await login(before, jar)
  // started again with the absolute expiry lowered to two hours
  const after = await buildApp(t, { dir, store, now: c.now, env: { AUTHD_SESSIONS_IDLE_TTL: '1d', AUTHD_SESSIONS_ABSOLUTE_TTL: '2h' } })
  c.advance(2 * 3_600_000 - 60_000)
  const inTime = await refreshWith(after, jar.value)
  t.equal(inTime.status, 200, 'a minute before two hours after the login')
  jar.take(inTime)
  const token = inTime.body.data.accessToken as string
  const own = await call(after, 'GET', '/api/auth/sessions', { headers: { authorization: `Bearer ${token}` } })
  t.equal(own.body.data.sessions[0].expiresAt, new Date(started + 2 * 3_600_000).toISOString(), 'its expiry as the user sees it: two hours after the login')
  t.equal((await me(after, token)).status, 200)
  c.advance(60_000)
  const gone = await me(after, token)
  t.equal(gone.status, 401, "its access token, a minute old, refused with the session's end")
  t.same(gone.body, { success: false, message: 'Invalid or expired access token' })
  const expired = await refreshWith(after, jar.value)
  t.equal(expired.status, 401, 'two hours after the login')
  t.same(setCookies(expired), [CLEARED])
})

t.test('429 Too many requests above refresh.per_ip, with Retry-After, and nothing rotated', async (t) => {
  const { c, app, jar } = await signedIn(t, { AUTHD_RATE_LIMIT_REFRESH_PER_IP: '3/5m' })
  const started = performance.now()
  for (let i = 0; i < 3; i++) {
    const res = await refreshWith(app, jar.value)
    t.equal(res.status, 200)
    jar.take(res)
  }
  const limited = await refreshWith(app, jar.value)
  t.equal(limited.status, 429)
  t.same(limited.body, { success: false, message: 'Too many requests' })
  t.ok(retryAfterIs(limited.headers['retry-after'], 300, started), `Retry-After: 300 (${limited.headers['retry-after']})`)
  t.same(setCookies(limited), [], 'no cookie set or cleared')
  const noCookie = await call(app, 'POST', '/api/auth/refresh')
  t.equal(noCookie.status, 401, 'a request without a cookie is answered before the limit, and takes no limiter key')
  c.advance(5 * 60_000)
  await ageLimits(app, 5 * 60_000)
  t.equal((await refreshWith(app, jar.value)).status, 200, 'the token was not used by the refused attempt')
})

t.test('a disabled user cannot refresh', async (t) => {
  const app = await buildApp(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  const jar = new CookieJar(COOKIE)
  await login(app, jar)
  await app.store.updateUser(user.id, (u) => ({ ...u, disabled: true }))
  const res = await refreshWith(app, jar.value)
  t.equal(res.status, 401)
  t.same(res.body, { success: false, message: 'Invalid or expired refresh token' })
  t.same(setCookies(res), [CLEARED])
})

t.test('--dev: the rotated and cleared cookies are authd_rt without Secure', async (t) => {
  const app = await buildApp(t, { dev: true })
  await addUser(app, EMAIL, PASSWORD)
  const jar = new CookieJar('authd_rt')
  jar.take(await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD } }))
  const res = await call(app, 'POST', '/api/auth/refresh', { headers: jar.header() })
  t.equal(res.status, 200)
  const [nameValue, ...attrs] = setCookies(res)[0]!.split('; ')
  t.match(nameValue, /^authd_rt=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/)
  t.same(attrs.sort(), ['HttpOnly', 'Max-Age=2592000', 'Path=/', 'SameSite=Strict'].sort())
  const bad = await call(app, 'POST', '/api/auth/refresh', { headers: { cookie: 'authd_rt=junk' } })
  t.same(setCookies(bad), ['authd_rt=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict'])
})
