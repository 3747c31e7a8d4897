/**
 * authctl limits clear: an admin's answer to a user locked out by someone else. It writes into
 * the store; a running daemon (the real `authd start` from dist/) clears the limits within 1 s.
 */
import t from 'tap'
import { call } from '../helpers/app.js'
import { spawnDaemon } from '../helpers/daemon.js'
import { ctlFor, PASSWORD, until } from './run.js'

t.test('limits clear: a spent email or address signs in again within a second, in a running daemon', async (t) => {
  const dir = t.testdir()
  const env = {
    AUTHD_SERVER_TRUST_PROXY: '127.0.0.1',
    AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '3/1h',
    AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '2/1h',
    AUTHD_RATE_LIMIT_LOGIN_PER_IP: '100/1h',
  }
  const daemon = await spawnDaemon(t, dir, { env })
  const ctl = ctlFor(dir)
  t.equal((await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  const login = (email: string, password: string, ip: string) =>
    call(daemon.url, 'POST', '/api/auth/login', { json: { email, password }, headers: { 'x-forwarded-for': ip } })

  await t.test('by email: per_email and per_ip_email from every address', async (t) => {
    // per_ip_email spent from 198.51.100.1, per_email spent from there and another address
    t.equal((await login('ann@example.com', 'wrong-password', '198.51.100.1')).status, 401)
    t.equal((await login('ann@example.com', 'wrong-password', '198.51.100.1')).status, 401)
    t.equal((await login('ann@example.com', 'wrong-password', '198.51.100.2')).status, 401)
    t.equal((await login('ann@example.com', PASSWORD, '198.51.100.3')).status, 429, 'per_email spent')
    t.equal((await login('ann@example.com', PASSWORD, '198.51.100.1')).status, 429)

    const r = await ctl(['limits', 'clear', 'ANN@Example.com'])
    t.equal(r.code, 0, r.stderr)
    t.equal(r.stdout, 'Cleared the login limits of ann@example.com (from every address) in every running authd.\n')
    const took = await until(async () => (await login('ann@example.com', PASSWORD, '198.51.100.1')).status === 200)
    t.ok(took >= 0 && took <= 1000, `signed in within 1 s (took ${took.toFixed(0)} ms)`)
  })

  await t.test('by address: per_ip and that address’s per_ip_email', async (t) => {
    const ip = '203.0.113.9'
    for (let i = 0; i < 100; i++) await call(daemon.url, 'POST', '/api/auth/login', { json: {}, headers: { 'x-forwarded-for': ip } })
    t.equal((await login('ann@example.com', PASSWORD, ip)).status, 429, 'per_ip spent')
    const r = await ctl(['limits', 'clear', ip, '--json'])
    t.equal(r.code, 0, r.stderr)
    t.match(r.json(), { email: null, ip, seq: Number })
    const took = await until(async () => (await login('ann@example.com', PASSWORD, ip)).status === 200)
    t.ok(took >= 0 && took <= 1000, `signed in within 1 s (took ${took.toFixed(0)} ms)`)
    t.match(daemon.output(), /"event":"limits_cleared"/)
  })
})

t.test('limits clear: usage', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  t.equal((await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  for (const bad of ['not-an-address', '1.2.3', 'a@', '']) {
    const r = await ctl(['limits', 'clear', bad])
    t.equal(r.code, 2, `${JSON.stringify(bad)} is a usage error`)
    t.match(r.stderr, /^authctl: .*neither an email address nor an IP address\.\n$/)
    t.equal(r.stdout, '')
  }
  const v6 = await ctl(['limits', 'clear', '2001:db8:1:2:3:4:5:6', '--json'])
  t.equal(v6.code, 0, v6.stderr)
  t.match(v6.json(), { ip: '2001:db8:1:2::/64' }, 'IPv6 counts per /64')
  const help = await ctl(['limits', 'clear', '--help'])
  t.equal(help.code, 0)
  t.match(help.stdout, /<email\|ip>/)
  t.match(help.stdout, /within 1 second/)
})
