/**
 * A signed-in user's own account (README, "Your own account"), injected into the handler, real argon2
 * and a real LMDB store: POST /api/auth/password (every status and message, the login limits it
 * shares with login, the other sessions ended and the caller's kept), GET /api/auth/sessions and
 * DELETE /api/auth/sessions/:id. Client addresses are simulated through a trusted proxy.
 */
import t, { type Test } from 'tap'
import { addUser, call, buildApp, type Reply, type TestApp } from '../helpers/app.js'

const EMAIL = 'ada@example.com'
const PASSWORD = 'copper-lantern-58'
const NEW_PASSWORD = 'violet-harbour-93'
const WRONG = 'marble-fountain-17'
const PROXY = { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1/32' }
const RT = '__Host-authd_rt'
const DEVICE = '__Host-authd_device'

interface Signed {
  token: string
  sid: string
  /** the refresh cookie's value */
  refresh: string
  /** the device cookie's value */
  device: string
  auth: Record<string, string>
}

const setCookies = (r: Reply): string[] => {
  const sc = r.headers['set-cookie']
  return sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]
}
const cookieValue = (r: Reply, name: string): string => setCookies(r).find((c) => c.startsWith(`${name}=`))!.slice(name.length + 1).split(';')[0]!
const sidOf = (token: string): string => (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sid: string }).sid

