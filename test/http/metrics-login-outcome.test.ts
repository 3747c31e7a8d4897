/**
 * /metrics must not tell whether an email exists: an unknown email, a wrong password and a
 * disabled user are one login outcome there (`invalid_credentials`); the log lines keep the detail.
 */
import t from 'tap'
import { inject } from 'light-my-request'
import { addUser, buildApp } from '../helpers/app.js'

t.test('unknown email, wrong password and disabled user are one outcome in /metrics, three in the log', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'known@example.com', 'the right passphrase')
  await addUser(app, 'off@example.com', 'the right passphrase', { disabled: true })
  const login = async (email: string, password: string): Promise<number> =>
    (await inject(app.handler, { method: 'POST', url: '/api/auth/login', payload: { email, password } })).statusCode
  t.equal(await login('nobody@example.com', 'a wrong passphrase'), 401)
  t.equal(await login('known@example.com', 'a wrong passphrase'), 401)
  t.equal(await login('off@example.com', 'the right passphrase'), 401)
  t.equal(await login('known@example.com', 'the right passphrase'), 200)
  const text = (await inject(app.handler, { method: 'GET', url: '/metrics' })).payload
  const logins = text.split('\n').filter((l) => l.startsWith('authd_login_total{'))
  t.same(logins.filter((l) => !l.endsWith(' 0')).sort(), ['authd_login_total{outcome="invalid_credentials"} 3', 'authd_login_total{outcome="success"} 1'])
  t.same(logins.map((l) => /outcome="([a-z_]+)"/.exec(l)?.[1]).sort(), ['invalid_credentials', 'invalid_input', 'mfa_required', 'rate_limited', 'success'], 'no other login outcome, not even at 0')
  t.notMatch(text, /unknown_user|bad_password/)
  const logged = app.logs.lines.filter((l) => l.event === 'login').map((l) => l.outcome)
  t.same(logged.sort(), ['bad_password', 'disabled', 'success', 'unknown_user'], 'the log keeps the detail')
})
