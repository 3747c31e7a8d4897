/**
 * http/cookies.ts on its own: the refresh cookie's header as set and as cleared, its attributes
 * from config and the same both ways (docs/api.md, "Cookies"), reading it from a Cookie header,
 * and telling a header that carries two cookies of its name (a planted one beside ours; README,
 * "Refresh tokens and sessions"). test/http/cookie-tossing.test.ts covers what the endpoints then do.
 */
import t from 'tap'
import { createRefreshCookie } from '../../src/http/cookies.js'
import { testConfig } from '../helpers/app.js'

const TOKEN = `${'A'.repeat(22)}.${'b'.repeat(43)}`
const NAME = '__Host-authd_rt'

t.test('by default: __Host-, Secure, HttpOnly, SameSite=Strict, Path=/, Max-Age of sessions.absolute_ttl', async (t) => {
  const cookie = createRefreshCookie(testConfig(t.testdirName))
  t.equal(cookie.set(TOKEN, 2592000), `${NAME}=${TOKEN}; Max-Age=2592000; Path=/; HttpOnly; Secure; SameSite=Strict`)
  t.equal(cookie.clear(), `${NAME}=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict`)
})

t.test('with --dev: authd_rt, without Secure', async (t) => {
  const cookie = createRefreshCookie(testConfig(t.testdirName, {}, { dev: true }))
  t.equal(cookie.set(TOKEN, 2592000), `authd_rt=${TOKEN}; Max-Age=2592000; Path=/; HttpOnly; SameSite=Strict`)
  t.equal(cookie.clear(), 'authd_rt=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict')
})

t.test('name, path and SameSite from config, the same when set and when cleared', async (t) => {
  const env = { AUTHD_COOKIE_NAME: 'rt', AUTHD_COOKIE_PATH: '/api/auth', AUTHD_COOKIE_SAME_SITE: 'Lax' }
  const cookie = createRefreshCookie(testConfig(t.testdirName, env))
  t.equal(cookie.set(TOKEN, 2592000), `rt=${TOKEN}; Max-Age=2592000; Path=/api/auth; HttpOnly; Secure; SameSite=Lax`)
  t.equal(cookie.clear(), 'rt=; Max-Age=0; Path=/api/auth; HttpOnly; Secure; SameSite=Lax')
  const none = createRefreshCookie(testConfig(t.testdirName, { AUTHD_COOKIE_SAME_SITE: 'None' }))
  t.match(none.set(TOKEN, 2592000), /; Secure; SameSite=None$/)
  t.match(none.clear(), /; Secure; SameSite=None$/)
})

t.test('Max-Age is the seconds given (the time left of the session: sessions.absolute_ttl at login), which the config holds to whole seconds', async (t) => {
  const cookie = createRefreshCookie(testConfig(t.testdirName, { AUTHD_SESSIONS_ABSOLUTE_TTL: '2h' }))
  t.match(cookie.set(TOKEN, 7200), /; Max-Age=7200;/)
  t.match(cookie.set(TOKEN, 1), /; Max-Age=1;/)
  t.throws(() => testConfig(t.testdirName, { AUTHD_SESSIONS_ABSOLUTE_TTL: '1999ms' }), { code: 'CONFIG_INVALID' }, 'a part of a second is refused, not rounded down')
})

t.test('read: the value of our cookie among others; nothing when absent', async (t) => {
  const cookie = createRefreshCookie(testConfig(t.testdirName))
  t.equal(cookie.read(`${NAME}=${TOKEN}`), TOKEN)
  t.equal(cookie.read(`theme=dark; ${NAME}=${TOKEN}; lang=en`), TOKEN)
  t.equal(cookie.read(`theme=dark;${NAME}=${TOKEN}`), TOKEN, 'no space after ";"')
  t.equal(cookie.read(`${NAME}=`), '', 'present but empty: the empty value')
  for (const header of [undefined, '', 'theme=dark', `${NAME}2=${TOKEN}`, `x${NAME}=${TOKEN}`, `__host-authd_rt=${TOKEN}`, `theme=${NAME}`, NAME]) {
    t.equal(cookie.read(header), undefined, String(header))
  }
})

t.test('ambiguous: two cookies of our name, in any order or spelling of the header', async (t) => {
  const cookie = createRefreshCookie(testConfig(t.testdirName))
  for (const header of [`${NAME}=a; ${NAME}=b`, `${NAME}=a;${NAME}=a`, ` ${NAME} = a ; x=1 ; ${NAME}=b `, `${NAME}=a; ${NAME}`, `${NAME}=; ${NAME}=b`]) {
    t.ok(cookie.ambiguous(header), header)
  }
  for (const header of [undefined, '', `${NAME}=a`, `${NAME}=a; other=b`, `${NAME}2=a; ${NAME}=b`, `x=${NAME}; ${NAME}=b`, `${NAME}=a=${NAME}`, `__host-authd_rt=a; ${NAME}=b`]) {
    t.notOk(cookie.ambiguous(header), String(header))
  }
})

t.test('ambiguous follows the configured name', async (t) => {
  const cookie = createRefreshCookie(testConfig(t.testdirName, { AUTHD_COOKIE_NAME: 'rt' }))
  t.ok(cookie.ambiguous('rt=a; rt=b'))
  t.notOk(cookie.ambiguous(`${NAME}=a; ${NAME}=b`), 'the default name is nothing to it')
  t.equal(cookie.read('rt=a'), 'a')
})
