/**
 * The device cookie (README, "Rate limits"): set at every login and register, it lets the user's
 * own browser sign in although an attacker has spent the email's per_email budget. A login that
 * carries it is counted per device instead; a cookie of another user, or one that does not
 * verify, counts as none. Client addresses are simulated through a trusted proxy.
 */
import t, { type Test } from 'tap'
import { addUser, call, buildApp, type Reply, type TestApp } from '../helpers/app.js'

const EMAIL = 'vic@example.com'
const PASSWORD = 'copper-lantern-58'
const PROXY = { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1/32' }
const NAME = '__Host-authd_device'

const setCookies = (r: Reply): string[] => {
  const sc = r.headers['set-cookie']
  return sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]
}
/** the device cookie a reply set: its value and its attributes */
function deviceCookie(r: Reply, name = NAME): { value: string; attrs: string[] } | undefined {
  const c = setCookies(r).find((s) => s.startsWith(`${name}=`))
  if (c === undefined) return undefined
  const [nameValue, ...attrs] = c.split('; ')
  return { value: nameValue!.slice(name.length + 1), attrs: attrs.sort() }
}
const deviceIdOf = (value: string): string => Buffer.from(value.split('.')[0]!, 'base64url').subarray(0, 16).toString('hex')

const login = (app: TestApp, email: string, password: string, ip: string, device?: string): Promise<Reply> =>
  call(app, 'POST', '/api/auth/login', {
    json: { email, password },
    headers: { 'x-forwarded-for': ip, ...(device === undefined ? {} : { cookie: `other=1; ${NAME}=${device}` }) },
  })

/** 20 wrong passwords for `email` from 4 addresses: per_email (20/1h) spent */
async function spendPerEmail(t: Test, app: TestApp, email: string): Promise<void> {
  for (let a = 0; a < 4; a++) {
    for (let i = 0; i < 5; i++) t.equal((await login(app, email, 'wrong-password', `192.0.2.${a}`)).status, 401)
  }
}

t.test('login and register set the device cookie: __Host-, HttpOnly, SameSite=Strict, Path=/, a year, Secure', async (t) => {
  const app = await buildApp(t)
  await addUser(app, EMAIL, PASSWORD)
  const r = await login(app, EMAIL, PASSWORD, '203.0.113.1')
  t.equal(r.status, 200)
  const c = deviceCookie(r)
  t.ok(c, 'set at login')
  t.match(c!.value, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/)
  t.same(c!.attrs, ['HttpOnly', 'Max-Age=31536000', 'Path=/', 'SameSite=Strict', 'Secure'])
  t.ok(setCookies(r)[0]!.startsWith('__Host-authd_rt=') || setCookies(r)[0]!.includes('authd_rt='), 'the refresh cookie comes first')
  const reg = await call(app, 'POST', '/api/auth/register', { json: { email: 'new@example.com', password: PASSWORD } })
  t.equal(reg.status, 201)
  t.ok(deviceCookie(reg), 'set at register')
  const failed = await login(app, EMAIL, 'wrong-password', '203.0.113.1')
  t.equal(deviceCookie(failed), undefined, 'never on a failed login')
})

t.test('with --dev the device cookie is authd_device and not Secure', async (t) => {
  const app = await buildApp(t, { dev: true })
  await addUser(app, EMAIL, PASSWORD)
  const r = await login(app, EMAIL, PASSWORD, '203.0.113.1')
  const c = deviceCookie(r, 'authd_device')
  t.ok(c)
  t.same(c!.attrs, ['HttpOnly', 'Max-Age=31536000', 'Path=/', 'SameSite=Strict'])
})

t.test('an attacker who spends per_email cannot lock the user out of the browser she signed in on', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  const vic = await addUser(app, EMAIL, PASSWORD)
  await addUser(app, 'mallory@example.com', PASSWORD)
  const first = await login(app, EMAIL, PASSWORD, '198.51.100.7')
  const device = deviceCookie(first)!.value
  const mallorys = deviceCookie(await login(app, 'mallory@example.com', PASSWORD, '192.0.2.99'))!.value

  await spendPerEmail(t, app, EMAIL)
  const stranger = await login(app, EMAIL, PASSWORD, '198.51.100.8')
  t.equal(stranger.status, 429, 'a client that never signed in as her is refused')

  const again = await login(app, EMAIL, PASSWORD, '198.51.100.7', device)
  t.equal(again.status, 200, 'her browser, with its cookie, signs in')
  t.equal(again.body.data.user.id, vic.id)
  t.equal(deviceIdOf(deviceCookie(again)!.value), deviceIdOf(device), 'the same device id is kept')
  t.equal((await login(app, EMAIL, PASSWORD, '203.0.113.50', device)).status, 200, 'from any address')

  t.equal((await login(app, EMAIL, PASSWORD, '198.51.100.7', mallorys)).status, 429, "another user's device cookie counts as none")
  const [payload, mac] = device.split('.')
  // the first character changed: its 6 bits are all MAC (the last one's lowest 2 are padding, so
  // changing the end could spell the same MAC: this test passed such a "forgery" now and then)
  const forged = `${payload}.${mac!.startsWith('A') ? 'B' : 'A'}${mac!.slice(1)}`
  t.equal((await login(app, EMAIL, PASSWORD, '198.51.100.7', forged)).status, 429, 'an altered cookie counts as none')
  t.equal((await login(app, EMAIL, PASSWORD, '198.51.100.7', 'junk')).status, 429, 'junk counts as none')
})

