/**
 * Durability (README, "Durability"): every write the real daemon acknowledged — users registered,
 * sessions started by login, a session ended by logout — is still there after `kill -9` and a
 * restart on the same data directory.
 */
import t from 'tap'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { call, type Reply } from '../helpers/app.js'
import { spawnDaemon } from '../helpers/daemon.js'
import { decode } from '../helpers/jwt.js'

const PASSWORD = 'vermilion-otter-42'
const COOKIE = '__Host-authd_rt'
const ENV = {
  AUTHD_RATE_LIMIT_REGISTER_PER_IP: '1000/1m',
  AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1000/1m',
  AUTHD_RATE_LIMIT_REFRESH_PER_IP: '1000/1m',
}

const cookieOf = (r: Reply): string => {
  const sc = r.headers['set-cookie']
  const first = (Array.isArray(sc) ? sc[0] : sc) ?? ''
  return first.split(';')[0]!.slice(COOKIE.length + 1)
}

interface Signed {
  email: string
  userId: string
  accessToken: string
  refresh: string
  sid: string
}

const signed = (email: string, r: Reply): Signed => ({
  email,
  userId: r.body.data.user.id,
  accessToken: r.body.data.accessToken,
  refresh: cookieOf(r),
  sid: decode(r.body.data.accessToken).payload.sid as string,
})

t.test('keeps every acknowledged write across kill -9 and a restart', async (t) => {
  const dir = t.testdir()
  const first = await spawnDaemon(t, dir, { env: ENV })

  const emails = Array.from({ length: 8 }, (_, i) => `user${i}@example.com`)
  const registered = await Promise.all(
    emails.map(async (email) => {
      const r = await call(first.url, 'POST', '/api/auth/register', { json: { email, password: PASSWORD } })
      if (r.status !== 201) throw new Error(`register ${email}: ${r.status} ${r.text}`)
      return signed(email, r)
    }),
  )
  const loggedIn = await Promise.all(
    emails.map(async (email) => {
      const r = await call(first.url, 'POST', '/api/auth/login', { json: { email, password: PASSWORD } })
      if (r.status !== 200) throw new Error(`login ${email}: ${r.status} ${r.text}`)
      return signed(email, r)
    }),
  )
  const gone = loggedIn[0]!
  const out = await call(first.url, 'POST', '/api/auth/logout', { headers: { cookie: `${COOKIE}=${gone.refresh}` } })
  t.equal(out.status, 200, 'logout acknowledged')
  // the last write is acknowledged; kill at once, with no grace for flushing
  const last = await call(first.url, 'POST', '/api/auth/login', { json: { email: emails[1], password: PASSWORD } })
  t.equal(last.status, 200)
  await first.crash()
  t.equal(first.proc.signalCode, 'SIGKILL')
  const lastSession = signed(emails[1]!, last)

  // read the store itself while no daemon runs
  const store = await openLmdbStore({ path: dir })
  try {
    for (const r of registered) {
      const user = await store.getUserByEmail(r.email)
      t.equal(user?.id, r.userId, `${r.email} is stored`)
      t.ok(await store.getSession(r.sid), `${r.email}: the session of register is stored`)
    }
    for (const s of loggedIn.slice(1)) t.ok(await store.getSession(s.sid), `${s.email}: the session of login is stored`)
    t.ok(await store.getSession(lastSession.sid), 'the session acknowledged just before the kill is stored')
    t.equal(await store.getSession(gone.sid), undefined, 'the session ended by logout stays ended')
  } finally {
    await store.close()
  }

  const second = await spawnDaemon(t, dir, { env: ENV })
  for (const s of [...registered, ...loggedIn.slice(1), lastSession]) {
    const me = await call(second.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${s.accessToken}` } })
    t.same(me.body, { success: true, data: { id: s.userId, email: s.email, mfaEnabled: false } }, `${s.email}: an access token from before the crash still works (keys and session kept)`)
  }
  const goneMe = await call(second.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${gone.accessToken}` } })
  t.equal(goneMe.status, 401, 'the logged-out access token stays dead')
  const goneRefresh = await call(second.url, 'POST', '/api/auth/refresh', { headers: { cookie: `${COOKIE}=${gone.refresh}` } })
  t.equal(goneRefresh.status, 401, 'and so does its refresh token')
  const refreshed = await call(second.url, 'POST', '/api/auth/refresh', { headers: { cookie: `${COOKIE}=${lastSession.refresh}` } })
  t.equal(refreshed.status, 200, 'a refresh token from before the crash rotates')
  const again = await call(second.url, 'POST', '/api/auth/login', { json: { email: emails[7], password: PASSWORD } })
  t.equal(again.status, 200, 'a user registered before the crash logs in')
  t.equal(again.body.data.user.id, registered[7]!.userId)
  t.equal((await call(second.url, 'POST', '/api/auth/register', { json: { email: emails[3], password: PASSWORD } })).status, 409, 'and cannot be registered twice')
  t.equal(await second.stop(), 0)
})
