/**
 * GET /api/auth/me, injected into the handler (README, "Call the API"): the 200 read from the store, the
 * "Unauthorized" row for a missing or malformed Authorization header, and the "Invalid or expired
 * access token" row for tokens of sessions or users that are gone.
 */
import t, { type Test } from 'tap'
import { addUser, buildApp, call, type Reply, type Target } from '../helpers/app.js'

const PASSWORD = 'correct horse battery'

const login = async (app: Target, email: string): Promise<{ token: string; userId: string }> => {
  const r = await call(app, 'POST', '/api/auth/login', { json: { email, password: PASSWORD } })
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`)
  return { token: r.body.data.accessToken as string, userId: r.body.data.user.id as string }
}

const me = (app: Target, headers: Record<string, string> = {}, path = '/api/auth/me'): Promise<Reply> => call(app, 'GET', path, { headers })

const sid = (token: string): string => (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sid: string }).sid

function isUnauthorized(t: Test, r: Reply): void {
  t.equal(r.status, 401)
  t.same(r.body, { success: false, message: 'Unauthorized' })
  t.equal(r.headers['www-authenticate'], 'Bearer')
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(r.headers['cache-control'], 'no-store')
}

function isInvalidToken(t: Test, r: Reply): void {
  t.equal(r.status, 401)
  t.same(r.body, { success: false, message: 'Invalid or expired access token' })
  t.equal(r.headers['www-authenticate'], 'Bearer error="invalid_token"')
}

t.test('answers the user read from the store, with the envelope headers', async (t) => {
  const app = await buildApp(t)
  const user = await addUser(app, 'ann@example.com', PASSWORD)
  const { token } = await login(app, 'ann@example.com')
  const r = await me(app, { authorization: `Bearer ${token}` })
  t.equal(r.status, 200)
  t.same(r.body, { success: true, data: { id: user.id, email: 'ann@example.com', mfaEnabled: false } })
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(r.headers['cache-control'], 'no-store')
  t.equal(r.headers['x-content-type-options'], 'nosniff')
  t.notOk('set-cookie' in r.headers, 'me refreshes nothing and sets no cookie')
})

t.test('shows a changed email at once, since it reads the store and not the token', async (t) => {
  const app = await buildApp(t)
  const user = await addUser(app, 'old@example.com', PASSWORD)
  const { token } = await login(app, 'old@example.com')
  await app.store.updateUser(user.id, (u) => ({ ...u, email: 'new@example.com' }))
  const r = await me(app, { authorization: `Bearer ${token}` })
  t.same(r.body, { success: true, data: { id: user.id, email: 'new@example.com', mfaEnabled: false } })
})

t.test('accepts the Bearer scheme in any case and with extra spaces', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const { token, userId } = await login(app, 'ann@example.com')
  for (const header of [`Bearer ${token}`, `bearer ${token}`, `BEARER ${token}`, `bEaReR ${token}`, `Bearer   ${token}`]) {
    const r = await me(app, { authorization: header })
    t.equal(r.status, 200, header.slice(0, 9))
    t.equal(r.body.data?.id, userId)
  }
})

t.test('answers 401 Unauthorized with WWW-Authenticate: Bearer when no token is presented', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const { token } = await login(app, 'ann@example.com')
  const cases: Array<[string, Record<string, string>]> = [
    ['no Authorization header', {}],
    ['an empty Authorization header', { authorization: '' }],
    ['Basic credentials', { authorization: `Basic ${Buffer.from('ann@example.com:' + PASSWORD).toString('base64')}` }],
    ['the token without a scheme', { authorization: token }],
    ['the scheme without a token', { authorization: 'Bearer' }],
    ['the scheme and a space only', { authorization: 'Bearer ' }],
    ['two tokens', { authorization: `Bearer ${token} ${token}` }],
    ['another scheme spelled like Bearer', { authorization: `Bearerx ${token}` }],
    ['a token in a cookie', { cookie: `access_token=${token}` }],
  ]
  for (const [name, headers] of cases) {
    await t.test(name, async (t) => isUnauthorized(t, await me(app, headers)))
  }
})

t.test('ignores a token in the query string', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const { token } = await login(app, 'ann@example.com')
  for (const q of [`access_token=${token}`, `token=${token}`, `authorization=Bearer%20${token}`]) {
    isUnauthorized(t, await me(app, {}, `/api/auth/me?${q}`))
  }
  const withHeader = await me(app, { authorization: `Bearer ${token}` }, `/api/auth/me?access_token=junk`)
  t.equal(withHeader.status, 200, 'the header still counts when a query string is present')
})

t.test('rejects the access token of a revoked (logged-out) session', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const a = await login(app, 'ann@example.com')
  const b = await login(app, 'ann@example.com')
  t.equal((await me(app, { authorization: `Bearer ${a.token}` })).status, 200)
  t.ok(await app.store.revokeSession(sid(a.token)))
  isInvalidToken(t, await me(app, { authorization: `Bearer ${a.token}` }))
  t.equal((await me(app, { authorization: `Bearer ${b.token}` })).status, 200, 'the other session is untouched')
})

t.test('rejects the access token of a session ended by logout', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const r = await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  // the refresh cookie comes first, the device cookie after it
  const cookie = ([r.headers['set-cookie']].flat()[0] as string).split(';')[0]!
  const token = r.body.data.accessToken as string
  const out = await call(app, 'POST', '/api/auth/logout', { headers: { cookie } })
  t.equal(out.status, 200)
  isInvalidToken(t, await me(app, { authorization: `Bearer ${token}` }))
})

t.test('rejects the access token of a deleted user', async (t) => {
  const app = await buildApp(t)
  const user = await addUser(app, 'ann@example.com', PASSWORD)
  const { token } = await login(app, 'ann@example.com')
  t.ok(await app.store.deleteUser(user.id))
  isInvalidToken(t, await me(app, { authorization: `Bearer ${token}` }))
})

t.test('rejects the access token of a disabled user, and accepts it again once enabled', async (t) => {
  const app = await buildApp(t)
  const user = await addUser(app, 'ann@example.com', PASSWORD)
  const { token } = await login(app, 'ann@example.com')
  await app.store.updateUser(user.id, (u) => ({ ...u, disabled: true }))
  isInvalidToken(t, await me(app, { authorization: `Bearer ${token}` }))
  await app.store.updateUser(user.id, (u) => ({ ...u, disabled: false }))
  t.equal((await me(app, { authorization: `Bearer ${token}` })).status, 200, 'disabling alone (here without revoking) is checked on every call')
})

t.test('rejects a token once it has expired, allowing the configured clock tolerance', async (t) => {
  let now = Date.now()
  const app = await buildApp(t, { now: () => now })
  await addUser(app, 'ann@example.com', PASSWORD)
  const { token } = await login(app, 'ann@example.com')
  const start = now
  now = start + 15 * 60_000 + 4_000
  t.equal((await me(app, { authorization: `Bearer ${token}` })).status, 200, 'within the 5 s tolerance past exp')
  now = start + 15 * 60_000 + 6_000
  isInvalidToken(t, await me(app, { authorization: `Bearer ${token}` }))
})

t.test('rejects a token whose session has idled out', async (t) => {
  let now = Date.now()
  const app = await buildApp(t, { now: () => now, env: { AUTHD_SESSIONS_IDLE_TTL: '10m', AUTHD_TOKENS_ACCESS_TTL: '15m' } })
  await addUser(app, 'ann@example.com', PASSWORD)
  const { token } = await login(app, 'ann@example.com')
  now += 11 * 60_000
  isInvalidToken(t, await me(app, { authorization: `Bearer ${token}` }))
})

t.test('counts me outcomes in the metrics', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const { token } = await login(app, 'ann@example.com')
  await me(app, { authorization: `Bearer ${token}` })
  await me(app, {})
  await me(app, { authorization: 'Bearer nope' })
  await me(app, { authorization: 'Bearer nope' })
  const text = (await call(app, 'GET', '/metrics')).text
  t.match(text, /^authd_me_total\{outcome="success"\} 1$/m)
  t.match(text, /^authd_me_total\{outcome="missing"\} 1$/m)
  t.match(text, /^authd_me_total\{outcome="invalid"\} 2$/m)
})
