/**
 * An acknowledged revocation survives kill -9 of the real daemon (README, "Durability"): right
 * after a 200 logout (or a detected reuse) the process is killed, and after a restart on the
 * same data directory the ended session stays ended. Runs the built daemon (npm run build).
 */
import t from 'tap'
import { call, CookieJar, type Reply } from '../helpers/app.js'
import { spawnDaemon, type Daemon } from '../helpers/daemon.js'

const PASSWORD = 'juniper-badger-83'
const COOKIE = '__Host-authd_rt'

interface Signed {
  jar: CookieJar
  accessToken: string
}

function signed(res: Reply): Signed {
  if (res.status !== 200 && res.status !== 201) throw new Error(`sign-in failed: ${res.status} ${res.text}`)
  const jar = new CookieJar(COOKIE)
  jar.take(res)
  return { jar, accessToken: res.body.data.accessToken }
}

const withToken = (token: string): CookieJar => Object.assign(new CookieJar(COOKIE), { value: token })
const refresh = (d: Daemon, jar: CookieJar): Promise<Reply> => call(d.url, 'POST', '/api/auth/refresh', { headers: jar.header() })
const me = (d: Daemon, s: Signed): Promise<Reply> => call(d.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${s.accessToken}` } })
const login = async (d: Daemon, email: string): Promise<Signed> =>
  signed(await call(d.url, 'POST', '/api/auth/login', { json: { email, password: PASSWORD } }))

t.test('a logged-out refresh token is still refused after kill -9 and a restart', async (t) => {
  const dir = t.testdir()
  const first = await spawnDaemon(t, dir)
  const reg = await call(first.url, 'POST', '/api/auth/register', { json: { email: 'dora@example.com', password: PASSWORD } })
  t.equal(reg.status, 201)
  const a = signed(reg)
  const rt0 = a.jar.value!
  const r1 = await refresh(first, a.jar)
  t.equal(r1.status, 200)
  a.jar.take(r1)
  const rt1 = a.jar.value!
  const b = await login(first, 'dora@example.com')
  const bToken = b.jar.value!

  const out = await call(first.url, 'POST', '/api/auth/logout', { headers: a.jar.header() })
  t.equal(out.status, 200)
  await first.crash()
  t.equal(first.proc.signalCode, 'SIGKILL')

  const second = await spawnDaemon(t, dir)
  for (const [name, token] of [['RT1 (logged out)', rt1], ['RT0', rt0]] as const) {
    const res = await refresh(second, withToken(token))
    t.equal(res.status, 401, `${name} is refused after the restart`)
    t.same(res.body, { success: false, message: 'Invalid or expired refresh token' })
  }
  t.equal((await me(second, a)).status, 401, 'and so is its access token')
  t.equal((await me(second, b)).status, 200, 'the other session (not logged out) survived the crash')
  t.equal((await refresh(second, withToken(bToken))).status, 200)
  await second.stop()
})

t.test('logout {"all":true} and a detected reuse also survive kill -9', async (t) => {
  const dir = t.testdir()
  // no reuse grace, so RT0 presented again at once is a reuse (with one it would get the live token)
  const first = await spawnDaemon(t, dir, { env: { AUTHD_SESSIONS_REUSE_GRACE: '0s' } })
  t.equal((await call(first.url, 'POST', '/api/auth/register', { json: { email: 'eli@example.com', password: PASSWORD } })).status, 201)
  t.equal((await call(first.url, 'POST', '/api/auth/register', { json: { email: 'fay@example.com', password: PASSWORD } })).status, 201)
  const e1 = await login(first, 'eli@example.com')
  const e2 = await login(first, 'eli@example.com')
  const f = await login(first, 'fay@example.com')
  const f0 = f.jar.value!
  const r1 = await refresh(first, f.jar)
  t.equal(r1.status, 200)
  f.jar.take(r1)
  const r2 = await refresh(first, f.jar)
  t.equal(r2.status, 200)
  const f2 = signed(r2)

  t.equal((await call(first.url, 'POST', '/api/auth/logout', { json: { all: true }, headers: e1.jar.header() })).status, 200)
  t.equal((await refresh(first, withToken(f0))).status, 401, 'fay presents RT0, two rotations old: her session is revoked')
  await first.crash()

  const second = await spawnDaemon(t, dir)
  t.equal((await refresh(second, e2.jar)).status, 401, "eli's other session stays ended")
  t.equal((await me(second, e2)).status, 401)
  t.equal((await refresh(second, f2.jar)).status, 401, "fay's revoked session stays revoked")
  t.equal((await me(second, f2)).status, 401)
  await second.stop()
})

t.test('the daemon on --port 0 treats the origin it actually listens on as its own', async (t) => {
  const d = await spawnDaemon(t, t.testdir())
  const res = await call(d.url, 'POST', '/api/auth/register', { json: { email: 'gus@example.com', password: PASSWORD }, headers: { origin: d.url } })
  t.equal(res.status, 201, d.url)
  const foreign = await call(d.url, 'POST', '/api/auth/login', { json: { email: 'gus@example.com', password: PASSWORD }, headers: { origin: 'http://127.0.0.1:1' } })
  t.equal(foreign.status, 403)
  await d.stop()
})
