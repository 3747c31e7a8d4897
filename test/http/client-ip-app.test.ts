/**
 * The client address as the app sees it (README, "Rate limits"), observed from outside: the ip
 * recorded on the session and the rate limiter's per-IP counting. The resolver itself is
 * tested in client-ip.test.ts; this holds the app to using it on every route that counts.
 * Injected: the socket's peer is light-my-request's remoteAddress (127.0.0.1 unless a test names
 * another); the Unix socket's peer, which has no address, is test/daemon/unix-socket.test.ts's.
 */
import t from 'tap'
import { addUser, buildApp, call, type Reply, type TestApp } from '../helpers/app.js'

const EMAIL = 'ivy@example.com'
const PASSWORD = 'cobalt-meadow-19'

function sessionIdOf(reply: Reply): string {
  const token = reply.body.data.accessToken as string
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')).sid as string
}

/** the ip the session of a login records, from the peer `remoteAddress` sending `xff` */
async function sessionIp(app: TestApp, xff?: string, remoteAddress?: string): Promise<string> {
  const headers: Record<string, string> = xff === undefined ? {} : { 'x-forwarded-for': xff }
  const res = await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD }, headers, remoteAddress })
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`)
  return (await app.store.getSession(sessionIdOf(res)))!.ip
}

t.test('from an untrusted peer, X-Forwarded-For changes nothing', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '3/15m' } })
  await addUser(app, EMAIL, PASSWORD)
  t.equal(await sessionIp(app, '203.0.113.9'), '127.0.0.1', 'the session records the socket address')
  t.equal(await sessionIp(app, '198.51.100.1, 203.0.113.9'), '127.0.0.1')
  t.equal(await sessionIp(app), '127.0.0.1')
  // three requests used the per_ip budget of 127.0.0.1; a spoofed header does not buy a new one
  const spoofed = await call(app, 'POST', '/api/auth/login', { json: { email: EMAIL, password: PASSWORD }, headers: { 'x-forwarded-for': '192.0.2.77' } })
  t.equal(spoofed.status, 429)
})

t.test('a proxy outside trust_proxy is not believed either', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_SERVER_TRUST_PROXY: '10.0.0.0/8' } })
  await addUser(app, EMAIL, PASSWORD)
  t.equal(await sessionIp(app, '203.0.113.9'), '127.0.0.1')
  t.equal(await sessionIp(app, '203.0.113.9', '192.0.2.10'), '192.0.2.10', 'a peer beside the trusted range is the client itself')
  t.equal(await sessionIp(app, '203.0.113.9', '10.20.30.40'), '203.0.113.9', 'while a peer inside it is believed')
})

t.test('from a trusted proxy, the right-most untrusted X-Forwarded-For entry is the client', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1/32, 10.0.0.0/8' } })
  await addUser(app, EMAIL, PASSWORD)
  t.equal(await sessionIp(app, '203.0.113.9'), '203.0.113.9')
  t.equal(await sessionIp(app, '198.51.100.1, 203.0.113.9'), '203.0.113.9', 'entries left of the client were written by the client')
  t.equal(await sessionIp(app, '198.51.100.1, 203.0.113.9, 10.1.2.3'), '203.0.113.9', 'trusted proxies in the chain are skipped')
  t.equal(await sessionIp(app, '::ffff:203.0.113.9'), '203.0.113.9', 'IPv4-mapped IPv6 is normalised')
  t.equal(await sessionIp(app, '2001:DB8:0:0:1::1'), '2001:db8::1:0:0:1', 'IPv6 is recorded in RFC 5952 form')
  t.equal(await sessionIp(app, 'not-an-ip, 203.0.113.9'), '203.0.113.9', 'client-written garbage left of the client is never read')
  t.equal(await sessionIp(app, '203.0.113.9, garbage'), '127.0.0.1', 'a proxy-written entry that is not an address: the header is ignored')
  t.equal(await sessionIp(app), '127.0.0.1', 'no header: the proxy itself')
  t.equal(await sessionIp(app, undefined, '::ffff:10.9.8.7'), '10.9.8.7', 'a peer in IPv4-mapped form is the IPv4 address')
})

t.test('rate limits follow the client behind a trusted proxy; IPv6 counts per /64', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1', AUTHD_RATE_LIMIT_LOGIN_PER_IP: '2/15m' } })
  await addUser(app, EMAIL, PASSWORD)
  const post = (xff: string) => call(app, 'POST', '/api/auth/login', { json: {}, headers: { 'x-forwarded-for': xff } })

  t.equal((await post('203.0.113.9')).status, 400)
  t.equal((await post('::ffff:203.0.113.9')).status, 400, 'the mapped form is the same client…')
  t.equal((await post('203.0.113.9')).status, 429, '…so its budget of two is spent')
  t.equal((await post('203.0.113.10')).status, 400, 'a neighbour has its own budget')

  t.equal((await post('2001:db8:1:2::1')).status, 400)
  t.equal((await post('2001:db8:1:2:ffff:ffff:ffff:ffff')).status, 400, 'another host in the same /64…')
  t.equal((await post('2001:db8:1:2::abcd')).status, 429, '…shares the budget')
  t.equal((await post('2001:db8:1:3::1')).status, 400, 'the next /64 is another client')
})

t.test('without a proxy, an IPv6 peer counts per /64 too', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1/15m' } })
  const post = (remoteAddress: string) => call(app, 'POST', '/api/auth/login', { json: {}, remoteAddress })
  t.equal((await post('2001:db8:5:6::1')).status, 400)
  t.equal((await post('2001:db8:5:6::2')).status, 429, 'the same /64')
  t.equal((await post('2001:db8:5:7::1')).status, 400, 'the next /64')
})

t.test('refresh and register count the same client address', async (t) => {
  const app = await buildApp(t, {
    env: { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1/32', AUTHD_RATE_LIMIT_REFRESH_PER_IP: '1/5m', AUTHD_RATE_LIMIT_REGISTER_PER_IP: '1/1h' },
  })
  // a well-formed (unknown) token: a refresh without one takes no limiter key
  const cookie = `${app.config.cookie.name}=${'A'.repeat(22)}.${'B'.repeat(43)}`
  const refresh = (xff: string) => call(app, 'POST', '/api/auth/refresh', { headers: { 'x-forwarded-for': xff, cookie } })
  t.equal((await refresh('203.0.113.1')).status, 401)
  t.equal((await refresh('203.0.113.1')).status, 429)
  t.equal((await refresh('203.0.113.2')).status, 401)
  const register = (xff: string, email: string) =>
    call(app, 'POST', '/api/auth/register', { json: { email, password: PASSWORD }, headers: { 'x-forwarded-for': xff } })
  const first = await register('203.0.113.1', 'one@example.com')
  t.equal(first.status, 201)
  t.equal((await app.store.getSession(sessionIdOf(first)))!.ip, '203.0.113.1', 'the new session records the client')
  t.equal((await register('203.0.113.1', 'two@example.com')).status, 429)
  t.equal((await register('203.0.113.2', 'two@example.com')).status, 201)
})
