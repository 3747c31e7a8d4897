/**
 * The store's database unreachable (README, error table): every request that needs the store
 * answers 503 `Service unavailable` with `Retry-After: 1`, never a 500; /readyz answers 503
 * `Not ready` (one ping of the store a second, however many probes), /healthz stays 200; service
 * resumes by itself once the store answers. A real LMDB store, made to reject as an unreachable
 * PostgreSQL does.
 */
import t, { type Test } from 'tap'
import { AppError } from '../../src/errors.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { addUser, call, CookieJar, buildApp, type Reply } from '../helpers/app.js'
import { switchable } from '../helpers/unavailable-store.js'

const PASSWORD = 'correct horse battery'
const COOKIE = '__Host-authd_rt'

async function downable(t: Test, opts: { readyPingMs?: number; env?: Record<string, string>; now?: () => number } = {}) {
  const real = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => real.close())
  const s = switchable(real)
  const app = await buildApp(t, { store: s.store, ...opts })
  return { s, app }
}

function unavailable(t: Test, r: Reply, what: string): void {
  t.equal(r.status, 503, `${what}: 503`)
  t.same(r.body, { success: false, message: 'Service unavailable' }, `${what}: the message`)
  t.equal(r.headers['retry-after'], '1', `${what}: Retry-After: 1`)
  t.match(r.headers['content-type'], /^application\/json; charset=utf-8$/, `${what}: JSON`)
}

t.test('every request that needs the store answers 503 Service unavailable with Retry-After: 1 while it does not answer, and service resumes after', async (t) => {
  const { s, app } = await downable(t, { readyPingMs: 20 })
  await addUser(app, 'ann@example.com', PASSWORD)
  const signedIn = await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  t.equal(signedIn.status, 200)
  const jar = new CookieJar(COOKIE)
  jar.take(signedIn)
  const bearer = { authorization: `Bearer ${signedIn.body.data.accessToken as string}` }
  t.equal((await call(app, 'GET', '/api/auth/me', { headers: bearer })).status, 200)

  s.down = true
  const replies: Array<[string, Reply]> = [
    ['me', await call(app, 'GET', '/api/auth/me', { headers: bearer })],
    ['login', await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })],
    ['register', await call(app, 'POST', '/api/auth/register', { json: { email: 'bob@example.com', password: PASSWORD } })],
    ['refresh', await call(app, 'POST', '/api/auth/refresh', { headers: jar.header() })],
    ['logout', await call(app, 'POST', '/api/auth/logout', { headers: jar.header() })],
    ['password', await call(app, 'POST', '/api/auth/password', { headers: bearer, json: { currentPassword: PASSWORD, newPassword: 'another good password' } })],
    ['sessions', await call(app, 'GET', '/api/auth/sessions', { headers: bearer })],
    ['session revoke', await call(app, 'DELETE', '/api/auth/sessions/abc', { headers: bearer })],
    ['mfa setup', await call(app, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer })],
    ['jwks', await call(app, 'GET', '/.well-known/jwks.json')],
  ]
  for (const [what, r] of replies) unavailable(t, r, what)
  const ready = await call(app, 'GET', '/readyz')
  t.equal(ready.status, 503)
  t.same(ready.body, { success: false, message: 'Not ready' }, '/readyz: not ready while the store does not answer')
  t.same((await call(app, 'GET', '/healthz')).body, { success: true, data: { status: 'ok' } }, '/healthz stays 200')
  t.same(app.logs.lines.filter((l) => l.msg === 'unexpected error'), [], 'nothing logged as unexpected')
  t.equal(app.logs.lines.filter((l) => l.event === 'store_unavailable').length, 1, 'the outage is said once')
  t.notOk(app.logs.text().includes(signedIn.body.data.accessToken as string), 'no token in the log')

  s.down = false
  t.equal((await call(app, 'GET', '/api/auth/me', { headers: bearer })).status, 200, 'service resumes by itself')
  t.equal((await call(app, 'POST', '/api/auth/refresh', { headers: jar.header() })).status, 200, 'the refresh token refused meanwhile still works')
  await new Promise((r) => setTimeout(r, 30))
  t.equal((await call(app, 'GET', '/readyz')).status, 200, 'ready again')
  t.equal(app.logs.lines.filter((l) => l.event === 'store_available').length, 1, 'and said once')
})

