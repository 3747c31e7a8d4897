/**
 * The audit log's HTTP events, caused by requests over a real socket to authd listening on
 * 127.0.0.1, port 0 (README, "Audit log"): each kind appears once, with its actor, user, session,
 * the client's address and user agent, and its detail; a refused request is no event but a block
 * is, once per limit and key per window, for every limit; and no field of any event holds a
 * password, a token, a code, a TOTP secret or a cookie the test handled, or a SHA-256 of one. The
 * chain verifies.
 */
import t, { type Test } from 'tap'
import { verifyChain } from '../../src/core/audit.js'
import { codeAt, stepAt } from '../../src/core/totp.js'
import type { AuditEvent } from '../../src/store/store.js'
import { secretsIn } from '../helpers/audit.js'
import { addUser, ageLimits, call, CookieJar, startServer, type Reply, type TestServer } from '../helpers/app.js'

const PASSWORD = 'correct horse battery'
const NEW_PASSWORD = 'a brand new passphrase 42'
const REFRESH = '__Host-authd_rt'
const DEVICE = '__Host-authd_device'
const T0 = Date.UTC(2026, 10, 24, 12, 0, 0)
const IP = '198.51.100.23'
const UA = 'audit-test/1.0 (+https://example.com)'
const ROOMY = {
  AUTHD_SERVER_TRUST_PROXY: '127.0.0.1/32',
  AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1000/1m',
  AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '1000/1m',
  AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '1000/1m',
}

interface Harness extends TestServer {
  clock: { at: number }
  /** every password, token, code, secret and cookie the test handled */
  secrets: Set<string>
  /** kept events, oldest first */
  events(): Promise<AuditEvent[]>
  /** the events after the first `from` */
  since(from: number): Promise<AuditEvent[]>
  post(path: string, opts?: { json?: unknown; token?: string; cookie?: string; ip?: string; ua?: string }): Promise<Reply>
  /** whatever the test did: every event is clean of its secrets, and the chain holds */
  check(t: Test): Promise<void>
}