async function signIn(app: TestApp, opts: { email?: string; password?: string; ip?: string; ua?: string } = {}): Promise<Signed> {
  const r = await call(app, 'POST', '/api/auth/login', {
    json: { email: opts.email ?? EMAIL, password: opts.password ?? PASSWORD },
    headers: { 'x-forwarded-for': opts.ip ?? '198.51.100.1', 'user-agent': opts.ua ?? 'test-agent' },
  })
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`)
  const token = r.body.data.accessToken as string
  return { token, sid: sidOf(token), refresh: cookieValue(r, RT), device: cookieValue(r, DEVICE), auth: { authorization: `Bearer ${token}` } }
}

const changePassword = (app: TestApp, s: Signed | undefined, json: unknown, headers: Record<string, string> = {}): Promise<Reply> =>
  call(app, 'POST', '/api/auth/password', { json, headers: { 'x-forwarded-for': '198.51.100.1', ...(s?.auth ?? {}), ...headers } })
const refresh = (app: TestApp, s: Signed): Promise<Reply> => call(app, 'POST', '/api/auth/refresh', { headers: { cookie: `${RT}=${s.refresh}` } })
const me = (app: TestApp, s: Signed): Promise<Reply> => call(app, 'GET', '/api/auth/me', { headers: s.auth })
const sessions = (app: TestApp, s: Signed): Promise<Reply> => call(app, 'GET', '/api/auth/sessions', { headers: s.auth })
const revoke = (app: TestApp, s: Signed, id: string): Promise<Reply> =>
  call(app, 'DELETE', `/api/auth/sessions/${encodeURIComponent(id)}`, { headers: { 'x-forwarded-for': '198.51.100.9', ...s.auth } })

function isError(t: Test, r: Reply, status: number, message: string): void {
  t.equal(r.status, status, message)
  t.same(r.body, { success: false, message })
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(r.headers['cache-control'], 'no-store')
  t.equal(r.headers['x-content-type-options'], 'nosniff')
}

/** a clock the test moves */
function clock(start = Date.now()): { now: () => number; advance: (ms: number) => void } {
  let at = start
  return { now: () => at, advance: (ms) => (at += ms) }
}

t.test('POST /api/auth/password: 200, the other sessions end, the calling one stays', async (t) => {
  const app = await buildApp(t, { env: PROXY, argon2: 'configured' })
  const user = await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  const other = await signIn(app, { ip: '203.0.113.7' })
  const third = await signIn(app, { ip: '203.0.113.8' })
  const stranger = (await addUser(app, 'bob@example.com', PASSWORD), await signIn(app, { email: 'bob@example.com' }))

  const r = await changePassword(app, caller, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD })
  t.equal(r.status, 200)
  t.same(r.body, { success: true, data: {} })
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(r.headers['cache-control'], 'no-store')
  t.same(setCookies(r), [], 'no cookie is set or cleared')

  t.equal((await me(app, caller)).status, 200, "the caller's access token still works")
  const kept = await refresh(app, caller)
  t.equal(kept.status, 200, "the caller's refresh cookie still works")
  for (const s of [other, third]) {
    isError(t, await refresh(app, s), 401, 'Invalid or expired refresh token')
    isError(t, await me(app, s), 401, 'Invalid or expired access token')
  }
  t.equal((await me(app, stranger)).status, 200, "another user's sessions are untouched")
  t.same((await app.store.listSessions(user.id)).map((s) => s.id), [caller.sid], 'only the calling session is left in the store')

  const stored = (await app.store.getUser(user.id))!
  t.not(stored.passwordHash, user.passwordHash)
  t.match(stored.passwordHash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/, 're-hashed at the current parameters')
  t.equal((await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD } })).status, 401, 'the old password no longer signs in')
  t.equal((await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: NEW_PASSWORD } })).status, 200, 'the new one does')

  const line = app.logs.lines.find((l) => l.event === 'password_change')
  t.match(line, { event: 'password_change', outcome: 'success', userId: user.id, sessionId: caller.sid, ip: '198.51.100.1', sessionsEnded: 2 })
  const text = app.logs.text()
  for (const secret of [PASSWORD, NEW_PASSWORD, caller.token, caller.refresh]) t.notOk(text.includes(secret), 'no password or token in the log')
})

t.test('POST /api/auth/password re-hashes an old hash at the current parameters', async (t) => {
  const app = await buildApp(t, { argon2: 'configured' })
  // a hash made at weaker parameters, as an older configuration left it
  const argon2 = await import('argon2')
  const old = await argon2.hash(PASSWORD, { type: argon2.argon2id, memoryCost: 8192, timeCost: 1, parallelism: 1 })
  const user = await addUser(app, EMAIL, PASSWORD, { passwordHash: old })
  const caller = await signIn(app)
  t.equal((await changePassword(app, caller, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD })).status, 200)
  t.match((await app.store.getUser(user.id))!.passwordHash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
  t.same(await app.store.hashTally(), { '$argon2id$v=19$m=19456,t=2,p=1': 1 }, 'the hash tally follows the change')
})

t.test('POST /api/auth/password: 400 Current and new password are required', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  const runs = app.hasher.runs
  const bodies: unknown[] = [
    {},
    { currentPassword: PASSWORD },
    { newPassword: NEW_PASSWORD },
    { currentPassword: PASSWORD, newPassword: 12345678 },
    { currentPassword: ['x'], newPassword: NEW_PASSWORD },
    { currentPassword: null, newPassword: NEW_PASSWORD },
    { currentPassword: '   ', newPassword: NEW_PASSWORD },
    { currentPassword: PASSWORD, newPassword: ' \t ' },
    { currentPassword: '', newPassword: '' },
  ]
  for (const body of bodies) isError(t, await changePassword(app, caller, body), 400, 'Current and new password are required')
  const empty = await call(app, 'POST', '/api/auth/password', { headers: caller.auth })
  isError(t, empty, 400, 'Current and new password are required')
  isError(t, await call(app, 'POST', '/api/auth/password', { body: '[1]', headers: { ...caller.auth, 'content-type': 'application/json' } }), 400, 'Invalid JSON body')
  isError(t, await call(app, 'POST', '/api/auth/password', { body: 'a=b', headers: { ...caller.auth, 'content-type': 'text/plain' } }), 415, 'Content-Type must be application/json')
  t.equal(app.hasher.runs, runs, 'argon2 never ran')
})

t.test("POST /api/auth/password: the new password follows register's rules and messages", async (t) => {
  const app = await buildApp(t, { env: PROXY })
  const user = await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  isError(t, await changePassword(app, caller, { currentPassword: PASSWORD, newPassword: 'short' }), 400, 'Password must be at least 8 characters')
  isError(t, await changePassword(app, caller, { currentPassword: PASSWORD, newPassword: 'x'.repeat(257) }), 400, 'Password must be at most 256 characters')
  isError(t, await changePassword(app, caller, { currentPassword: PASSWORD, newPassword: 'Sunshine' }), 400, 'Password is too common')
  t.equal((await app.store.getUser(user.id))!.passwordHash, user.passwordHash, 'nothing changed')
  // a refused new password checked no current password: not a failed login
  for (let i = 0; i < 10; i++) t.equal((await changePassword(app, caller, { currentPassword: WRONG, newPassword: 'short' })).status, 400)
  t.equal((await changePassword(app, caller, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD })).status, 200, 'no limit was spent by them')
})

t.test('POST /api/auth/password: 403 Current password is incorrect ends nothing and changes nothing', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  const user = await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  const other = await signIn(app, { ip: '203.0.113.7' })
  const r = await changePassword(app, caller, { currentPassword: WRONG, newPassword: NEW_PASSWORD })
  isError(t, r, 403, 'Current password is incorrect')
  t.equal(r.headers['www-authenticate'], undefined)
  t.equal((await app.store.getUser(user.id))!.passwordHash, user.passwordHash)
  t.equal((await me(app, other)).status, 200, 'the other session still works')
  t.match(
    app.logs.lines.find((l) => l.event === 'password_change'),
    { event: 'password_change', outcome: 'incorrect', userId: user.id, sessionId: caller.sid, ip: '198.51.100.1' },
  )
  const metrics = await call(app, 'GET', '/metrics')
  t.match(metrics.text, /authd_password_change_total\{outcome="incorrect"\} 1/)
  t.notOk(app.logs.text().includes(WRONG), 'the wrong password is not logged')
})

t.test('the account endpoints answer /me\'s two 401s', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  await addUser(app, EMAIL, PASSWORD)
  const s = await signIn(app)
  const requests: Array<[string, string, unknown]> = [
    ['POST', '/api/auth/password', { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }],
    ['GET', '/api/auth/sessions', undefined],
    ['DELETE', `/api/auth/sessions/${s.sid}`, undefined],
  ]
  for (const [method, path, json] of requests) {
    for (const headers of [{} as Record<string, string>, { authorization: 'Basic abc' }, { authorization: s.token }]) {
      const r = await call(app, method, path, { json, headers })
      isError(t, r, 401, 'Unauthorized')
      t.equal(r.headers['www-authenticate'], 'Bearer', `${method} ${path}`)
    }
    const bad = await call(app, method, path, { json, headers: { authorization: `Bearer ${s.token.slice(0, -2)}xx` } })
    isError(t, bad, 401, 'Invalid or expired access token')
    t.equal(bad.headers['www-authenticate'], 'Bearer error="invalid_token"')
    // the cookie alone is no proof: these endpoints take the bearer token only
    const cookieOnly = await call(app, method, path, { json, headers: { cookie: `${RT}=${s.refresh}` } })
    t.equal(cookieOnly.status, 401)
  }
  t.equal((await me(app, s)).status, 200, 'nothing was changed or ended')
  t.equal((await app.store.listSessions()).length, 1)
})

t.test('a logged-out or disabled session cannot change the password', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  const user = await addUser(app, EMAIL, PASSWORD)
  const s = await signIn(app)
  await call(app, 'POST', '/api/auth/logout', { headers: { cookie: `${RT}=${s.refresh}` } })
  isError(t, await changePassword(app, s, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }), 401, 'Invalid or expired access token')
  const s2 = await signIn(app)
  await app.store.updateUser(user.id, (u) => ({ ...u, disabled: true }))
  isError(t, await changePassword(app, s2, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }), 401, 'Invalid or expired access token')
  t.equal((await app.store.getUser(user.id))!.passwordHash, user.passwordHash)
})

t.test('five wrong current passwords spend the login limit: 429 for /password and /login of that email, with no hash run', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  let runs = app.hasher.runs
  for (let i = 0; i < 5; i++) isError(t, await changePassword(app, caller, { currentPassword: WRONG, newPassword: NEW_PASSWORD }), 403, 'Current password is incorrect')
  t.equal(app.hasher.runs - runs, 5, 'argon2 ran once for each')

  runs = app.hasher.runs
  const refused = await changePassword(app, caller, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD })
  isError(t, refused, 429, 'Too many login attempts')
  t.match(refused.headers['retry-after'], /^[1-9]\d*$/)
  const login = await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD }, headers: { 'x-forwarded-for': '198.51.100.1' } })
  isError(t, login, 429, 'Too many login attempts')
  t.match(login.headers['retry-after'], /^[1-9]\d*$/)
  t.equal(app.hasher.runs, runs, 'while the limit is spent nothing is checked: no argon2 at all')
  t.equal((await app.store.getUser((await app.store.getSession(caller.sid))!.userId))!.passwordHash.length > 0, true)
  t.equal((await me(app, caller)).status, 200, 'the session itself is not ended by the refusals')

  const metrics = (await call(app, 'GET', '/metrics')).text
  t.match(metrics, /authd_password_change_total\{outcome="rate_limited"\} 1/)
  t.match(metrics, /authd_rate_limited_total\{limit="login.per_ip_email"\} 2/)
  t.match(app.logs.lines.find((l) => l.event === 'password_change' && l.limit !== undefined), { event: 'password_change', limit: 'login.per_ip_email', ip: '198.51.100.1' })
})

t.test('concurrent wrong current passwords: exactly five are checked, the rest answer 429', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  const runs = app.hasher.runs
  const replies = await Promise.all(Array.from({ length: 30 }, () => changePassword(app, caller, { currentPassword: WRONG, newPassword: NEW_PASSWORD })))
  const statuses = replies.map((r) => r.status).sort()
  t.same(statuses, [...Array<number>(5).fill(403), ...Array<number>(25).fill(429)])
  t.equal(app.hasher.runs - runs, 5, 'argon2 ran five times')
})

t.test('failed logins spend the limit for /password too, and a correct current password resets the address\'s count', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  for (let i = 0; i < 4; i++) t.equal((await changePassword(app, caller, { currentPassword: WRONG, newPassword: NEW_PASSWORD })).status, 403)
  t.equal((await changePassword(app, caller, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD })).status, 200, 'the fifth, correct, goes through')
  for (let i = 0; i < 4; i++) t.equal((await changePassword(app, caller, { currentPassword: WRONG, newPassword: PASSWORD })).status, 403, 'the count started again')
  t.equal((await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: WRONG }, headers: { 'x-forwarded-for': '198.51.100.1' } })).status, 401)
  t.equal((await changePassword(app, caller, { currentPassword: NEW_PASSWORD, newPassword: PASSWORD })).status, 429, 'a failed login counts towards the same limit')
})

t.test('wrong current passwords count towards login.per_email from any address, or per device with a device cookie of this user', async (t) => {
  const app = await buildApp(t, { env: { ...PROXY, AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '3/1h', AUTHD_RATE_LIMIT_LOGIN_PER_DEVICE: '4/15m' } })
  await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  const withDevice = { cookie: `${DEVICE}=${caller.device}` }
  // with the device cookie of this user: per_device, not per_email
  for (let i = 0; i < 3; i++) t.equal((await changePassword(app, caller, { currentPassword: WRONG, newPassword: NEW_PASSWORD }, withDevice)).status, 403)
  t.equal((await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD }, headers: { 'x-forwarded-for': '203.0.113.50' } })).status, 200, "per_email was not charged by the device's failures")
  t.equal((await changePassword(app, caller, { currentPassword: WRONG, newPassword: NEW_PASSWORD }, { ...withDevice, 'x-forwarded-for': '198.51.100.2' })).status, 403)
  const deviceSpent = await changePassword(app, caller, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, { ...withDevice, 'x-forwarded-for': '198.51.100.3' })
  isError(t, deviceSpent, 429, 'Too many login attempts')
  // without it: per_email, which three failures from three addresses spend for everyone
  const fresh = await signIn(app, { ip: '203.0.113.51' })
  for (let i = 0; i < 3; i++) t.equal((await changePassword(app, fresh, { currentPassword: WRONG, newPassword: NEW_PASSWORD }, { 'x-forwarded-for': `192.0.2.${i}` })).status, 403)
  isError(t, await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD }, headers: { 'x-forwarded-for': '203.0.113.99' } }), 429, 'Too many login attempts')
  t.equal(
    (await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD }, headers: { 'x-forwarded-for': '203.0.113.99', cookie: `${DEVICE}=${fresh.device}` } })).status,
    200,
    "the user's own browser still signs in",
  )
})

t.test('GET /api/auth/sessions: the live sessions, newest first, with their fields and the current one marked', async (t) => {
  const t0 = Date.parse('2026-03-01T10:00:00.000Z')
  const day = 86_400_000
  const at = (ms: number): string => new Date(t0 + ms).toISOString()
  const c = clock(t0)
  const app = await buildApp(t, { env: { ...PROXY, AUTHD_SESSIONS_IDLE_TTL: '20d', AUTHD_SESSIONS_ABSOLUTE_TTL: '30d' }, now: c.now })
  const user = await addUser(app, EMAIL, PASSWORD)
  await addUser(app, 'bob@example.com', PASSWORD)
  const first = await signIn(app, { ip: '203.0.113.1', ua: 'Firefox/1' })
  c.advance(60_000)
  const second = await signIn(app, { ip: '203.0.113.2', ua: 'Chrome/2' })
  c.advance(60_000)
  await signIn(app, { email: 'bob@example.com', ip: '203.0.113.3', ua: 'bob' })
  c.advance(60_000)
  const third = await signIn(app, { ip: '2001:db8::1', ua: 'curl/8' })

  const r = await sessions(app, second)
  t.equal(r.status, 200)
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(r.headers['cache-control'], 'no-store')
  const entry = (s: Signed, created: number, used: number, expires: number, ip: string, ua: string, current: boolean): object => ({
    id: s.sid,
    createdAt: at(created),
    lastUsedAt: at(used),
    expiresAt: at(expires),
    ip,
    userAgent: ua,
    current,
  })
  t.same(r.body, {
    success: true,
    data: {
      sessions: [
        entry(third, 180_000, 180_000, 180_000 + 20 * day, '2001:db8::1', 'curl/8', false),
        entry(second, 60_000, 60_000, 60_000 + 20 * day, '203.0.113.2', 'Chrome/2', true),
        entry(first, 0, 0, 20 * day, '203.0.113.1', 'Firefox/1', false),
      ],
    },
  })
  t.match(r.body.data.sessions[0].createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.same(Object.keys(r.body.data.sessions[0]).sort(), ['createdAt', 'current', 'expiresAt', 'id', 'ip', 'lastUsedAt', 'userAgent'], 'nothing else (no token, no hash)')

  // day 15: the first is refreshed, so its idle expiry (day 35) passes its absolute one (day 30)
  c.advance(15 * day - 180_000)
  const r1 = await refresh(app, first)
  t.equal(r1.status, 200)
  const firstNow: Signed = { ...first, refresh: cookieValue(r1, RT), auth: { authorization: `Bearer ${r1.body.data.accessToken as string}` } }
  const mid = await sessions(app, firstNow)
  t.same(mid.body.data.sessions, [
    entry(third, 180_000, 180_000, 180_000 + 20 * day, '2001:db8::1', 'curl/8', false),
    entry(second, 60_000, 60_000, 60_000 + 20 * day, '203.0.113.2', 'Chrome/2', false),
    entry(first, 0, 15 * day, 30 * day, '203.0.113.1', 'Firefox/1', true),
  ])

  // day 21: the second and third have gone idle; the first is still live
  c.advance(6 * day)
  const r2 = await refresh(app, firstNow)
  t.equal(r2.status, 200)
  const later = await sessions(app, { ...firstNow, auth: { authorization: `Bearer ${r2.body.data.accessToken as string}` } })
  t.same(later.body.data.sessions.map((s: { id: string; current: boolean }) => [s.id, s.current]), [[first.sid, true]], 'only live sessions')
  t.equal((await app.store.listSessions(user.id)).length, 3, 'the idle ones are still stored (until the sweep), but not listed')
})

t.test('HEAD /api/auth/sessions and the wrong methods', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  await addUser(app, EMAIL, PASSWORD)
  const s = await signIn(app)
  t.equal((await call(app, 'HEAD', '/api/auth/sessions', { headers: s.auth })).status, 200)
  const cases: Array<[string, string, string]> = [
    ['POST', '/api/auth/sessions', 'GET, OPTIONS, HEAD'],
    ['DELETE', '/api/auth/sessions', 'GET, OPTIONS, HEAD'],
    ['GET', `/api/auth/sessions/${s.sid}`, 'DELETE, OPTIONS'],
    ['POST', `/api/auth/sessions/${s.sid}`, 'DELETE, OPTIONS'],
    ['GET', '/api/auth/password', 'POST, OPTIONS'],
    ['DELETE', '/api/auth/password', 'POST, OPTIONS'],
  ]
  for (const [method, path, allow] of cases) {
    const r = await call(app, method, path, { headers: s.auth })
    isError(t, r, 405, 'Method not allowed')
    t.equal(r.headers.allow, allow, `${method} ${path}`)
  }
  for (const path of ['/api/auth/sessions/a/b', `/api/auth/sessions/${s.sid}/x`, '/api/auth/sessionsx', '/api/auth/password/x']) {
    isError(t, await call(app, 'DELETE', path, { headers: s.auth }), 404, 'Not found')
  }
  t.equal((await me(app, s)).status, 200, 'nothing was ended')
})

t.test('DELETE /api/auth/sessions/:id ends that session at once: its refresh and access tokens', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  const user = await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  const other = await signIn(app, { ip: '203.0.113.7' })
  t.equal((await me(app, other)).status, 200, 'its token works, and /me has it remembered')

  const r = await revoke(app, caller, other.sid)
  t.equal(r.status, 200)
  t.same(r.body, { success: true, data: {} })
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
  isError(t, await me(app, other), 401, 'Invalid or expired access token')
  isError(t, await refresh(app, other), 401, 'Invalid or expired refresh token')
  t.same((await sessions(app, caller)).body.data.sessions.map((s: { id: string }) => s.id), [caller.sid])
  t.equal((await me(app, caller)).status, 200, 'the caller goes on')
  t.match(app.logs.lines.find((l) => l.event === 'session_revoke'), { event: 'session_revoke', userId: user.id, sessionId: other.sid, current: false, ip: '198.51.100.9' })

  isError(t, await revoke(app, caller, other.sid), 404, 'Session not found')

  const metrics = (await call(app, 'GET', '/metrics')).text
  t.match(metrics, /route="\/api\/auth\/sessions\/:id",method="DELETE",status="200"/, 'labelled by the route template')
  t.notOk(metrics.includes(other.sid), 'never by the id')
  t.notOk(app.logs.text().includes(other.refresh), 'no token in the log')
})

t.test('DELETE /api/auth/sessions/:id: a body sent is held to the rules of every body, and breaking them ends nothing', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  const other = await signIn(app, { ip: '203.0.113.7' })
  const del = (body: string, type: string): Promise<Reply> =>
    call(app, 'DELETE', `/api/auth/sessions/${encodeURIComponent(other.sid)}`, { body, headers: { 'content-type': type, 'x-forwarded-for': '198.51.100.9', ...caller.auth } })
  isError(t, await del('hello', 'text/plain'), 415, 'Content-Type must be application/json')
  isError(t, await del('{bad', 'application/json'), 400, 'Invalid JSON body')
  isError(t, await del('[1]', 'application/json'), 400, 'Invalid JSON body')
  t.equal((await me(app, other)).status, 200, 'the session goes on')
  const ok = await del('{}', 'application/json')
  t.equal(ok.status, 200, 'an empty JSON object is a body like none')
  isError(t, await me(app, other), 401, 'Invalid or expired access token')
})

t.test('DELETE of the calling session itself is allowed: its tokens stop working', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  const r = await revoke(app, caller, caller.sid)
  t.equal(r.status, 200)
  t.match(app.logs.lines.find((l) => l.event === 'session_revoke'), { sessionId: caller.sid, current: true })
  isError(t, await me(app, caller), 401, 'Invalid or expired access token')
  isError(t, await refresh(app, caller), 401, 'Invalid or expired refresh token')
  isError(t, await revoke(app, caller, caller.sid), 401, 'Invalid or expired access token')
})

t.test("DELETE: another user's session, an expired one and an unknown id are one 404, and another user's session goes on", async (t) => {
  const c = clock()
  const app = await buildApp(t, { env: PROXY, now: c.now })
  await addUser(app, EMAIL, PASSWORD)
  await addUser(app, 'bob@example.com', PASSWORD)
  const old = await signIn(app, { ip: '203.0.113.70' })
  c.advance(8 * 86_400_000)
  const caller = await signIn(app)
  const bob = await signIn(app, { email: 'bob@example.com' })
  t.ok(await app.store.getSession(old.sid), 'the idle session is still stored (the sweep has not run)')

  const answers: Reply[] = []
  for (const id of [bob.sid, old.sid, 'no-such-session', 'x'.repeat(600)]) {
    const r = await revoke(app, caller, id)
    isError(t, r, 404, 'Session not found')
    answers.push(r)
  }
  // no id at all is no route, and nor is one escaped (a session id is base64url: docs/api.md, an
  // escape of anything but an unreserved character names no route)
  isError(t, await revoke(app, caller, ''), 404, 'Not found')
  for (const id of ['a/b', '%00']) isError(t, await revoke(app, caller, id), 404, 'Not found')
  isError(t, await call(app, 'GET', '/api/auth/sessions/', { headers: caller.auth }), 404, 'Not found')
  const shape = (r: Reply): unknown => [r.status, r.text, Object.keys(r.headers).filter((h) => h !== 'date' && h !== 'x-request-id').sort()]
  for (const r of answers) t.same(shape(r), shape(answers[0]!), 'the same status, body and headers')
  t.equal((await me(app, bob)).status, 200, "bob's session still works")
  t.equal((await refresh(app, bob)).status, 200)
  t.notOk(app.logs.lines.some((l) => l.event === 'session_revoke'), 'nothing was ended')
})

t.test('DELETE /api/auth/sessions/:id with an id no session can have (a NUL, a control character, far too long): 404 on either store, never a 500, nothing ended', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  // a path holding a control character is no route at all (the router's 404); the rest reach
  // the handler, which finds no such session
  for (const id of ['%00', 'a%00b', `${caller.sid}%00`, '%07', '%C2%85']) isError(t, await revoke(app, caller, decodeURIComponent(id)), 404, 'Not found')
  for (const id of ['x'.repeat(3000), `${caller.sid}x`]) isError(t, await revoke(app, caller, decodeURIComponent(id)), 404, 'Session not found')
  t.notOk(app.logs.lines.some((l) => Number(l.level) >= 50), 'nothing logged as an error')
  t.equal((await me(app, caller)).status, 200, 'the calling session goes on')
})
