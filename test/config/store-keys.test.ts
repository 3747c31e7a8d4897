/**
 * The store keys (store.backend, store.url, store.pool_size) and audit.retention: defaults,
 * validation naming the key, the environment, and a password in store.url never shown: not by
 * `authd check-config`, not in a config error.
 */
import { stringify } from 'smol-toml'
import t, { type Test } from 'tap'
import { describeConfig } from '../../src/config/describe.js'
import { loadConfig } from '../../src/config/load.js'
import { isAppError } from '../../src/errors.js'
import { redactUrl } from '../../src/config/redact-url.js'
import { main } from '../../src/daemon/main.js'

const SECRET = 's3cret-Pa55'
const load = (cwd: string, env: Record<string, string> = {}) => loadConfig({ flags: {}, env, cwd }).config

function configError(t: Test, fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    t.ok(isAppError(err) && err.code === 'CONFIG_INVALID', 'a CONFIG_INVALID error')
    t.notMatch((err as Error).message, /\n/, 'one line')
    return (err as Error).message
  }
  t.fail('expected a CONFIG_INVALID error')
  return ''
}

t.test('defaults: LMDB, no URL, 10 connections, audit events kept 90 days', async (t) => {
  const config = load(t.testdir({}))
  t.same(config.store, { path: config.store.path, backend: 'lmdb', url: '', poolSize: 10 })
  t.equal(config.audit.retentionMs, 90 * 86_400_000)
})

t.test('postgres from the environment, the URL as given; the pool size and retention too', async (t) => {
  const url = `postgres://authd:${SECRET}@db.internal:5432/authd`
  const config = load(t.testdir({}), { AUTHD_STORE_BACKEND: 'postgres', AUTHD_STORE_URL: url, AUTHD_STORE_POOL_SIZE: '4', AUTHD_AUDIT_RETENTION: '30d' })
  t.same(config.store, { path: config.store.path, backend: 'postgres', url, poolSize: 4 })
  t.equal(config.audit.retentionMs, 30 * 86_400_000)
  const socket = load(t.testdir({ 'auth.toml': '[store]\nbackend = "postgres"\nurl = "postgresql://authd@/authd?host=/run/postgresql"\n' }))
  t.equal(socket.store.url, 'postgresql://authd@/authd?host=/run/postgresql', 'a Unix socket URL as libpq takes it')
})

t.test('postgres without store.url is a config error naming the key', async (t) => {
  const message = configError(t, () => load(t.testdir({}), { AUTHD_STORE_BACKEND: 'postgres' }))
  t.match(message, /^config: store\.url is required when store\.backend is "postgres"/)
  t.match(message, /store\.backend is "postgres" from AUTHD_STORE_BACKEND/)
})

t.test('bad values name their key; a URL in an error never shows its password', async (t) => {
  t.match(configError(t, () => load(t.testdir({}), { AUTHD_STORE_BACKEND: 'mysql' })), /store\.backend must be one of lmdb, postgres/)
  t.match(configError(t, () => load(t.testdir({}), { AUTHD_STORE_POOL_SIZE: '0' })), /store\.pool_size must be an integer 1-1000/)
  t.match(configError(t, () => load(t.testdir({}), { AUTHD_AUDIT_RETENTION: '90 days' })), /audit\.retention must be a duration/)
  const wrong = configError(t, () => load(t.testdir({}), { AUTHD_STORE_BACKEND: 'postgres', AUTHD_STORE_URL: `mysql://root:${SECRET}@db/authd` }))
  t.match(wrong, /store\.url must be a URL like "postgres:\/\/authd@db\.internal:5432\/authd" \(got "mysql:\/\/root:\*\*\*@db\/authd" from AUTHD_STORE_URL\)/)
  const garbled = configError(t, () => load(t.testdir({}), { AUTHD_STORE_URL: `root:${SECRET}@db` }))
  t.notOk(wrong.includes(SECRET) || garbled.includes(SECRET), 'the password is in neither message')
})