async function harness(t: Test, env: Record<string, string> = {}): Promise<Harness> {
  const clock = { at: T0 }
  const server = await startServer(t, { now: () => clock.at, env: { ...ROOMY, ...env } })
  const secrets = new Set<string>([PASSWORD, NEW_PASSWORD])
  const events = async (): Promise<AuditEvent[]> => (await server.store.auditEvents({ limit: 10_000 })).reverse()
  const h: Harness = Object.assign(server, {
    clock,
    secrets,
    events,
    since: async (from: number) => (await events()).slice(from),
    async check(t: Test) {
      const all = await events()
      t.same(secretsIn(all, [...secrets]), [], `no secret in ${all.length} events`)
      t.same(await server.store.auditChain(verifyChain), { ok: true, events: all.length }, 'the chain holds')
    },
    async post(path: string, opts: { json?: unknown; token?: string; cookie?: string; ip?: string; ua?: string } = {}) {
      const headers: Record<string, string> = { 'x-forwarded-for': opts.ip ?? IP, 'user-agent': opts.ua ?? UA }
      if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`
      if (opts.cookie !== undefined) headers.cookie = opts.cookie
      const r = await call(server.url, path.startsWith('DELETE ') ? 'DELETE' : 'POST', path.replace(/^DELETE /, ''), { json: opts.json, headers })
      // everything secret an answer carries: tokens, the TOTP secret and its URL, recovery codes,
      // and the cookies (a refresh token's family part too: its hash finds the session)
      const d = r.body?.data
      for (const v of [d?.accessToken, d?.mfaToken, d?.secret, d?.otpauthUrl, ...(d?.recoveryCodes ?? [])]) if (typeof v === 'string') secrets.add(v)
      for (const name of [REFRESH, DEVICE]) {
        const jar = new CookieJar(name)
        jar.take(r)
        if (jar.value === undefined) continue
        secrets.add(jar.value)
        if (name === REFRESH) secrets.add(jar.value.split('.')[0]!)
      }
      return r
    },
  })
  return h
}

const sidOf = (accessToken: string): string => JSON.parse(Buffer.from(accessToken.split('.')[1]!, 'base64url').toString()).sid as string
const refreshCookie = (r: Reply): string => {
  const jar = new CookieJar(REFRESH)
  jar.take(r)
  return `${REFRESH}=${jar.value}`
}
/** the fields every HTTP event has, with the test's client */
const api = { actor: 'api', ip: IP, userAgent: UA }
const iso = (ms: number): string => new Date(ms).toISOString()

async function login(h: Harness, email: string, password = PASSWORD, opts: { ip?: string; ua?: string } = {}): Promise<Reply> {
  return h.post('/api/auth/login', { json: { email, password }, ...opts })
}

t.test('register, login.success, logout (one and all): user, session, client, time', async (t) => {
  const h = await harness(t)
  const reg = await h.post('/api/auth/register', { json: { email: 'Ann@Example.com', password: PASSWORD } })
  t.equal(reg.status, 201, reg.text)
  const userId = reg.body.data.user.id as string
  const regSid = sidOf(reg.body.data.accessToken)
  let got = await h.events()
  t.equal(got.length, 1)
  t.match(got[0], { seq: 1, time: iso(T0), event: 'register', ...api, userId, email: 'ann@example.com', sessionId: regSid, detail: {} })
  t.match(got[0]!.hash, /^[0-9a-f]{64}$/)

  h.clock.at += 1000
  const li = await login(h, 'ann@example.com')
  t.equal(li.status, 200)
  const sid = sidOf(li.body.data.accessToken)
  got = await h.since(1)
  t.same(got.map((e) => e.event), ['login.success'])
  t.match(got[0], { time: iso(T0 + 1000), event: 'login.success', ...api, userId, email: 'ann@example.com', sessionId: sid, detail: {} })

  t.equal((await h.post('/api/auth/logout', { cookie: refreshCookie(li) })).status, 200)
  got = await h.since(2)
  t.same(got.map((e) => e.event), ['logout'])
  t.match(got[0], { event: 'logout', ...api, userId, email: 'ann@example.com', sessionId: sid, detail: {} })

  const again = await login(h, 'ann@example.com')
  t.equal((await h.post('/api/auth/logout', { cookie: refreshCookie(again), json: { all: true } })).status, 200)
  got = await h.since(4)
  t.same(got.map((e) => e.event), ['logout'])
  t.match(got[0], { userId, sessionId: sidOf(again.body.data.accessToken), detail: { all: true } })
  // a logout with a token of no session ends nothing and records nothing
  t.equal((await h.post('/api/auth/logout', { cookie: refreshCookie(again) })).status, 200)
  t.equal((await h.events()).length, 5)
  await h.check(t)
})

t.test('login.failure: unknown_user (the email only if it is an address), bad_password, disabled', async (t) => {
  const h = await harness(t)
  const ann = await addUser(h, 'ann@example.com', PASSWORD)
  const bob = await addUser(h, 'bob@example.com', PASSWORD, { disabled: true })
  t.equal((await login(h, 'Nobody@Example.com')).status, 401)
  t.equal((await login(h, 'ann@example.com', 'wrong password here')).status, 401)
  t.equal((await login(h, 'bob@example.com')).status, 401)
  // a password typed into the email field is not kept
  h.secrets.add('S3cret@hunter2')
  t.equal((await login(h, 'S3cret@hunter2')).status, 401)
  // nor one whose part after the @ reads as an IP address (`2024` is 0.0.7.232 to ToASCII, which
  // a check for a dot in the domain would let through): a Word@digits password is a common shape
  for (const typed of ['Summer@2024', 'Monkey@2024.', 'Dragon@0x10']) {
    h.secrets.add(typed.split('@')[0]!.toLowerCase())
    t.equal((await login(h, typed)).status, 401)
  }
  const got = await h.events()
  t.same(got.map((e) => [e.event, e.detail.reason]), [
    ['login.failure', 'unknown_user'],
    ['login.failure', 'bad_password'],
    ['login.failure', 'disabled'],
    ['login.failure', 'unknown_user'],
    ['login.failure', 'unknown_user'],
    ['login.failure', 'unknown_user'],
    ['login.failure', 'unknown_user'],
  ])
  for (const e of got.slice(4)) t.match(e, { userId: null, email: null }, 'no email kept')
  t.match(got[0], { ...api, userId: null, email: 'nobody@example.com', sessionId: null })
  t.match(got[1], { ...api, userId: ann.id, email: 'ann@example.com', sessionId: null })
  t.match(got[2], { ...api, userId: bob.id, email: 'bob@example.com' })
  t.match(got[3], { userId: null, email: null })
  // malformed requests are no login attempt: no event
  t.equal((await h.post('/api/auth/login', { json: { email: 'ann@example.com' } })).status, 400)
  t.equal((await h.events()).length, 7)
  await h.check(t)
})

t.test('rate_limit.block: once per limit and key per window, not per refused request', async (t) => {
  const h = await harness(t, { AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '2/15m' })
  await addUser(h, 'ann@example.com', PASSWORD)
  const statuses: number[] = []
  for (let i = 0; i < 6; i++) statuses.push((await login(h, 'ann@example.com', `wrong password ${i}`)).status)
  t.same(statuses, [401, 401, 429, 429, 429, 429])
  let got = await h.events()
  t.same(got.map((e) => e.event), ['login.failure', 'login.failure', 'rate_limit.block'])
  t.match(got[2], { ...api, email: 'ann@example.com', detail: { limit: 'login.per_ip_email', window: '15m', retryAfter: Number } })
  t.ok((got[2]!.detail.retryAfter as number) > 0 && (got[2]!.detail.retryAfter as number) <= 900)

  // another address is another key: its own block
  for (let i = 0; i < 3; i++) await login(h, 'ann@example.com', `wrong password b${i}`, { ip: '203.0.113.99' })
  got = await h.since(3)
  t.same(got.map((e) => [e.event, e.ip]), [
    ['login.failure', '203.0.113.99'],
    ['login.failure', '203.0.113.99'],
    ['rate_limit.block', '203.0.113.99'],
  ])

  // the next window: blocked again, recorded again, once
  h.clock.at += 15 * 60_000 + 1000
  // on PostgreSQL the windows run on the database's clock: age its events as far
  await ageLimits(h, 15 * 60_000 + 1000)
  for (let i = 0; i < 5; i++) await login(h, 'ann@example.com', `wrong password c${i}`)
  got = await h.since(6)
  t.same(got.map((e) => e.event), ['login.failure', 'login.failure', 'rate_limit.block'])
  await h.check(t)
})

t.test('rate_limit.block for login.per_ip, register.per_ip and refresh.per_ip: the address, no email', async (t) => {
  const h = await harness(t, { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1/1m', AUTHD_RATE_LIMIT_REGISTER_PER_IP: '1/1h', AUTHD_RATE_LIMIT_REFRESH_PER_IP: '1/5m' })
  await addUser(h, 'ann@example.com', PASSWORD)
  const ok = await login(h, 'ann@example.com')
  for (let i = 0; i < 3; i++) t.equal((await login(h, 'ann@example.com')).status, 429)
  await h.post('/api/auth/register', { json: { email: 'new1@example.com', password: PASSWORD } })
  for (let i = 0; i < 3; i++) t.equal((await h.post('/api/auth/register', { json: { email: `new${i + 2}@example.com`, password: PASSWORD } })).status, 429)
  const cookie = refreshCookie(ok)
  await h.post('/api/auth/refresh', { cookie })
  for (let i = 0; i < 3; i++) t.equal((await h.post('/api/auth/refresh', { cookie })).status, 429)
  const blocks = (await h.events()).filter((e) => e.event === 'rate_limit.block')
  t.same(blocks.map((e) => e.detail.limit), ['login.per_ip', 'register.per_ip', 'refresh.per_ip'])
  t.same(blocks.map((e) => [e.ip, e.email, e.userId]), [
    [IP, null, null],
    [IP, null, null],
    [IP, null, null],
  ])
  t.same(blocks.map((e) => e.detail.window), ['1m', '1h', '5m'])
  await h.check(t)
})

t.test('the second factor: mfa.enable, login.mfa_required, mfa.failure, mfa.success (both methods), mfa.recovery_codes, mfa.disable, and its block', async (t) => {
  const h = await harness(t, { AUTHD_RATE_LIMIT_MFA_PER_USER: '2/15m' })
  const ann = await addUser(h, 'ann@example.com', PASSWORD)
  const first = await login(h, 'ann@example.com')
  const token = first.body.data.accessToken as string
  const sid = sidOf(token)
  const secret = (await h.post('/api/auth/mfa/totp/setup', { token })).body.data.secret as string
  const setupCode = codeAt(secret, stepAt(h.clock.at))
  h.secrets.add(setupCode)
  t.equal((await h.post('/api/auth/mfa/totp/confirm', { token, json: { code: setupCode } })).status, 200)
  h.clock.at += 30_000
  let got = await h.since(1)
  t.same(got.map((e) => e.event), ['mfa.enable'], 'a setup alone is no event')
  t.match(got[0], { ...api, userId: ann.id, email: 'ann@example.com', sessionId: sid, detail: {} })

  const challenge = await login(h, 'ann@example.com')
  const mfaToken = challenge.body.data.mfaToken as string
  t.equal((await h.post('/api/auth/login/mfa', { json: { mfaToken, code: '000000' } })).status, 401)
  h.secrets.add('000000')
  const code = codeAt(secret, stepAt(h.clock.at))
  h.secrets.add(code)
  const signed = await h.post('/api/auth/login/mfa', { json: { mfaToken, code } })
  t.equal(signed.status, 200)
  got = await h.since(2)
  t.same(got.map((e) => e.event), ['login.mfa_required', 'mfa.failure', 'mfa.success'])
  t.match(got[0], { ...api, userId: ann.id, email: 'ann@example.com', sessionId: null, detail: {} })
  t.match(got[1], { ...api, userId: ann.id, sessionId: null, detail: { method: 'totp' } })
  t.match(got[2], { ...api, userId: ann.id, sessionId: sidOf(signed.body.data.accessToken), detail: { method: 'totp' } })

  const recovery = (await h.post('/api/auth/mfa/recovery-codes', { token, json: { password: PASSWORD } })).body.data.recoveryCodes as string[]
  const again = (await login(h, 'ann@example.com')).body.data.mfaToken as string
  const viaCode = await h.post('/api/auth/login/mfa', { json: { mfaToken: again, recoveryCode: recovery[0] } })
  t.equal(viaCode.status, 200)
  got = await h.since(5)
  t.same(got.map((e) => e.event), ['mfa.recovery_codes', 'login.mfa_required', 'mfa.success'])
  t.match(got[0], { userId: ann.id, sessionId: sid, detail: {} })
  t.match(got[2], { sessionId: sidOf(viaCode.body.data.accessToken), detail: { method: 'recovery_code' } })

  // wrong codes until mfa.per_user is spent: two failures, one block for all the refusals
  const third = (await login(h, 'ann@example.com')).body.data.mfaToken as string
  for (const c of ['111111', '222222', '333333', '444444']) {
    h.secrets.add(c)
    await h.post('/api/auth/login/mfa', { json: { mfaToken: third, code: c } })
  }
  got = await h.since(8)
  t.same(got.map((e) => e.event), ['login.mfa_required', 'mfa.failure', 'mfa.failure', 'rate_limit.block'])
  t.match(got[3], { userId: ann.id, email: 'ann@example.com', detail: { limit: 'mfa.per_user', window: '15m' } })

  t.equal((await h.post('/api/auth/mfa/totp/disable', { token, json: { password: PASSWORD } })).status, 200)
  got = await h.since(12)
  t.same(got.map((e) => e.event), ['mfa.disable'])
  t.match(got[0], { ...api, userId: ann.id, sessionId: sid, detail: {} })
  await h.check(t)
})

t.test('password.change and session.revoke: the calling session, the session ended', async (t) => {
  const h = await harness(t)
  const ann = await addUser(h, 'ann@example.com', PASSWORD)
  const a = await login(h, 'ann@example.com')
  const b = await login(h, 'ann@example.com', PASSWORD, { ip: '203.0.113.5' })
  const token = a.body.data.accessToken as string
  t.equal((await h.post('DELETE /api/auth/sessions/' + sidOf(b.body.data.accessToken), { token })).status, 200)
  let got = await h.since(2)
  t.same(got.map((e) => e.event), ['session.revoke'])
  t.match(got[0], { ...api, userId: ann.id, email: 'ann@example.com', sessionId: sidOf(b.body.data.accessToken), detail: { current: false } })
  // not the user's own, or gone: 404 and nothing recorded
  t.equal((await h.post('DELETE /api/auth/sessions/' + sidOf(b.body.data.accessToken), { token })).status, 404)

  t.equal((await h.post('/api/auth/password', { token, json: { currentPassword: 'not the password', newPassword: NEW_PASSWORD } })).status, 403)
  t.equal((await h.post('/api/auth/password', { token, json: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD } })).status, 200)
  got = await h.since(3)
  t.same(got.map((e) => e.event), ['password.change'], 'a wrong current password changes nothing: no event')
  t.match(got[0], { ...api, userId: ann.id, email: 'ann@example.com', sessionId: sidOf(token), detail: {} })
  await h.check(t)
})

t.test('refresh.reuse: the session ended, with the presenter’s address and user agent', async (t) => {
  const h = await harness(t)
  const ann = await addUser(h, 'ann@example.com', PASSWORD)
  const li = await login(h, 'ann@example.com')
  const old = refreshCookie(li)
  const rotated = await h.post('/api/auth/refresh', { cookie: old })
  t.equal(rotated.status, 200)
  t.same((await h.since(1)).map((e) => e.event), [], 'a rotation is no event')
  h.clock.at += 60_000
  const thief = await h.post('/api/auth/refresh', { cookie: old, ip: '192.0.2.66', ua: 'curl/8.0 (thief)' })
  t.equal(thief.status, 401)
  const got = await h.since(1)
  t.same(got.map((e) => e.event), ['refresh.reuse'])
  t.match(got[0], { actor: 'api', ip: '192.0.2.66', userAgent: 'curl/8.0 (thief)', userId: ann.id, email: 'ann@example.com', sessionId: sidOf(li.body.data.accessToken), detail: {} })
  // the session is gone: presented again, nothing more to record
  await h.post('/api/auth/refresh', { cookie: old })
  t.equal((await h.events()).length, 2)
  await h.check(t)
})

t.test('session.evict: the session sessions.max_per_user ended, in the login that ended it', async (t) => {
  const h = await harness(t, { AUTHD_SESSIONS_MAX_PER_USER: '2' })
  const ann = await addUser(h, 'ann@example.com', PASSWORD)
  const sids: string[] = []
  for (let i = 0; i < 3; i++) {
    h.clock.at += 1000
    sids.push(sidOf((await login(h, 'ann@example.com')).body.data.accessToken))
  }
  const got = await h.events()
  t.same(got.map((e) => e.event), ['login.success', 'login.success', 'login.success', 'session.evict'])
  t.match(got[3], { ...api, userId: ann.id, email: 'ann@example.com', sessionId: sids[0], detail: { max: 2 } })
  t.equal(got[3]!.time, got[2]!.time, 'written with the login that ended it')
  t.equal(got[2]!.sessionId, sids[2])
  await h.check(t)
})

t.test('rate_limit.block for login.per_email: the email, from whichever address', async (t) => {
  const h = await harness(t, { AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '2/1h' })
  const ann = await addUser(h, 'ann@example.com', PASSWORD)
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) statuses.push((await login(h, 'ann@example.com', `wrong password ${i}`, { ip: `203.0.113.${10 + i}` })).status)
  t.same(statuses, [401, 401, 429, 429, 429])
  const got = await h.events()
  t.same(got.map((e) => e.event), ['login.failure', 'login.failure', 'rate_limit.block'])
  t.match(got[2], { actor: 'api', ip: '203.0.113.12', userAgent: UA, userId: ann.id, email: 'ann@example.com', sessionId: null, detail: { limit: 'login.per_email', window: '1h', retryAfter: Number } })
  await h.check(t)
})

t.test('rate_limit.block for login.per_device: a browser that signed in before, counted per device', async (t) => {
  const h = await harness(t, { AUTHD_RATE_LIMIT_LOGIN_PER_DEVICE: '2/15m', AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '2/1h' })
  const ann = await addUser(h, 'ann@example.com', PASSWORD)
  const signed = await login(h, 'ann@example.com')
  t.equal(signed.status, 200)
  const jar = new CookieJar(DEVICE)
  jar.take(signed)
  t.ok(jar.value, 'a device cookie')
  const device = `${DEVICE}=${jar.value}`
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) statuses.push((await h.post('/api/auth/login', { json: { email: 'ann@example.com', password: `wrong password ${i}` }, cookie: device })).status)
  t.same(statuses, [401, 401, 429, 429, 429])
  const got = await h.since(1)
  t.same(got.map((e) => e.event), ['login.failure', 'login.failure', 'rate_limit.block'])
  t.match(got[2], { ...api, userId: ann.id, email: 'ann@example.com', detail: { limit: 'login.per_device', window: '15m' } })
  await h.check(t)
})

t.test('rate_limit.block for the account endpoints’ password check: a wrong current password is a failed login', async (t) => {
  const h = await harness(t, { AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '2/15m' })
  const ann = await addUser(h, 'ann@example.com', PASSWORD)
  const token = (await login(h, 'ann@example.com')).body.data.accessToken as string
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) statuses.push((await h.post('/api/auth/password', { token, json: { currentPassword: `not the password ${i}`, newPassword: NEW_PASSWORD } })).status)
  t.same(statuses, [403, 403, 429, 429, 429])
  const got = await h.since(1)
  t.same(got.map((e) => e.event), ['rate_limit.block'], 'a wrong current password is no event; its block is')
  t.match(got[0], { ...api, userId: ann.id, email: 'ann@example.com', detail: { limit: 'login.per_ip_email', window: '15m' } })
  await h.check(t)
})

t.test('session.revoke of the calling session: current true', async (t) => {
  const h = await harness(t)
  const ann = await addUser(h, 'ann@example.com', PASSWORD)
  const token = (await login(h, 'ann@example.com')).body.data.accessToken as string
  t.equal((await h.post('DELETE /api/auth/sessions/' + sidOf(token), { token })).status, 200)
  const got = await h.since(1)
  t.same(got.map((e) => e.event), ['session.revoke'])
  t.match(got[0], { ...api, userId: ann.id, email: 'ann@example.com', sessionId: sidOf(token), detail: { current: true } })
  await h.check(t)
})