t.test('/readyz asks the store at most once a window (a second by default), however many probes come', async (t) => {
  // within the window: one a minute here, so that a test process held still for a while (a
  // loaded machine) cannot end it between the probes
  const { s, app } = await downable(t, { readyPingMs: 60_000 })
  const probes = await Promise.all(Array.from({ length: 20 }, () => call(app, 'GET', '/readyz')))
  t.same(new Set(probes.map((r) => r.status)), new Set([200]))
  t.equal(s.pings, 1, 'twenty probes, one ping')
  s.down = true
  const meanwhile = await Promise.all(Array.from({ length: 5 }, () => call(app, 'GET', '/readyz')))
  t.same(new Set(meanwhile.map((r) => r.status)), new Set([200]), 'within the window the answer stands')
  t.equal(s.pings, 1)

  // the default window: a second later the store is asked again
  const byDefault = await downable(t)
  t.equal((await call(byDefault.app, 'GET', '/readyz')).status, 200)
  t.equal(byDefault.s.pings, 1)
  byDefault.s.down = true
  await new Promise((r) => setTimeout(r, 1010))
  const later = await Promise.all(Array.from({ length: 5 }, () => call(byDefault.app, 'GET', '/readyz')))
  t.same(new Set(later.map((r) => r.status)), new Set([503]), 'a second later the store is asked again')
  t.equal(byDefault.s.pings, 2, 'once for the five')
})

t.test('draining answers Not ready without asking the store', async (t) => {
  const { s, app } = await downable(t)
  app.setReady(false)
  t.equal((await call(app, 'GET', '/readyz')).status, 503)
  t.equal(s.pings, 0)
})

t.test("an error of the store's own (a code with no status) is a fault here: the generic 500, logged, its sentence not shown", async (t) => {
  const real = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => real.close())
  // what a store invariant broken underneath would throw: an AppError only authctl shows
  const store = new Proxy(real, {
    get: (target, prop, receiver) =>
      prop === 'getUserByEmail' ? () => Promise.reject(new AppError('STORE_EMAIL_TAKEN')) : (Reflect.get(target, prop, receiver) as unknown),
  })
  const app = await buildApp(t, { store })
  const r = await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  t.equal(r.status, 500)
  t.same(r.body, { success: false, message: 'Internal server error' })
  t.equal(app.logs.lines.filter((l) => l.msg === 'unexpected error').length, 1, 'logged as unexpected')
})

t.test('a database that hangs: a /me that waited a second or more for a read that failed shares its 503, rather than wait as long again', async (t) => {
  const { s, app } = await downable(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const signedIn = await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  const bearer = { authorization: `Bearer ${signedIn.body.data.accessToken as string}` }
  t.equal((await call(app, 'GET', '/api/auth/me', { headers: bearer })).status, 200)
  s.down = true
  s.hangMs = 2500
  const reads = s.meReads
  const first = call(app, 'GET', '/api/auth/me', { headers: bearer })
  await new Promise((r) => setTimeout(r, 100))
  // arrives while the first read hangs, and waits for it
  const second = call(app, 'GET', '/api/auth/me', { headers: bearer })
  unavailable(t, await first, 'the /me whose read hung')
  unavailable(t, await second, 'the /me that waited for it')
  t.equal(s.meReads - reads, 1, 'one read: the second did not start one of its own (on a hung database, one more deadline)')
  s.down = false
  t.equal((await call(app, 'GET', '/api/auth/me', { headers: bearer })).status, 200, 'service resumes')
})

t.test('a refresh whose rotation is written while the keys cannot be read is answered with its token, signed with the keys as loaded', async (t) => {
  const { s, app } = await downable(t, { env: { AUTHD_SESSIONS_REUSE_GRACE: '0s' } })
  await addUser(app, 'ann@example.com', PASSWORD)
  const signedIn = await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  const jar = new CookieJar(COOKIE)
  jar.take(signedIn)
  // the database fails the keys' read alone, after the rotation's write went through
  s.failing.add('keysVersion')
  const r = await call(app, 'POST', '/api/auth/refresh', { headers: jar.header() })
  t.equal(r.status, 200, 'the rotated token is answered, not lost behind a 503')
  jar.take(r)
  s.failing.clear()
  t.equal((await call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${r.body.data.accessToken as string}` } })).status, 200, 'its access token verifies')
  t.equal((await call(app, 'POST', '/api/auth/refresh', { headers: jar.header() })).status, 200, 'and the new cookie refreshes: the session lives')
})

t.test('keys last confirmed longer ago than a second are not signed with when the store cannot be read for them: 503 (one revoked meanwhile would sign)', async (t) => {
  let now = 1_700_000_000_000
  const { s, app } = await downable(t, { now: () => now })
  await addUser(app, 'ann@example.com', PASSWORD)
  t.equal((await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })).status, 200)
  s.failing.add('keysVersion')
  now += 900
  const fresh = await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  t.equal(fresh.status, 200, 'confirmed 0.9 s ago: signed with them')
  t.match(app.logs.lines.find((l) => l.event === 'keys_unread'), { level: 'warn', keysAgeMs: 900 }, 'and said so')
  now += 1200
  unavailable(t, await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } }), 'confirmed 2.1 s ago')
})
