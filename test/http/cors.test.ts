/**
 * Browsers (README, "Call the API"): CORS with credentials for the listed origins on every
 * /api/auth/* endpoint, preflights, Vary: Origin, and the origin check of the cookie endpoints.
 */
import t from 'tap'
import { addUser, call, CookieJar, buildApp, type Reply, type TestApp } from '../helpers/app.js'

const EMAIL = 'cory@example.com'
const PASSWORD = 'marigold-falcon-64'
const COOKIE = '__Host-authd_rt'
const APP = 'https://app.example.com'
const OWN = 'https://auth.example.com'
const EVIL = 'https://evil.example.net'
const ENV = {
  AUTHD_CORS_ORIGINS: `${APP}, https://admin.example.com:8443`,
  AUTHD_SERVER_PUBLIC_URL: `${OWN}/`,
}

function setCookies(reply: Reply): string[] {
  const sc = reply.headers['set-cookie']
  return sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]
}

function varyOrigin(reply: Reply): boolean {
  const v = reply.headers.vary
  const text = Array.isArray(v) ? v.join(',') : (v ?? '')
  return text.split(',').some((p) => p.trim().toLowerCase() === 'origin')
}

async function signIn(app: TestApp): Promise<{ jar: CookieJar; accessToken: string }> {
  const res = await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD } })
  const jar = new CookieJar(COOKIE)
  jar.take(res)
  return { jar, accessToken: res.body.data.accessToken }
}

t.test('an allowed origin gets ACAO, ACAC and Vary on every /api/auth/* response, errors included', async (t) => {
  const app = await buildApp(t, { env: ENV })
  await addUser(app, EMAIL, PASSWORD)
  const { jar, accessToken } = await signIn(app)
  const h = { origin: APP }
  const replies: Array<[string, Reply]> = [
    ['login 200', await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD }, headers: h })],
    ['login 401', await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: 'wrong-password' }, headers: h })],
    ['login 400', await call(app, 'POST', '/api/auth/login', { json: {}, headers: h })],
    ['register 201', await call(app, 'POST', '/api/auth/register', { json: { email: 'new@example.com', password: PASSWORD }, headers: h })],
    ['register 409', await call(app, 'POST', '/api/auth/register', { json: { email: EMAIL, password: PASSWORD }, headers: h })],
    ['me 200', await call(app, 'GET', '/api/auth/me', { headers: { ...h, authorization: `Bearer ${accessToken}` } })],
    ['me 401', await call(app, 'GET', '/api/auth/me', { headers: h })],
    ['refresh 200', await call(app, 'POST', '/api/auth/refresh', { headers: { ...h, ...jar.header() } })],
    ['refresh 401', await call(app, 'POST', '/api/auth/refresh', { headers: h })],
    ['logout 200', await call(app, 'POST', '/api/auth/logout', { headers: h })],
    ['405', await call(app, 'GET', '/api/auth/login', { headers: h })],
  ]
  const expected: Record<string, number> = { 'login 200': 200, 'login 401': 401, 'login 400': 400, 'register 201': 201, 'register 409': 409, 'me 200': 200, 'me 401': 401, 'refresh 200': 200, 'refresh 401': 401, 'logout 200': 200, '405': 405 }
  for (const [what, r] of replies) {
    t.equal(r.status, expected[what], what)
    t.equal(r.headers['access-control-allow-origin'], APP, `${what}: ACAO`)
    t.equal(r.headers['access-control-allow-credentials'], 'true', `${what}: ACAC`)
    t.ok(varyOrigin(r), `${what}: Vary: Origin`)
  }
  const other = await call(app, 'POST', '/api/auth/logout', { headers: { origin: 'https://admin.example.com:8443' } })
  t.equal(other.headers['access-control-allow-origin'], 'https://admin.example.com:8443', 'a listed origin with a port')
})