t.test('a login with the device cookie is counted per device (login.per_device), not per email', async (t) => {
  const app = await buildApp(t, { env: { ...PROXY, AUTHD_RATE_LIMIT_LOGIN_PER_DEVICE: '3/15m', AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '4/1h' } })
  await addUser(app, EMAIL, PASSWORD)
  const device = deviceCookie(await login(app, EMAIL, PASSWORD, '198.51.100.7'))!.value
  for (let i = 0; i < 3; i++) t.equal((await login(app, EMAIL, 'wrong-password', `198.51.100.${10 + i}`, device)).status, 401)
  const refused = await login(app, EMAIL, PASSWORD, '198.51.100.20', device)
  t.equal(refused.status, 429, 'per_device refuses the fourth from any address')
  t.equal(refused.body.message, 'Too many login attempts')
  const metrics = await call(app, 'GET', '/metrics')
  t.match(metrics.text, /authd_rate_limited_total\{limit="login.per_device"\} 1/)
  t.equal((await login(app, EMAIL, PASSWORD, '198.51.100.21')).status, 200, 'the failures with the cookie did not count towards per_email')
})

t.test('per_ip_email still applies with the device cookie, and counting stays atomic: 50 concurrent → exactly five 401s', async (t) => {
  const app = await buildApp(t, { env: { ...PROXY, AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1000/15m' } })
  await addUser(app, EMAIL, PASSWORD)
  const device = deviceCookie(await login(app, EMAIL, PASSWORD, '198.51.100.7'))!.value
  const runs = app.hasher.runs
  const replies = await Promise.all(Array.from({ length: 50 }, () => login(app, EMAIL, 'wrong-password', '198.51.100.7', device)))
  t.equal(replies.filter((r) => r.status === 401).length, 5)
  t.equal(replies.filter((r) => r.status === 429).length, 45)
  t.equal(app.hasher.runs - runs, 5, 'five hashes ran')
})

t.test('a wrong password costs one hash with or without the cookie, and the answers are byte-identical', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  await addUser(app, EMAIL, PASSWORD)
  const device = deviceCookie(await login(app, EMAIL, PASSWORD, '198.51.100.7'))!.value
  const strip = (r: Reply) => ({ status: r.status, text: r.text, headers: { ...r.headers, date: undefined, 'x-request-id': undefined } })
  let runs = app.hasher.runs
  const withCookie = await login(app, EMAIL, 'wrong-password', '198.51.100.7', device)
  t.equal(app.hasher.runs - runs, 1)
  runs = app.hasher.runs
  const without = await login(app, EMAIL, 'wrong-password', '198.51.100.8')
  t.equal(app.hasher.runs - runs, 1)
  t.same(strip(withCookie), strip(without))
})

t.test('two accounts in one browser: signing in to the second keeps the first its device, and each has its own per_device budget', async (t) => {
  const app = await buildApp(t, { env: { ...PROXY, AUTHD_RATE_LIMIT_LOGIN_PER_DEVICE: '3/15m' } })
  const nina = await addUser(app, 'nina@example.com', PASSWORD)
  await addUser(app, 'oscar@example.com', PASSWORD)
  const first = deviceCookie(await login(app, 'nina@example.com', PASSWORD, '198.51.100.7'))!.value
  // the browser sends nina's cookie to oscar's login, and keeps what that answer sets
  const jar = deviceCookie(await login(app, 'oscar@example.com', PASSWORD, '198.51.100.7', first))!.value
  t.equal(deviceIdOf(jar), deviceIdOf(first), 'one device')

  await spendPerEmail(t, app, 'nina@example.com')
  t.equal((await login(app, 'nina@example.com', PASSWORD, '198.51.100.8')).status, 429, 'a stranger is refused')
  const back = await login(app, 'nina@example.com', PASSWORD, '198.51.100.7', jar)
  t.equal(back.status, 200, 'nina, with the cookie her browser now holds, signs in')
  t.equal(back.body.data.user.id, nina.id)

  // oscar's wrong passwords on this browser spend oscar's per_device, not nina's
  const latest = deviceCookie(back)!.value
  for (let i = 0; i < 3; i++) t.equal((await login(app, 'oscar@example.com', 'wrong-password', `198.51.100.${30 + i}`, latest)).status, 401)
  t.equal((await login(app, 'oscar@example.com', PASSWORD, '198.51.100.40', latest)).status, 429, "oscar's device budget spent")
  t.equal((await login(app, 'nina@example.com', PASSWORD, '198.51.100.41', latest)).status, 200, "nina's is not")
})

t.test('the browser\'s own device cookie counts behind planted ones (a sibling subdomain can plant some when the name is not __Host-)', async (t) => {
  const app = await buildApp(t, { env: PROXY })
  await addUser(app, EMAIL, PASSWORD)
  const device = deviceCookie(await login(app, EMAIL, PASSWORD, '198.51.100.7'))!.value
  await spendPerEmail(t, app, EMAIL)
  const planted = Array.from({ length: 20 }, (_, i) => `${NAME}=planted${i}.${'A'.repeat(43)}`).join('; ')
  const r = await call(app, 'POST', '/api/auth/login', {
    json: { email: EMAIL, password: PASSWORD },
    headers: { 'x-forwarded-for': '198.51.100.7', cookie: `${planted}; ${NAME}=${device}` },
  })
  t.equal(r.status, 200, 'twenty planted values before it')
})
