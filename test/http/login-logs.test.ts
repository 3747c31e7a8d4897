/**
 * Log hygiene, injected into the handler: the logs say what happened on each login (one line per
 * outcome, with the client address and the user id when known) and never carry a password, an
 * access token or a refresh token.
 */
import t from 'tap'
import { addUser, call, buildApp } from '../helpers/app.js'

const PASSWORD = 'Quiet-Lantern-Password-91'
const WRONG = 'Loud-Lantern-Password-19'
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20))

t.test('logs one line per login outcome with the client address and the user id when known', async (t) => {
  const app = await buildApp(t)
  const user = await addUser(app, 'ann@example.com', PASSWORD)
  const outcomes: Array<[string, unknown, number]> = [
    ['success', { email: 'ann@example.com', password: PASSWORD }, 200],
    ['unknown_user', { email: 'nobody@example.com', password: PASSWORD }, 401],
    ['bad_password', { email: 'ann@example.com', password: WRONG }, 401],
    ['invalid_input', { email: 'ann@example.com' }, 400],
  ]
  for (const [outcome, json, status] of outcomes) {
    const before = app.logs.lines.length
    const r = await call(app, 'POST', '/api/auth/login', { json })
    t.equal(r.status, status, outcome)
    await settle()
    const lines = app.logs.lines.slice(before).filter((l) => l.event === 'login')
    t.equal(lines.length, 1, `one login line for ${outcome}`)
    const line = lines[0]!
    t.equal(line.outcome, outcome)
    t.equal(line.ip, '127.0.0.1')
    if (outcome === 'success' || outcome === 'bad_password') t.equal(line.userId, user.id, 'names the user')
    else t.notOk('userId' in line, 'no user to name')
    if (outcome === 'success') t.equal(typeof line.sessionId, 'string')
  }
})

t.test('never logs a password, an access token or a refresh token', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const ok = await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD }, headers: { 'user-agent': 'hygiene/1' } })
  t.equal(ok.status, 200)
  const access = ok.body.data.accessToken as string
  const cookie = ([ok.headers['set-cookie']].flat()[0] as string).split(';')[0]!
  const refresh = cookie.split('=')[1]!
  t.equal((await call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${access}` } })).status, 200)
  t.equal((await call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${access}x` } })).status, 401)
  t.equal((await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: WRONG } })).status, 401)
  t.equal((await call(app, 'POST', '/api/auth/login', { json: { email: 'nobody@example.com', password: WRONG } })).status, 401)
  t.equal((await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: 42 } })).status, 400)
  t.equal((await call(app, 'POST', '/api/auth/login', { body: `{"email":"ann@example.com","password":"${PASSWORD}"`, headers: { 'content-type': 'application/json' } })).status, 400)
  t.equal((await call(app, 'POST', '/api/auth/login', { body: `password=${PASSWORD}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status, 415)
  const refreshed = await call(app, 'POST', '/api/auth/refresh', { headers: { cookie } })
  t.equal(refreshed.status, 200)
  const refresh2 = (refreshed.headers['set-cookie'] as string).split(';')[0]!.split('=')[1]!
  const access2 = refreshed.body.data.accessToken as string
  t.equal((await call(app, 'POST', '/api/auth/logout', { headers: { cookie: `__Host-authd_rt=${refresh2}` } })).status, 200)
  await settle()

  const text = app.logs.text()
  t.ok(app.logs.lines.length >= 10, `logs were captured (${app.logs.lines.length} lines)`)
  for (const [name, secret] of [
    ['the password', PASSWORD],
    ['the wrong password', WRONG],
    ['the access token', access],
    ['the signature of the access token', access.split('.')[2]!],
    ['the refreshed access token', access2],
    ['the refresh token', refresh],
    ['the rotated refresh token', refresh2],
  ] as const) {
    t.notOk(text.includes(secret), `${name} is not in the logs`)
  }
  t.notMatch(text, /argon2id\$/, 'nor a password hash')
  t.notMatch(text, /authorization|set-cookie/i, 'nor the credential headers')
})

t.test('logs an unexpected failure with its detail and the request id, and answers a bare 500', async (t) => {
  const app = await buildApp(t)
  app.store.getUserByEmail = () => {
    throw new Error('disk on fire at /var/lib/authd/data.mdb')
  }
  const r = await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  t.equal(r.status, 500)
  t.same(r.body, { success: false, message: 'Internal server error' })
  t.notMatch(r.text, /disk|fire|\/var|at \S+:\d+/)
  await settle()
  const line = app.logs.lines.find((l) => l.msg === 'unexpected error')
  t.ok(line, 'logged')
  t.equal(line!.reqId, r.headers['x-request-id'])
  t.match(JSON.stringify(line), /disk on fire/, 'with the detail')
  t.notOk(app.logs.text().includes(PASSWORD))
})

t.test('a flood of refused logins writes one line at once and one repeated line, not one per refusal', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '2/1h' }, refusalLogPeriodMs: 60_000 })
  const json = { email: 'nobody@example.com', password: WRONG }
  const statuses: number[] = []
  for (let i = 0; i < 30; i++) statuses.push((await call(app, 'POST', '/api/auth/login', { json })).status)
  t.same(statuses, [401, 401, ...new Array<number>(28).fill(429)])
  await settle()
  const refused = (): Array<Record<string, unknown>> => app.logs.lines.filter((l) => l.event === 'login' && l.outcome === 'rate_limited')
  t.same(
    refused().map(({ limit, ip, repeated }) => ({ limit, ip, repeated })),
    [{ limit: 'login.per_ip', ip: '127.0.0.1', repeated: undefined }],
    'the first refusal, at once',
  )
  t.equal(app.logs.lines.filter((l) => l.msg === 'request' && l.status === 429).length, 28, 'every refusal has its request line')
  await app.close()
  await settle()
  t.same(
    refused().map(({ limit, ip, repeated }) => ({ limit, ip, repeated })),
    [
      { limit: 'login.per_ip', ip: '127.0.0.1', repeated: undefined },
      { limit: 'login.per_ip', ip: '127.0.0.1', repeated: 27 },
    ],
    'the other 27 as one line, when the period ends or (here) the daemon stops',
  )
  const metrics = await app.metrics.registry.getSingleMetricAsString('authd_rate_limited_total')
  t.match(metrics, /authd_rate_limited_total\{limit="login.per_ip"\} 28/, 'all 28 counted')
})
