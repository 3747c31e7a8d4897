/**
 * A login whose password check is still running when the password changes, or the user is
 * disabled, must not leave a session behind that change (README, "Your own account": a changed
 * password ends every other session). The login is held just before its session write (a gate in
 * front of the real store, LMDB or PostgreSQL), the change made meanwhile, then the login let go:
 * 401 as it would have been a moment later, no session written, a login.failure event.
 * A password change held at its write the same way: a re-hash of the same password meanwhile
 * (a concurrent login, new parameters) lets it through, a password changed elsewhere does not.
 */
import argon2 from 'argon2'
import t, { type Test } from 'tap'
import { addUser, call, type TestApp } from '../helpers/app.js'
import type { Store } from '../../src/store/store.js'
import { gatedApp } from '../helpers/gated-store.js'

const EMAIL = 'ada@example.com'
const PASSWORD = 'copper-lantern-58'
const NEW_PASSWORD = 'violet-harbour-93'
const PROXY = { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1/32' }

/** the app on a real store whose session writes wait while `hold()` is on */
const gatedLogin = (t: Test) => gatedApp(t, ['createSession', 'createSessionFor'], PROXY)

const login = (app: TestApp, password: string, ip = '198.51.100.7') =>
  call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password }, headers: { 'x-forwarded-for': ip } })

async function lastLoginEvent(store: Store): Promise<{ event: string; reason: unknown }> {
  const e = (await store.auditEvents({ limit: 100 })).find((x) => x.event.startsWith('login.'))!
  return { event: e.event, reason: (e.detail as { reason?: unknown } | null)?.reason }
}

t.test('the password changed while a login with the old one was being checked: 401, no session, login.failure bad_password', async (t) => {
  const { app, store, hold } = await gatedLogin(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  const first = await login(app, PASSWORD, '198.51.100.1')
  t.equal(first.status, 200)
  const token = first.body.data.accessToken as string

  const held = hold()
  const racing = login(app, PASSWORD)
  await held.reached
  const changed = await call(app, 'POST', '/api/auth/password', {
    json: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD },
    headers: { 'x-forwarded-for': '198.51.100.1', authorization: `Bearer ${token}` },
  })
  t.equal(changed.status, 200, 'the change went through while the login waited')
  held.release()
  const r = await racing
  t.equal(r.status, 401)
  t.same(r.body, { success: false, message: 'Invalid email or password' })
  t.equal(r.headers['set-cookie'], undefined, 'no cookie')
  t.equal((await store.listSessions(user.id)).length, 1, "only the changing session is left: the racing login's was never written")
  t.same(await lastLoginEvent(store), { event: 'login.failure', reason: 'bad_password' })
  t.equal((await login(app, NEW_PASSWORD, '198.51.100.2')).status, 200, 'the new password signs in')
})

t.test('the user disabled while a login was being checked: 401, no session, login.failure disabled', async (t) => {
  const { app, store, hold } = await gatedLogin(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  const held = hold()
  const racing = login(app, PASSWORD)
  await held.reached
  t.ok(await store.updateUserEndingSessions(user.id, (u) => ({ ...u, disabled: true }), ''), 'disabled, its sessions ended')
  held.release()
  const r = await racing
  t.equal(r.status, 401)
  t.same(r.body, { success: false, message: 'Invalid email or password' })
  t.equal((await store.listSessions(user.id)).length, 0, 'no session')
  t.same(await lastLoginEvent(store), { event: 'login.failure', reason: 'disabled' })
})

t.test('a login held at its session write with nothing changed meanwhile still signs in (the gate alone changes nothing)', async (t) => {
  const { app, store, hold } = await gatedLogin(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  const held = hold()
  const racing = login(app, PASSWORD)
  await held.reached
  held.release()
  t.equal((await racing).status, 200)
  t.equal((await store.listSessions(user.id)).length, 1)
  t.same(await lastLoginEvent(store), { event: 'login.success', reason: undefined })
})

/** the app on a real store whose password-and-sessions writes wait while `hold()` is on */
const gatedChange = (t: Test) => gatedApp(t, ['updateUserEndingSessions'], PROXY)

const changePassword = (app: TestApp, token: string, currentPassword: string) =>
  call(app, 'POST', '/api/auth/password', {
    json: { currentPassword, newPassword: NEW_PASSWORD },
    headers: { 'x-forwarded-for': '198.51.100.1', authorization: `Bearer ${token}` },
  })

t.test('a password change held at its write while a login re-hashes the same password (new parameters): 200, the new password stored', async (t) => {
  const { app, store, hold } = await gatedChange(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  const first = await login(app, PASSWORD, '198.51.100.1')
  t.equal(first.status, 200)
  const held = hold()
  const racing = changePassword(app, first.body.data.accessToken as string, PASSWORD)
  await held.reached
  // what a concurrent login's re-hash writes: the same password, other parameters
  const rehashed = await argon2.hash(PASSWORD, { type: argon2.argon2id, memoryCost: 19456, timeCost: 3, parallelism: 1 })
  await store.updateUser(user.id, (u) => ({ ...u, passwordHash: rehashed }))
  held.release()
  const r = await racing
  t.equal(r.status, 200, 'the password it proved is still the current one')
  t.same(r.body, { success: true, data: {} })
  const stored = await store.getUser(user.id)
  t.ok(await argon2.verify(stored!.passwordHash, NEW_PASSWORD), 'the new password is stored')
  t.equal((await login(app, NEW_PASSWORD, '198.51.100.2')).status, 200, 'and signs in')
  t.equal((await store.auditEvents({ limit: 100 })).filter((e) => e.event === 'password.change').length, 1, 'one password.change event')
})

t.test('a password change held at its write while the password was changed elsewhere: 403, nothing written', async (t) => {
  const { app, store, hold } = await gatedChange(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  const first = await login(app, PASSWORD, '198.51.100.1')
  const held = hold()
  const racing = changePassword(app, first.body.data.accessToken as string, PASSWORD)
  await held.reached
  const other = await argon2.hash('amber-quarry-27', { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 })
  await store.updateUser(user.id, (u) => ({ ...u, passwordHash: other }))
  held.release()
  const r = await racing
  t.equal(r.status, 403)
  t.same(r.body, { success: false, message: 'Current password is incorrect' })
  t.equal((await store.getUser(user.id))!.passwordHash, other, 'the other change stands')
  t.equal((await store.auditEvents({ limit: 100 })).filter((e) => e.event === 'password.change').length, 0, 'no password.change event')
})