// Regression: a URL given as a list, or under a misspelled key, was shown with its password.
t.test('a config error hides a URL\'s password in any value it shows: store.url as a list, a misspelled key, in the file or the environment', async (t) => {
  const url = `postgres://authd:${SECRET}@127.0.0.1:5432/authd`
  const shown = 'postgres://authd:***@127.0.0.1:5432/authd'
  const fileCase = (toml: string, expected: (file: string) => string): void => {
    const cwd = t.testdir({ 'auth.toml': toml })
    const file = `${cwd}/auth.toml`
    const message = configError(t, () => loadConfig({ flags: { config: file }, env: {}, cwd }))
    t.equal(message, expected(file))
    t.notOk(message.includes(SECRET), 'not the password')
  }
  fileCase(`[store]\nurl = [${JSON.stringify(url)}]\n`, (file) => `config: store.url must be a PostgreSQL URL, or "" with store.backend = "lmdb" (got ["${shown}"] in ${file})`)
  fileCase(`[store]\nurll = ${JSON.stringify(url)}\n`, (file) => `config: unknown key "store.urll" (got "${shown}" in ${file})`)
  // a password parameter, and a libpq key=value string, as describeConfig hides them in store.url
  fileCase(`[store]\nurll = "postgres://authd@db/authd?sslmode=require&password=${SECRET}"\n`, (file) => `config: unknown key "store.urll" (got "postgres://authd@db/authd?sslmode=require&password=***" in ${file})`)
  fileCase(`[store]\nurll = "host=db password=${SECRET}"\n`, (file) => `config: unknown key "store.urll" (got "host=db password=***" in ${file})`)

  const env = configError(t, () => load(t.testdir({}), { AUTHD_STORE_URLL: url }))
  t.equal(env, `config: unknown environment variable AUTHD_STORE_URLL (got "${shown}")`)
  // a URL among the items of a list key
  const list = configError(t, () => load(t.testdir({}), { AUTHD_CORS_ORIGINS: `https://app.example, ${url}` }))
  t.match(list, /^config: cors\.origins /)
  t.ok(list.includes(shown), `${list} shows the URL without its password`)
  t.notOk(env.includes(SECRET) || list.includes(SECRET), 'the password is in neither message')
})

t.test('a password in store.url is shown as *** by describeConfig and authd check-config', async (t) => {
  const cwd = t.testdir({})
  const env = { AUTHD_STORE_BACKEND: 'postgres', AUTHD_STORE_URL: `postgres://authd:${SECRET}@db/authd?sslmode=require` }
  const described = describeConfig(load(cwd, env)) as { store: Record<string, unknown> }
  t.same(described.store, { path: described.store.path, backend: 'postgres', url: 'postgres://authd:***@db/authd?sslmode=require', pool_size: 10 })
  t.notOk(stringify(described).includes(SECRET))
  let out = ''
  let err = ''
  const code = await main({ argv: ['check-config'], env, cwd, stdout: (s) => (out += s), stderr: (s) => (err += s) })
  t.equal(code, 0, err)
  t.match(out, /url = "postgres:\/\/authd:\*\*\*@db\/authd\?sslmode=require"/)
  t.notOk(out.includes(SECRET), 'check-config prints no password')
})

t.test('redactUrl hides the password of any URL form, and keeps the rest as written', async (t) => {
  t.equal(redactUrl(''), '')
  t.equal(redactUrl('postgres://authd@db:5432/authd'), 'postgres://authd@db:5432/authd', 'no password: as is')
  t.equal(redactUrl('postgres://authd:p%40ss@db/authd'), 'postgres://authd:***@db/authd')
  t.equal(redactUrl('postgres://authd:p@ss@db/authd'), 'postgres://authd:***@db/authd', 'an unescaped @ in the password')
  t.equal(redactUrl('postgresql://u:p@/db?host=/run/postgresql'), 'postgresql://u:***@/db?host=/run/postgresql')
  t.equal(redactUrl('postgres://db/authd?user=u&password=p&sslmode=require'), 'postgres://db/authd?user=u&password=***&sslmode=require')
  t.equal(redactUrl('u:secret@db'), 'u:***', 'not a URL: nothing after the first colon')
})