t.test('preflights are answered 204 allowing GET, POST, DELETE and Content-Type, Authorization', async (t) => {
  const app = await buildApp(t, { env: ENV })
  for (const path of ['/api/auth/login', '/api/auth/register', '/api/auth/refresh', '/api/auth/logout', '/api/auth/me', '/api/auth/password', '/api/auth/sessions', '/api/auth/sessions/abc']) {
    const r = await call(app, 'OPTIONS', path, {
      headers: { origin: APP, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization' },
    })
    t.equal(r.status, 204, path)
    t.equal(r.text, '')
    t.equal(r.headers['access-control-allow-origin'], APP)
    t.equal(r.headers['access-control-allow-credentials'], 'true')
    const methods = String(r.headers['access-control-allow-methods']).split(',').map((m) => m.trim())
    t.same(methods.sort(), ['DELETE', 'GET', 'POST'])
    const headers = String(r.headers['access-control-allow-headers']).split(',').map((m) => m.trim().toLowerCase())
    t.same(headers.sort(), ['authorization', 'content-type'])
    t.ok(varyOrigin(r))
    t.same(setCookies(r), [])
  }
  for (const path of ['/api/auth/login', '/api/auth/register', '/api/auth/refresh', '/api/auth/logout']) {
    const denied = await call(app, 'OPTIONS', path, { headers: { origin: EVIL, 'access-control-request-method': 'POST' } })
    t.equal(denied.status, 403, `${path}: a preflight from a foreign origin is refused like the request`)
    t.same(denied.body, { success: false, message: 'Forbidden origin' })
    t.equal(denied.headers['access-control-allow-origin'], undefined, 'a foreign origin is not allowed by the preflight')
    t.equal(denied.headers['access-control-allow-credentials'], undefined)
    t.ok(varyOrigin(denied), 'Vary: Origin still, so a cache keeps the answers apart')
  }
  for (const path of ['/api/auth/password', '/api/auth/sessions', '/api/auth/sessions/abc']) {
    const r = await call(app, 'OPTIONS', path, { headers: { origin: EVIL, 'access-control-request-method': 'DELETE' } })
    t.equal(r.status, 204, `${path} takes a bearer token, no cookie: its preflight is answered like /me's`)
    t.equal(r.headers['access-control-allow-origin'], undefined)
  }
  const me = await call(app, 'OPTIONS', '/api/auth/me', { headers: { origin: EVIL, 'access-control-request-method': 'GET' } })
  t.equal(me.status, 204, '/me has no cookie: its preflight is answered, without CORS headers for a foreign origin')
  t.equal(me.headers['access-control-allow-origin'], undefined)
  t.equal(me.headers['x-content-type-options'], 'nosniff', 'the headers of every response')
  t.equal(me.headers['cache-control'], 'no-store')
  const own = await call(app, 'OPTIONS', '/api/auth/login', { headers: { origin: OWN, 'access-control-request-method': 'POST' } })
  t.equal(own.status, 204, 'the own origin may preflight the cookie endpoints')

  const missing = await call(app, 'GET', '/api/auth/nope', { headers: { origin: APP } })
  t.equal(missing.status, 404)
  t.equal(missing.headers['access-control-allow-origin'], APP, 'a 404 under /api/auth/ is readable by an allowed page')
  t.ok(varyOrigin(missing))
  const outside = await call(app, 'GET', '/nope', { headers: { origin: APP } })
  t.equal(outside.headers['access-control-allow-origin'], undefined, 'outside /api/auth/ there is no CORS')
})

t.test('a login refused for its origin still counts towards login.per_ip (README, "Rate limits": all login requests)', async (t) => {
  const app = await buildApp(t, { env: { ...ENV, AUTHD_RATE_LIMIT_LOGIN_PER_IP: '2/15m' } })
  await addUser(app, EMAIL, PASSWORD)
  for (let i = 0; i < 3; i++) {
    const r = await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD }, headers: { origin: EVIL } })
    t.equal(r.status, 403, 'a foreign origin is told 403, over the limit or not')
  }
  const next = await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD } })
  t.equal(next.status, 429, 'the two allowed were used by the foreign-origin requests')
  t.equal(next.body.message, 'Too many login attempts')
})

