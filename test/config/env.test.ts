/**
 * config/env.ts on its own: which AUTHD_* variables make the environment's layer, where each
 * value says it came from, the AUTHD_DATA alias, and how a variable's text is read for its key's
 * kind (README, "Configure"). Text that does not fit the kind stays text, for validation to name.
 */
import t, { type Test } from 'tap'
import { fromEnvText, readEnv } from '../../src/config/env.js'
import { envName, KEYS, type KeyPath } from '../../src/config/keys.js'
import { isAppError } from '../../src/errors.js'

function configError(t: Test, fn: () => unknown, message: string, key: string): void {
  try {
    fn()
  } catch (error) {
    t.ok(isAppError(error), 'an AppError')
    t.equal((error as { code?: unknown }).code, 'CONFIG_INVALID')
    t.equal((error as Error).message, message)
    t.same((error as { params?: unknown }).params, { key })
    return
  }
  t.fail(`expected: ${message}`)
}

t.test('each key is read from its variable, with the variable named as the source', async (t) => {
  const layer = readEnv({ AUTHD_SERVER_PORT: '9000', AUTHD_TOKENS_ACCESS_TTL: '5m', AUTHD_COOKIE_SECURE: 'false' })
  t.same([...layer], [
    ['server.port', { value: 9000, source: 'from AUTHD_SERVER_PORT' }],
    ['tokens.access_ttl', { value: '5m', source: 'from AUTHD_TOKENS_ACCESS_TTL' }],
    ['cookie.secure', { value: false, source: 'from AUTHD_COOKIE_SECURE' }],
  ])
})

t.test('every key has a variable that reads back to it', async (t) => {
  const env = Object.fromEntries(Object.keys(KEYS).map((path) => [envName(path as KeyPath), 'x']))
  const layer = readEnv(env)
  t.same([...layer.keys()].sort(), Object.keys(KEYS).sort())
  for (const [path, entry] of layer) t.equal(entry.source, `from ${envName(path)}`)
})

t.test('other variables, unset ones and AUTHD_CONFIG are no part of the layer', async (t) => {
  const layer = readEnv({ HOME: '/root', PATH: '/bin', AUTHDX: '1', authd_server_port: '1', AUTHD_SERVER_HOST: undefined, AUTHD_CONFIG: '/etc/authd/auth.toml' })
  t.equal(layer.size, 0)
})

t.test('an unknown AUTHD_ variable is an error naming it and its text, so a typo is never ignored', async (t) => {
  configError(t, () => readEnv({ AUTHD_SERVER_PROT: '9000' }), 'config: unknown environment variable AUTHD_SERVER_PROT (got "9000")', 'AUTHD_SERVER_PROT')
  configError(t, () => readEnv({ AUTHD_: '' }), 'config: unknown environment variable AUTHD_ (got "")', 'AUTHD_')
  configError(t, () => readEnv({ AUTHD_server_port: '1' }), 'config: unknown environment variable AUTHD_server_port (got "1")', 'AUTHD_server_port')
  configError(t, () => readEnv({ AUTHD_SERVER: '1' }), 'config: unknown environment variable AUTHD_SERVER (got "1")', 'AUTHD_SERVER')
})

t.test('AUTHD_DATA is store.path; with AUTHD_STORE_PATH it must agree', async (t) => {
  t.same(readEnv({ AUTHD_DATA: '/var/lib/authd' }).get('store.path'), { value: '/var/lib/authd', source: 'from AUTHD_DATA' })
  t.same(readEnv({ AUTHD_DATA: 'd', AUTHD_STORE_PATH: 'd' }).get('store.path'), { value: 'd', source: 'from AUTHD_DATA' }, 'the same value twice is fine')
  t.same(readEnv({ AUTHD_DATA: '' }).get('store.path'), { value: '', source: 'from AUTHD_DATA' }, 'empty: left for validation to refuse')
  configError(t, () => readEnv({ AUTHD_DATA: 'a', AUTHD_STORE_PATH: 'b' }), 'config: AUTHD_DATA and AUTHD_STORE_PATH disagree (got "a" and "b")', 'AUTHD_DATA')
  configError(t, () => readEnv({ AUTHD_STORE_PATH: 'b', AUTHD_DATA: 'a' }), 'config: AUTHD_DATA and AUTHD_STORE_PATH disagree (got "a" and "b")', 'AUTHD_DATA')
})

t.test('an integer variable is a number when it is all digits, else the text as given', async (t) => {
  const read = (text: string): unknown => fromEnvText(text, 'integer', 'server.port', 'from AUTHD_SERVER_PORT')
  t.equal(read('8080'), 8080)
  t.equal(read('+12'), 12)
  t.equal(read('-1'), -1)
  t.equal(read('0012'), 12)
  for (const text of ['', ' 80', '80 ', '1e3', '0x10', '8.0', '8_000', 'abc', '٣']) t.equal(read(text), text, JSON.stringify(text))
  t.equal(read('99999999999999999999'), 1e20, 'too big: a number that validation refuses as no safe integer')
})

t.test('a boolean variable is exactly "true" or "false"; anything else stays text', async (t) => {
  const read = (text: string): unknown => fromEnvText(text, 'boolean', 'metrics.enabled', 'from AUTHD_METRICS_ENABLED')
  t.equal(read('true'), true)
  t.equal(read('false'), false)
  for (const text of ['TRUE', 'True', '1', '0', 'yes', ' true', '']) t.equal(read(text), text, JSON.stringify(text))
})

t.test('strings, durations, sizes and rates are the text as given', async (t) => {
  for (const kind of ['string', 'duration', 'size', 'rate'] as const) t.equal(fromEnvText(' 5 / 15m ', kind, 'k', 's'), ' 5 / 15m ', kind)
})

t.test('a list variable: comma-separated, or a TOML/JSON array; empty text is an empty list', async (t) => {
  const read = (text: string): unknown => fromEnvText(text, 'list', 'cors.origins', 'from AUTHD_CORS_ORIGINS')
  t.same(read(''), [])
  t.same(read('   '), [])
  t.same(read('a'), ['a'])
  t.same(read(' a , b,,c, '), ['a', 'b', 'c'], 'items trimmed, empty ones dropped')
  t.same(read('["a", "b"]'), ['a', 'b'])
  t.same(read("  ['a', \"b\"]  "), ['a', 'b'], 'TOML literal strings, and space around the array')
  t.same(read('[]'), [])
  t.same(read('["a,b"]'), ['a,b'], 'a comma inside an array item is kept')
  t.same(read('[1, "a"]'), [1, 'a'], 'a non-string item is kept for validation to name')
})

t.test('a list variable that opens an array and is not one is an error naming the key and the variable', async (t) => {
  for (const text of ['["a"', '[a, b]', '["a"] x', '[']) {
    configError(
      t,
      () => fromEnvText(text, 'list', 'server.trust_proxy', 'from AUTHD_SERVER_TRUST_PROXY'),
      `config: server.trust_proxy must be a list of strings (got ${JSON.stringify(text)} from AUTHD_SERVER_TRUST_PROXY)`,
      'server.trust_proxy',
    )
  }
  configError(
    t,
    () => readEnv({ AUTHD_CORS_ORIGINS: '["https://a.example"' }),
    'config: cors.origins must be a list of strings (got "[\\"https://a.example\\"" from AUTHD_CORS_ORIGINS)',
    'cors.origins',
  )
})
