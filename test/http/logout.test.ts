/**
 * POST /api/auth/logout, injected into the handler, with a cookie jar (README, "Call the API"): the session
 * ends at once, the cookie is cleared with its own attributes, idempotent, and {"all":true}.
 */
import { setTimeout } from 'node:timers/promises'
import t from 'tap'
import { addUser, call, CookieJar, openTestStore, buildApp, type Reply, type TestApp } from '../helpers/app.js'
import type { Store } from '../../src/store/store.js'

const EMAIL = 'lou@example.com'
const PASSWORD = 'indigo-walrus-31'
const COOKIE = '__Host-authd_rt'
const CLEARED = `${COOKIE}=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict`

function setCookies(reply: Reply): string[] {
  const sc = reply.headers['set-cookie']
  return sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]
}

interface Signed {
  jar: CookieJar
  accessToken: string
  sid: string
}

async function login(app: TestApp, email = EMAIL, password = PASSWORD, headers: Record<string, string> = {}): Promise<Signed> {
  const res = await call(app, 'POST', '/api/auth/login', { json: { email, password }, headers })
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`)
  const jar = new CookieJar(COOKIE)
  jar.take(res)
  const accessToken = res.body.data.accessToken as string
  const sid = JSON.parse(Buffer.from(accessToken.split('.')[1]!, 'base64url').toString('utf8')).sid as string
  return { jar, accessToken, sid }
}

const logout = (app: TestApp, jar: CookieJar | undefined, json?: unknown): Promise<Reply> =>
  call(app, 'POST', '/api/auth/logout', { headers: jar?.header() ?? {}, json })
const me = (app: TestApp, s: Signed): Promise<Reply> =>
  call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${s.accessToken}` } })
const refresh = (app: TestApp, jar: CookieJar): Promise<Reply> =>
  call(app, 'POST', '/api/auth/refresh', { headers: jar.header() })

t.test('logout ends the session at once: its refresh token and its access tokens', async (t) => {
  const app = await buildApp(t)
  await addUser(app, EMAIL, PASSWORD)
  const a = await login(app)
  const b = await login(app)
  t.not(a.sid, b.sid)
  t.equal((await me(app, a)).status, 200)

  const saved = new CookieJar(COOKIE)
  saved.value = a.jar.value
  const res = await logout(app, a.jar)
  t.equal(res.status, 200)
  t.same(res.body, { success: true, data: {} })
  t.equal(res.headers['cache-control'], 'no-store')
  t.same(setCookies(res), [CLEARED], 'cleared with the same name, path and attributes, and Max-Age=0')
  a.jar.take(res)
  t.equal(a.jar.value, undefined)

  const after = await me(app, a)
  t.equal(after.status, 401, 'the access token of the ended session is refused')
  t.same(after.body, { success: false, message: 'Invalid or expired access token' })
  t.equal(after.headers['www-authenticate'], 'Bearer error="invalid_token"')
  const reused = await refresh(app, saved)
  t.equal(reused.status, 401, 'and so is its refresh token')
  t.same(reused.body, { success: false, message: 'Invalid or expired refresh token' })
  t.equal(await app.store.getSession(a.sid), undefined)

  t.equal((await me(app, b)).status, 200, 'a second session of the same user still works')
  t.equal((await refresh(app, b.jar)).status, 200)
})

t.test('logout after refreshes ends the session for every token of it', async (t) => {
  const app = await buildApp(t)
  await addUser(app, EMAIL, PASSWORD)
  const a = await login(app)
  const rt0 = a.jar.value!
  const r1 = await refresh(app, a.jar)
  a.jar.take(r1)
  const access1 = { ...a, accessToken: r1.body.data.accessToken as string }
  t.equal((await logout(app, a.jar)).status, 200)
  t.equal((await me(app, a)).status, 401)
  t.equal((await me(app, access1)).status, 401, 'the access token from the refresh too')
  const old = new CookieJar(COOKIE)
  old.value = rt0
  t.equal((await refresh(app, old)).status, 401)
})

