/**
 * config/keys.ts on its own: the list of keys, which paths are keys and which are tables, and the
 * AUTHD_* name of each key (README, "Configure"). test/config/defaults.test.ts holds the list to
 * auth.example.toml and the defaults; test/config/store-keys.test.ts covers the store keys' values.
 */
import t from 'tap'
import { envName, isKeyPath, isTablePath, KEYS, type KeyPath } from '../../src/config/keys.js'

const PATHS = Object.keys(KEYS) as KeyPath[]

t.test('every key is a dotted snake_case path of a known kind', async (t) => {
  const kinds = new Set(['string', 'integer', 'boolean', 'duration', 'size', 'rate', 'list'])
  for (const path of PATHS) {
    t.match(path, /^[a-z]+(?:_[a-z]+)*(?:\.[a-z]+(?:_[a-z]+)*)+$/, path)
    t.ok(kinds.has(KEYS[path]), `${path}: ${KEYS[path]}`)
  }
})

t.test('isKeyPath: the listed keys only, never a table or a name inherited from Object', async (t) => {
  for (const path of PATHS) t.ok(isKeyPath(path), path)
  for (const path of ['server', 'rate_limit.login', 'server.', '.port', 'server.port.x', 'Server.port', 'server_port', '', 'toString', '__proto__', 'constructor', 'hasOwnProperty']) {
    t.notOk(isKeyPath(path), JSON.stringify(path))
  }
})

t.test('isTablePath: every proper prefix of a key, and nothing else', async (t) => {
  const tables = ['server', 'store', 'tokens', 'sessions', 'cookie', 'cors', 'passwords', 'rate_limit', 'rate_limit.login', 'rate_limit.register', 'rate_limit.refresh', 'rate_limit.mfa', 'audit', 'registration', 'mfa', 'log', 'metrics']
  for (const path of tables) t.ok(isTablePath(path), path)
  const prefixes = new Set(PATHS.flatMap((p) => p.split('.').slice(0, -1).map((_, i, parents) => parents.slice(0, i + 1).join('.'))))
  t.same([...prefixes].sort(), [...tables].sort(), 'the tables are exactly the prefixes of the keys')
  for (const path of ['', 'serv', 'rate_limit.log', 'rate_limit.login.per_ip', 'server.port', 'rate', 'toString', '__proto__']) t.notOk(isTablePath(path), JSON.stringify(path))
})

t.test('no path is both a key and a table', async (t) => {
  for (const path of PATHS) t.notOk(isTablePath(path), path)
})

t.test('envName: AUTHD_ and the path in upper case, dots and underscores alike', async (t) => {
  t.equal(envName('server.port'), 'AUTHD_SERVER_PORT')
  t.equal(envName('server.trust_proxy'), 'AUTHD_SERVER_TRUST_PROXY')
  t.equal(envName('rate_limit.login.per_ip_email'), 'AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL')
  for (const path of PATHS) t.match(envName(path), /^AUTHD_[A-Z]+(?:_[A-Z]+)+$/, path)
})

t.test('no key takes the name of a variable read for something else', async (t) => {
  // AUTHD_CONFIG names the file; AUTHD_DATA is the alias of store.path (config/env.ts)
  const names = new Set(PATHS.map(envName))
  t.notOk(names.has('AUTHD_CONFIG'))
  t.notOk(names.has('AUTHD_DATA'))
})