t.test('a foreign Origin on the cookie endpoints: 403 Forbidden origin, no cookie set or rotated', async (t) => {
  const app = await buildApp(t, { env: ENV })
  const user = await addUser(app, EMAIL, PASSWORD)
  const { jar, accessToken } = await signIn(app)
  const runs = app.hasher.runs
  for (const origin of [EVIL, 'null', 'http://app.example.com', 'https://app.example.com:444', 'https://APP.example.com.evil.net']) {
    const h = { origin }
    const replies: Array<[string, Reply]> = [
      ['login', await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD }, headers: h })],
      ['register', await call(app, 'POST', '/api/auth/register', { json: { email: 'x@example.com', password: PASSWORD }, headers: h })],
      ['refresh', await call(app, 'POST', '/api/auth/refresh', { headers: { ...h, ...jar.header() } })],
      ['logout', await call(app, 'POST', '/api/auth/logout', { json: { all: true }, headers: { ...h, ...jar.header() } })],
    ]
    for (const [what, r] of replies) {
      t.equal(r.status, 403, `${what} from ${origin}`)
      t.same(r.body, { success: false, message: 'Forbidden origin' })
      t.same(setCookies(r), [], `${what}: no Set-Cookie`)
      t.equal(r.headers['access-control-allow-origin'], undefined)
    }
  }
  t.equal(app.hasher.runs, runs, 'no password was checked')
  t.equal(await app.store.getUserByEmail('x@example.com'), undefined, 'no user registered')
  t.equal(await app.store.countSessions(user.id), 1, 'no session started or ended')
  const session = (await app.store.listSessions())[0]!
  t.equal(session.generation, 0, 'nothing rotated')
  t.equal((await call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${accessToken}` } })).status, 200)
  const refresh = await call(app, 'POST', '/api/auth/refresh', { headers: jar.header() })
  t.equal(refresh.status, 200, 'the refresh token still works afterwards')

  const me = await call(app, 'GET', '/api/auth/me', { headers: { origin: EVIL, authorization: `Bearer ${accessToken}` } })
  t.equal(me.status, 200, '/me sets no cookie and is not refused for its origin')
  t.equal(me.headers['access-control-allow-origin'], undefined, 'but a foreign page cannot read it')
})

t.test('the public_url origin and requests without Origin are allowed on the cookie endpoints', async (t) => {
  const app = await buildApp(t, { env: ENV })
  await addUser(app, EMAIL, PASSWORD)
  for (const headers of [{ origin: OWN }, {} as Record<string, string>]) {
    const what = headers.origin ?? 'no Origin'
    const login = await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD }, headers })
    t.equal(login.status, 200, `login, ${what}`)
    t.equal(login.headers['access-control-allow-origin'], undefined, 'same origin needs no CORS headers')
    const jar = new CookieJar(COOKIE)
    jar.take(login)
    const refresh = await call(app, 'POST', '/api/auth/refresh', { headers: { ...headers, ...jar.header() } })
    t.equal(refresh.status, 200, `refresh, ${what}`)
    jar.take(refresh)
    const logout = await call(app, 'POST', '/api/auth/logout', { headers: { ...headers, ...jar.header() } })
    t.equal(logout.status, 200, `logout, ${what}`)
    t.match(setCookies(logout)[0], /Max-Age=0/)
    const register = await call(app, 'POST', '/api/auth/register', { json: { email: `r${what.length}@example.com`, password: PASSWORD }, headers })
    t.equal(register.status, 201, `register, ${what}`)
  }
})

t.test('without cors.origins only the own origin (and no Origin) may use the cookie endpoints', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_SERVER_PUBLIC_URL: OWN } })
  await addUser(app, EMAIL, PASSWORD)
  const foreign = await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD }, headers: { origin: APP } })
  t.equal(foreign.status, 403)
  t.equal(foreign.headers['access-control-allow-origin'], undefined)
  t.equal((await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD }, headers: { origin: OWN } })).status, 200)
})