t.test('logout is idempotent and reveals nothing: no cookie, unknown or junk cookie, twice', async (t) => {
  const app = await buildApp(t)
  await addUser(app, EMAIL, PASSWORD)
  const other = await login(app)
  const cases: Array<[string, CookieJar | undefined]> = [
    ['no cookie', undefined],
    ['junk cookie', Object.assign(new CookieJar(COOKIE), { value: 'junk' })],
    ['unknown well-formed token', Object.assign(new CookieJar(COOKIE), { value: 'B'.repeat(43) })],
  ]
  for (const [why, jar] of cases) {
    const res = await logout(app, jar)
    t.equal(res.status, 200, why)
    t.same(res.body, { success: true, data: {} }, why)
    t.same(setCookies(res), [CLEARED], why)
  }
  const a = await login(app)
  const copy = Object.assign(new CookieJar(COOKIE), { value: a.jar.value })
  t.equal((await logout(app, a.jar)).status, 200)
  const twice = await logout(app, copy)
  t.equal(twice.status, 200, 'a second logout with the same cookie')
  t.same(twice.body, { success: true, data: {} })
  t.equal((await me(app, other)).status, 200, 'nobody else was signed out')
})

t.test('{"all":true} ends every session of the cookie\'s user, and only theirs', async (t) => {
  const app = await buildApp(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  await addUser(app, 'kim@example.com', PASSWORD)
  const sessions = [await login(app), await login(app), await login(app)]
  const kim = await login(app, 'kim@example.com')
  t.equal(await app.store.countSessions(user.id), 3)

  const res = await logout(app, sessions[0]!.jar, { all: true })
  t.equal(res.status, 200)
  t.same(res.body, { success: true, data: {} })
  t.same(setCookies(res), [CLEARED])
  t.equal(await app.store.countSessions(user.id), 0)
  for (const [i, s] of sessions.entries()) {
    t.equal((await me(app, s)).status, 401, `access token of session ${i}`)
    if (i > 0) t.equal((await refresh(app, s.jar)).status, 401, `refresh token of session ${i}`)
  }
  t.equal((await me(app, kim)).status, 200, "another user's session is untouched")
  t.equal((await refresh(app, kim.jar)).status, 200)
})

t.test('only a literal true means all', async (t) => {
  const app = await buildApp(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  const a = await login(app)
  const b = await login(app)
  t.equal((await logout(app, a.jar, { all: 'true' })).status, 200)
  t.equal(await app.store.countSessions(user.id), 1, 'only the cookie\'s session ended')
  t.equal((await me(app, b)).status, 200)
})

t.test('login always starts a fresh session, even when an old cookie is presented', async (t) => {
  const app = await buildApp(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  const a = await login(app)
  const b = await login(app, EMAIL, PASSWORD, a.jar.header())
  t.not(b.sid, a.sid)
  t.not(b.jar.value, a.jar.value)
  t.equal(await app.store.countSessions(user.id), 2)
  t.equal((await logout(app, b.jar)).status, 200)
  t.equal((await me(app, a)).status, 200, 'logging out the new session leaves the old one')
})

t.test('a logout is answered only once the revocation is written', async (t) => {
  // a slow disk: the store's revocation takes 300 ms to be acknowledged
  const real = await openTestStore(t, t.testdir())
  let revokedAt = 0
  const store: Store = {
    ...real,
    async revokeSession(id) {
      const removed = await real.revokeSession(id)
      await setTimeout(300)
      revokedAt = performance.now()
      return removed
    },
  }
  const app = await buildApp(t, { store })
  await addUser(app, EMAIL, PASSWORD)
  const a = await login(app)
  const res = await logout(app, a.jar)
  const answeredAt = performance.now()
  t.equal(res.status, 200)
  t.ok(revokedAt > 0 && revokedAt <= answeredAt, 'the 200 came after the store acknowledged the revocation')
})

t.test('a malformed logout body is a 400 and ends nothing', async (t) => {
  const app = await buildApp(t)
  await addUser(app, EMAIL, PASSWORD)
  const a = await login(app)
  const res = await call(app, 'POST', '/api/auth/logout', {
    headers: { ...a.jar.header(), 'content-type': 'application/json' },
    body: '{"all":',
  })
  t.equal(res.status, 400)
  t.same(res.body, { success: false, message: 'Invalid JSON body' })
  t.equal((await me(app, a)).status, 200)
})
