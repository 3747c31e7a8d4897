/**
 * A signed-in user's own changes (README, "Your own account" and "Second factor") made by a
 * request whose session ends while it runs: the password change, the second factor's set-up,
 * confirmation, disabling and new recovery codes are written only while the caller's session is
 * still stored, checked in the same write. The request is held just before its write (a gate in
 * front of the real store, LMDB or PostgreSQL), the caller's session ended meanwhile (a
 * revocation from elsewhere), then let go: 401 `Invalid or expired access token`, nothing changed.
 */
import t, { type Test } from 'tap'
import { codeAt, stepAt } from '../../src/core/totp.js'
import { addUser, call, type Reply, type TestApp } from '../helpers/app.js'
import type { Store } from '../../src/store/store.js'
import { gatedApp, type Gate } from '../helpers/gated-store.js'

const EMAIL = 'ada@example.com'
const PASSWORD = 'copper-lantern-58'
const NEW_PASSWORD = 'violet-harbour-93'
const ROOMY = { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1000/1m', AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '1000/1m', AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '1000/1m' }

const gated = (t: Test) => gatedApp(t, ['updateUser', 'updateUserEndingSessions'], ROOMY)

const sidOf = (token: string): string => (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sid: string }).sid

async function signIn(app: TestApp, password = PASSWORD): Promise<{ token: string; sid: string }> {
  const r = await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password } })
  if (r.status !== 200 || typeof r.body.data.accessToken !== 'string') throw new Error(`login: ${r.status} ${r.text}`)
  return { token: r.body.data.accessToken as string, sid: sidOf(r.body.data.accessToken as string) }
}

/** `request` held at its write while the caller's session `sid` is revoked; its answer */
async function endedMeanwhile(hold: () => Gate, store: Store, sid: string, request: () => Promise<Reply>): Promise<Reply> {
  const held = hold()
  const answer = request()
  await held.reached
  await store.revokeSession(sid)
  held.release()
  return answer
}

function isEnded(t: Test, r: Reply): void {
  t.equal(r.status, 401)
  t.same(r.body, { success: false, message: 'Invalid or expired access token' })
}

/** the factor on, through the API, by a session of its own */
async function withFactor(app: TestApp): Promise<{ secret: string }> {
  const { token } = await signIn(app)
  const auth = { authorization: `Bearer ${token}` }
  const secret = (await call(app, 'POST', '/api/auth/mfa/totp/setup', { headers: auth })).body.data.secret as string
  const ok = await call(app, 'POST', '/api/auth/mfa/totp/confirm', { headers: auth, json: { code: codeAt(secret, stepAt(Date.now())) } })
  if (ok.status !== 200) throw new Error(`confirm: ${ok.text}`)
  return { secret }
}

t.test('POST /api/auth/password whose session ends meanwhile: 401, the password unchanged, the other sessions kept', async (t) => {
  const { app, store, hold } = await gated(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  const caller = await signIn(app)
  const other = await signIn(app)
  const r = await endedMeanwhile(hold, store, caller.sid, () =>
    call(app, 'POST', '/api/auth/password', { headers: { authorization: `Bearer ${caller.token}` }, json: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD } }),
  )
  isEnded(t, r)
  t.equal((await store.getUser(user.id))!.passwordHash, user.passwordHash, 'the password is not changed')
  t.ok(await store.getSession(other.sid), 'the other session is not ended')
  t.notOk((await store.auditEvents({ limit: 50 })).some((e) => e.event === 'password.change'), 'no password.change event')
})

t.test('POST /api/auth/mfa/recovery-codes whose session ends meanwhile: 401, the codes unchanged', async (t) => {
  const { app, store, hold } = await gated(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  await withFactor(app)
  const before = (await store.getUser(user.id))!.mfa!.recoveryCodes
  const session = await signInWithCode(app, store, user.id)
  const r = await endedMeanwhile(hold, store, session.sid, () =>
    call(app, 'POST', '/api/auth/mfa/recovery-codes', { headers: { authorization: `Bearer ${session.token}` }, json: { password: PASSWORD } }),
  )
  isEnded(t, r)
  t.same((await store.getUser(user.id))!.mfa!.recoveryCodes, before, 'the recovery codes are the old ones')
})

t.test('POST /api/auth/mfa/totp/disable whose session ends meanwhile: 401, the factor still on', async (t) => {
  const { app, store, hold } = await gated(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  await withFactor(app)
  const session = await signInWithCode(app, store, user.id)
  const r = await endedMeanwhile(hold, store, session.sid, () =>
    call(app, 'POST', '/api/auth/mfa/totp/disable', { headers: { authorization: `Bearer ${session.token}` }, json: { password: PASSWORD } }),
  )
  isEnded(t, r)
  t.ok((await store.getUser(user.id))!.mfa, 'the factor is still on')
})

t.test('POST /api/auth/mfa/totp/setup and confirm whose session ends meanwhile: 401, nothing set up, the factor not on', async (t) => {
  const { app, store, hold } = await gated(t)
  const user = await addUser(app, EMAIL, PASSWORD)
  const a = await signIn(app)
  isEnded(t, await endedMeanwhile(hold, store, a.sid, () => call(app, 'POST', '/api/auth/mfa/totp/setup', { headers: { authorization: `Bearer ${a.token}` } })))
  t.equal((await store.getUser(user.id))!.mfaSetup, undefined, 'setup: nothing stored')
  const b = await signIn(app)
  const auth = { authorization: `Bearer ${b.token}` }
  const secret = (await call(app, 'POST', '/api/auth/mfa/totp/setup', { headers: auth })).body.data.secret as string
  isEnded(t, await endedMeanwhile(hold, store, b.sid, () => call(app, 'POST', '/api/auth/mfa/totp/confirm', { headers: auth, json: { code: codeAt(secret, stepAt(Date.now())) } })))
  t.equal((await store.getUser(user.id))!.mfa, undefined, 'confirm: the factor is not on')
})

/** a session of the user with the factor on: password, then a TOTP code of the stored secret */
async function signInWithCode(app: TestApp, store: Store, userId: string): Promise<{ token: string; sid: string }> {
  const first = await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD } })
  const secret = (await store.getUser(userId))!.mfa!.secret
  // the next step's code: the confirming code's step is used already
  const r = await call(app, 'POST', '/api/auth/login/mfa', { json: { mfaToken: first.body.data.mfaToken, code: codeAt(secret, stepAt(Date.now()) + 1) } })
  if (r.status !== 200) throw new Error(`second step: ${r.status} ${r.text}`)
  return { token: r.body.data.accessToken as string, sid: sidOf(r.body.data.accessToken as string) }
}
