/**
 * Cookie tossing: a sibling subdomain (or a page on plain HTTP) can plant a cookie of the refresh
 * cookie's name that browsers send before ours. A request that carries more than one cookie of the
 * name carries none that is valid (README, Refresh tokens and sessions): refresh answers 401
 * without clearing any cookie, logout answers 200, and neither touches a session.
 */
import t from 'tap'
import { addUser, call, CookieJar, buildApp, type Reply, type TestApp } from '../helpers/app.js'

const EMAIL = 'toss@example.com'
const PASSWORD = 'planted-cookie-passphrase'
const COOKIE = '__Host-authd_rt'
const PLANTED = `${'P'.repeat(22)}.${'p'.repeat(43)}`

const setCookies = (r: Reply): string[] => {
  const sc = r.headers['set-cookie']
  return sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]
}

async function signIn(app: TestApp): Promise<{ token: string; access: string }> {
  const r = await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD } })
  const jar = new CookieJar(COOKIE)
  jar.take(r)
  return { token: jar.value!, access: r.body.data.accessToken as string }
}

t.test('refresh with two cookies of the name: 401, nothing cleared, the session untouched', async (t) => {
  const app = await buildApp(t)
  await addUser(app, EMAIL, PASSWORD)
  const { token } = await signIn(app)
  for (const cookie of [
    `${COOKIE}=${PLANTED}; ${COOKIE}=${token}`,
    `${COOKIE}=${token}; ${COOKIE}=${PLANTED}`,
    `${COOKIE}=${token}; other=1; ${COOKIE}=${token}`,
  ]) {
    const r = await call(app, 'POST', '/api/auth/refresh', { headers: { cookie } })
    t.equal(r.status, 401, cookie.slice(0, 40))
    t.same(r.body, { success: false, message: 'Invalid or expired refresh token' })
    t.same(setCookies(r), [], 'no cookie cleared (it would clear ours, not the planted one)')
  }
  const ours = await call(app, 'POST', '/api/auth/refresh', { headers: { cookie: `${COOKIE}=${token}` } })
  t.equal(ours.status, 200, 'our own token was never used: it still refreshes once')
})

t.test('logout with two cookies of the name: 200, nothing cleared, the session untouched', async (t) => {
  const app = await buildApp(t)
  await addUser(app, EMAIL, PASSWORD)
  const { token, access } = await signIn(app)
  for (const body of [undefined, { all: true }]) {
    const r = await call(app, 'POST', '/api/auth/logout', { headers: { cookie: `${COOKIE}=${PLANTED}; ${COOKIE}=${token}` }, json: body })
    t.equal(r.status, 200)
    t.same(r.body, { success: true, data: {} })
    t.same(setCookies(r), [], 'no cookie cleared')
  }
  t.equal((await call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${access}` } })).status, 200, 'the session goes on')
  t.equal((await call(app, 'POST', '/api/auth/refresh', { headers: { cookie: `${COOKIE}=${token}` } })).status, 200)
})

t.test('one cookie of the name among others is read as before', async (t) => {
  const app = await buildApp(t)
  await addUser(app, EMAIL, PASSWORD)
  const { token } = await signIn(app)
  const r = await call(app, 'POST', '/api/auth/refresh', { headers: { cookie: `a=1; __Host-authd_rtx=2; ${COOKIE}=${token}; authd_rt=3` } })
  t.equal(r.status, 200)
})
