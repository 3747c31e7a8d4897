/**
 * buildConfig (config/validate.ts) on its own: the checks of each kind of value, as a TOML file
 * gives them (numbers, booleans, lists, tables, dates, not only the environment's strings), the
 * rules between two keys, and the normalised forms it hands on. Every refusal is one
 * CONFIG_INVALID line naming the key, the value and where it came from (README, "Configure");
 * test/config/load.test.ts covers the same through the layers, from the environment and flags.
 */
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { builtInDefaults } from '../../src/config/defaults.js'
import type { KeyPath } from '../../src/config/keys.js'
import { flattenTable, type Layer } from '../../src/config/layer.js'
import type { Config } from '../../src/config/types.js'
import { buildConfig } from '../../src/config/validate.js'
import { isAppError } from '../../src/errors.js'
import { createClientIp } from '../../src/http/client-ip.js'

const FILE = 'in /etc/authd/auth.toml'
const CWD = '/srv/authd'

/** the built-in defaults, with `values` set as a config file would set them */
function layer(values: Partial<Record<KeyPath, unknown>> = {}, source = FILE): Layer {
  const l = flattenTable(builtInDefaults(), 'by default')
  for (const [path, value] of Object.entries(values)) l.set(path as KeyPath, { value, source })
  return l
}

const build = (values: Partial<Record<KeyPath, unknown>> = {}, dev = false): Config => buildConfig(layer(values), { dev, cwd: CWD })

/** buildConfig refuses with exactly `message`, naming `key` in params */
function refuses(t: Test, values: Partial<Record<KeyPath, unknown>> | Layer, message: string, key: string): void {
  try {
    if (values instanceof Map) buildConfig(values, { dev: false, cwd: CWD })
    else build(values)
  } catch (error) {
    t.ok(isAppError(error), 'an AppError')
    t.equal((error as { code?: unknown }).code, 'CONFIG_INVALID')
    t.equal((error as Error).message, message)
    t.same((error as { params?: unknown }).params, { key }, 'params.key names the key')
    return
  }
  t.fail(`expected a refusal: ${message}`)
}

t.test('the defaults build; dev is passed on and store.path is resolved against cwd', async (t) => {
  const config = build()
  t.equal(config.dev, false)
  t.equal(config.store.path, join(CWD, 'data'))
  t.equal(config.server.publicUrl, 'http://127.0.0.1:8080')
  t.equal(buildConfig(layer(), { dev: true, cwd: CWD }).dev, true)
  t.equal(build({ 'store.path': '/var/lib/authd' }).store.path, '/var/lib/authd', 'an absolute path as given')
})

t.test('each kind of check refuses a value of the wrong type with its own sentence', async (t) => {
  const cases: Array<[Partial<Record<KeyPath, unknown>>, string]> = [
    [{ 'server.host': 5 }, 'server.host must be an IP address or host name (got 5'],
    [{ 'tokens.issuer': '' }, 'tokens.issuer must be a non-empty string (got ""'],
    [{ 'tokens.audience': ['authd'] }, 'tokens.audience must be a non-empty string (got ["authd"]'],
    [{ 'mfa.issuer': 5 }, 'mfa.issuer must be a non-empty string (got 5'],
    [{ 'server.port': 1.5 }, 'server.port must be an integer 0-65535 (got 1.5'],
    [{ 'server.port': 2 ** 53 }, 'server.port must be an integer 0-65535 (got 9007199254740992'],
    [{ 'server.port': true }, 'server.port must be an integer 0-65535 (got true'],
    [{ 'server.port': '80' }, 'server.port must be an integer 0-65535 (got "80"'],
    [{ 'rate_limit.max_keys': 999 }, 'rate_limit.max_keys must be an integer >= 1000 (got 999'],
    [{ 'rate_limit.max_keys': 2 ** 53 }, 'rate_limit.max_keys must be an integer >= 1000 (got 9007199254740992'],
    [{ 'cookie.secure': 'true' }, 'cookie.secure must be true or false (got "true"'],
    [{ 'metrics.enabled': 1 }, 'metrics.enabled must be true or false (got 1'],
    [{ 'log.level': 'INFO' }, 'log.level must be one of fatal, error, warn, info, debug, trace, silent (got "INFO"'],
    [{ 'cookie.same_site': 'lax' }, 'cookie.same_site must be one of Strict, Lax, None (got "lax"'],
    [{ 'tokens.access_ttl': 900 }, 'tokens.access_ttl must be a duration like "15m" (an integer followed by ms, s, m, h or d) (got 900'],
    [{ 'tokens.access_ttl': new Date(0) }, `tokens.access_ttl must be a duration like "15m" (an integer followed by ms, s, m, h or d) (got ${JSON.stringify(String(new Date(0)))}`],
    [{ 'sessions.idle_ttl': '0s' }, 'sessions.idle_ttl must be a duration greater than 0 (got "0s"'],
    [{ 'server.body_limit': 16384 }, 'server.body_limit must be a size like "16kb" (an integer followed by b, kb, mb or gb) (got 16384'],
    [{ 'server.body_limit': '0b' }, 'server.body_limit must be a size greater than 0 (got "0b"'],
    [{ 'rate_limit.login.per_ip': 5 }, 'rate_limit.login.per_ip must be a rate "<count>/<duration>" with count >= 1, e.g. "5/15m" (got 5'],
    [{ 'server.trust_proxy': '10.0.0.0/8' }, 'server.trust_proxy must be a list of strings (got "10.0.0.0/8"'],
    [{ 'cors.origins': {} }, 'cors.origins must be a list of strings (got a table'],
    [{ 'server.socket': 5 }, 'server.socket must be a file path, or "" for none (got 5'],
    [{ 'server.socket': 'run/a\0.sock' }, 'server.socket must be a file path, or "" for none (got "run/a\\u0000.sock"'],
    [{ 'store.url': 5 }, 'store.url must be a PostgreSQL URL, or "" with store.backend = "lmdb" (got 5'],
    [{ 'server.public_url': 5 }, 'server.public_url must be an absolute http(s) URL without credentials (got 5'],
    // a token's exp and a cookie's Max-Age are whole seconds: 999ms was 0, dead on arrival
    [{ 'tokens.access_ttl': '999ms' }, 'tokens.access_ttl must be a whole number of seconds (tokens and cookies carry seconds) (got "999ms"'],
    [{ 'sessions.absolute_ttl': '1500ms' }, 'sessions.absolute_ttl must be a whole number of seconds (tokens and cookies carry seconds) (got "1500ms"'],
    // the device cookie writes over a refresh cookie of its name at every login
    [{ 'cookie.name': 'authd_device', 'cookie.secure': false }, "cookie.name must not be the device cookie's name (authd_device, __Host-authd_device) (got \"authd_device\""],
    [{ 'cookie.name': '__Host-authd_device' }, "cookie.name must not be the device cookie's name (authd_device, __Host-authd_device) (got \"__Host-authd_device\""],
  ]
  for (const [values, problem] of cases) {
    const key = Object.keys(values)[0]!
    t.test(problem, async (t) => refuses(t, values, `config: ${problem} ${FILE})`, key))
  }
})

t.test('a list names the one bad item, not the whole list', async (t) => {
  refuses(t, { 'server.trust_proxy': ['10.0.0.0/8', 7] }, `config: server.trust_proxy entries must be IP addresses or CIDRs like "10.0.0.0/8" (got 7 ${FILE})`, 'server.trust_proxy')
  refuses(
    t,
    { 'cors.origins': ['https://a.example', 'https://b.example/app'] },
    `config: cors.origins entries must be origins like "https://app.example.com" (scheme, host, optional port; no path) (got "https://b.example/app" ${FILE})`,
    'cors.origins',
  )
})

t.test('a message is one line whatever the value holds', async (t) => {
  refuses(t, { 'server.host': 'a\nb' }, `config: server.host must be an IP address or host name (got "a\\nb" ${FILE})`, 'server.host')
})

t.test('server.host: an IP address of either family, or a host name by its rules', async (t) => {
  const long = Array.from({ length: 4 }, () => 'a'.repeat(62)).join('.') // 251 characters
  for (const host of ['127.0.0.1', '0.0.0.0', '::', '::1', 'fe80::1', 'localhost', 'auth-1.example.com', 'A.B', long, `${long}.b`]) {
    t.equal(build({ 'server.host': host }).server.host, host, host.slice(0, 30))
  }
  for (const host of ['', ' ', '-a.example', 'a-.example', 'a..b', '.a', 'a.', 'a_b.example', 'a b', 'http://a', '127.0.0.1:80', `${long}.bc`]) {
    refuses(t, { 'server.host': host }, `config: server.host must be an IP address or host name (got ${JSON.stringify(host)} ${FILE})`, 'server.host')
  }
})

t.test('the bounds of the integer keys are inclusive', async (t) => {
  const c = build({ 'server.port': 65535, 'store.pool_size': 1000, 'passwords.memory_kib': 19456, 'passwords.time_cost': 10, 'passwords.parallelism': 16, 'sessions.max_per_user': 100000, 'rate_limit.max_keys': 1000 })
  t.same(
    [c.server.port, c.store.poolSize, c.passwords.memoryKib, c.passwords.timeCost, c.passwords.parallelism, c.sessions.maxPerUser, c.rateLimit.maxKeys],
    [65535, 1000, 19456, 10, 16, 100000, 1000],
  )
  t.equal(build({ 'server.port': 0 }).server.port, 0)
  refuses(t, { 'store.pool_size': 1001 }, `config: store.pool_size must be an integer 1-1000 (got 1001 ${FILE})`, 'store.pool_size')
  refuses(t, { 'sessions.max_per_user': 100001 }, `config: sessions.max_per_user must be an integer 1-100000 (got 100001 ${FILE})`, 'sessions.max_per_user')
})

t.test('zero is a duration only for clock_tolerance, key_lead and reuse_grace', async (t) => {
  const c = build({ 'tokens.clock_tolerance': '0s', 'tokens.key_lead': '0ms', 'sessions.reuse_grace': '0m' })
  t.same([c.tokens.clockToleranceMs, c.tokens.keyLeadMs, c.sessions.reuseGraceMs], [0, 0, 0])
  for (const key of ['tokens.access_ttl', 'sessions.idle_ttl', 'sessions.absolute_ttl', 'audit.retention'] as const) {
    refuses(t, { [key]: '0d' }, `config: ${key} must be a duration greater than 0 (got "0d" ${FILE})`, key)
  }
})

t.test('a rule between two keys names both values and where each came from', async (t) => {
  const l = layer({ 'cookie.same_site': 'None' })
  l.set('cookie.secure', { value: false, source: 'from AUTHD_COOKIE_SECURE' })
  l.set('cookie.name', { value: 'rt', source: FILE })
  refuses(t, l, `config: cookie.same_site None requires cookie.secure = true (got "None" ${FILE}; cookie.secure is false from AUTHD_COOKIE_SECURE)`, 'cookie.same_site')

  refuses(
    t,
    { 'passwords.min_length': 12, 'passwords.max_length': 11 },
    `config: passwords.max_length must be >= passwords.min_length (got 11 ${FILE}; passwords.min_length is 12 ${FILE})`,
    'passwords.max_length',
  )
  const equal = build({ 'passwords.min_length': 12, 'passwords.max_length': 12 }).passwords
  t.same([equal.minLength, equal.maxLength], [12, 12], 'equal lengths are allowed')

  refuses(
    t,
    { 'store.backend': 'postgres' },
    `config: store.url is required when store.backend is "postgres" (e.g. "postgres://authd@db.internal:5432/authd") (got "" by default; store.backend is "postgres" ${FILE})`,
    'store.url',
  )
})

t.test('__Secure- and __Host- cookie names, in any case, need Secure; __Host- also Path=/', async (t) => {
  for (const name of ['__Secure-rt', '__secure-rt', '__HOST-rt', '__Host-authd_rt']) {
    refuses(
      t,
      { 'cookie.name': name, 'cookie.secure': false },
      `config: cookie.secure must be true when cookie.name has a __Secure- or __Host- prefix (got false ${FILE}; cookie.name is ${JSON.stringify(name)} ${FILE})`,
      'cookie.secure',
    )
  }
  refuses(
    t,
    { 'cookie.name': '__host-rt', 'cookie.path': '/api/auth' },
    `config: cookie.path must be "/" when cookie.name has a __Host- prefix (got "/api/auth" ${FILE}; cookie.name is "__host-rt" ${FILE})`,
    'cookie.path',
  )
  t.same(build({ 'cookie.name': '__Secure-rt', 'cookie.path': '/api/auth' }).cookie, { name: '__Secure-rt', secure: true, sameSite: 'Strict', path: '/api/auth' }, '__Secure- allows any path')
  t.same(build({ 'cookie.name': '_Host-rt', 'cookie.secure': false, 'cookie.path': '/x' }).cookie, { name: '_Host-rt', secure: false, sameSite: 'Strict', path: '/x' }, 'not the prefix: no rule')
})

t.test('cookie.name is a token and cookie.path a path an attribute can hold', async (t) => {
  for (const name of ['rt', "a!#$%&'*+-.^_`|~9"]) t.equal(build({ 'cookie.name': name, 'cookie.secure': true }).cookie.name, name)
  for (const name of ['a=b', 'a;b', 'a b', 'a,b', '"rt"', 'a(b)', 'rt\u00e9', '']) {
    refuses(t, { 'cookie.name': name }, `config: cookie.name must be a cookie name (letters, digits and !#$%&'*+-.^_\`|~) (got ${JSON.stringify(name)} ${FILE})`, 'cookie.name')
  }
  t.equal(build({ 'cookie.name': 'rt', 'cookie.path': '/api/auth/' }).cookie.path, '/api/auth/')
  for (const path of ['api', '/a b', '/a;b', '/a\tb', '/\u00e9', '']) {
    refuses(t, { 'cookie.name': 'rt', 'cookie.path': path }, `config: cookie.path must start with "/" and hold no spaces, ";" or control characters (got ${JSON.stringify(path)} ${FILE})`, 'cookie.path')
  }
})

t.test('trust_proxy: a bare address becomes a one-address CIDR; a CIDR is kept as written', async (t) => {
  t.same(build({ 'server.trust_proxy': ['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8', '::ffff:10.0.0.0/104', '0.0.0.0/0'] }).server.trustProxy, [
    '10.0.0.0/8',
    '127.0.0.1/32',
    '::1/128',
    'fd00::/8',
    '::ffff:10.0.0.0/104',
    '0.0.0.0/0',
  ])
  for (const entry of ['10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.0/8/8', '10.0.0.0/x', '10.0.0.0/-1', '01.2.3.4', '1.2.3', 'localhost', '10.0.0.0 /8', '']) {
    refuses(t, { 'server.trust_proxy': [entry] }, `config: server.trust_proxy entries must be IP addresses or CIDRs like "10.0.0.0/8" (got ${JSON.stringify(entry)} ${FILE})`, 'server.trust_proxy')
  }
})

// Regression: an IPv4-mapped IPv6 CIDR shorter than /96 ("::ffff:10.0.0.0/8") passed check-config,
// and then `authd start` stopped with "invalid trust_proxy entry" (exit 1, not a config error):
// the client-address resolver reads such an address as IPv4 and its prefix as 8 - 96.
t.test('trust_proxy refuses an IPv4-mapped CIDR wider than the mapped range, which no resolver could use', async (t) => {
  for (const entry of ['::ffff:10.0.0.0/8', '::ffff:10.0.0.0/95', '::FFFF:1.2.3.4/0', '0:0:0:0:0:ffff:1.2.3.4/64']) {
    refuses(t, { 'server.trust_proxy': [entry] }, `config: server.trust_proxy entries must be IP addresses or CIDRs like "10.0.0.0/8" (got ${JSON.stringify(entry)} ${FILE})`, 'server.trust_proxy')
  }
  // what validation lets through, the client-address resolver (http/client-ip.ts) can be built from
  const candidates = ['10.0.0.0', '::', '::1', 'fe80::1', 'fe80::1%eth0', '::ffff:1.2.3.4%eth0', '::ffff:10.0.0.0', '::ffff:a00:0', '::1.2.3.4', '64:ff9b::1.2.3.4', '2001:db8::']
  for (const address of candidates) {
    for (const bits of [undefined, '0', '8', '32', '33', '95', '96', '97', '104', '128', '129', '008']) {
      const entry = bits === undefined ? address : `${address}/${bits}`
      let trustProxy: string[]
      try {
        trustProxy = build({ 'server.trust_proxy': [entry] }).server.trustProxy
      } catch {
        continue
      }
      t.doesNotThrow(() => createClientIp(trustProxy), entry)
    }
  }
})

t.test('cors.origins are normalised to the Origin a browser sends; anything more is refused', async (t) => {
  const given = ['HTTPS://App.Example.com:443/', 'http://a.example:80', 'https://a.example:8443', 'http://[::1]:3000', 'https://bücher.example']
  t.same(build({ 'cors.origins': given }).cors.origins, ['https://app.example.com', 'http://a.example', 'https://a.example:8443', 'http://[::1]:3000', 'https://xn--bcher-kva.example'])
  for (const origin of ['https://a.example/app', 'https://a.example?', 'https://a.example#', 'https://a.example/#', 'https://a.example/?x=1', 'https://u@a.example', 'https://u:p@a.example', 'ftp://a.example', 'null', '*', 'a.example', '']) {
    refuses(
      t,
      { 'cors.origins': [origin] },
      // a password in the value is shown as *** (config-error.ts, showValue)
      `config: cors.origins entries must be origins like "https://app.example.com" (scheme, host, optional port; no path) (got ${JSON.stringify(origin.replace(':p@', ':***@'))} ${FILE})`,
      'cors.origins',
    )
  }
})

t.test('server.public_url: derived from the effective host and port unless set; absolute http(s), no credentials', async (t) => {
  t.equal(build({ 'server.host': '::1', 'server.port': 9000 }).server.publicUrl, 'http://[::1]:9000')
  t.equal(build({ 'server.public_url': 'https://auth.example.com/base', 'server.port': 9000 }).server.publicUrl, 'https://auth.example.com/base')
  for (const url of ['', 'auth.example.com', '/auth', 'ftp://auth.example.com', 'https://u@auth.example.com', 'https://u:p@auth.example.com']) {
    const shown = url.replace(':p@', ':***@')
    refuses(t, { 'server.public_url': url }, `config: server.public_url must be an absolute http(s) URL without credentials (got ${JSON.stringify(shown)} ${FILE})`, 'server.public_url')
  }
})

t.test('server.socket: "" is none; a path is resolved against cwd', async (t) => {
  t.equal(build().server.socket, null)
  t.equal(build({ 'server.socket': 'run/authd.sock' }).server.socket, join(CWD, 'run/authd.sock'))
  t.equal(build({ 'server.socket': '/run/authd/authd.sock' }).server.socket, '/run/authd/authd.sock')
})

t.test('store.url: "" with lmdb; a postgres:// or postgresql:// URL without spaces; a refused one shown without its password', async (t) => {
  t.equal(build().store.url, '')
  t.equal(build({ 'store.backend': 'postgres', 'store.url': 'postgresql://authd@/authd?host=/run/postgresql' }).store.url, 'postgresql://authd@/authd?host=/run/postgresql')
  refuses(
    t,
    { 'store.backend': 'postgres', 'store.url': 'postgres://authd:pw@db /authd' },
    `config: store.url must be a URL like "postgres://authd@db.internal:5432/authd" (got "postgres://authd:***@db /authd" ${FILE})`,
    'store.url',
  )
  // ones node-postgres cannot take apart: a port past 65535, a broken IPv6 host (they failed at start, raw)
  for (const [url, shown] of [['postgres://a:pw@127.0.0.1:99999/d', 'postgres://a:***@127.0.0.1:99999/d'], ['postgres://[::1:1/d', 'postgres://[::1:1/d']]) {
    refuses(t, { 'store.backend': 'postgres', 'store.url': url }, `config: store.url must be a URL like "postgres://authd@db.internal:5432/authd" (got "${shown}" ${FILE})`, 'store.url')
  }
})

t.test('mfa.issuer is tokens.issuer unless set', async (t) => {
  t.equal(build({ 'tokens.issuer': 'Example Co' }).mfa.issuer, 'Example Co')
  t.equal(build({ 'tokens.issuer': 'Example Co', 'mfa.issuer': 'Example Login' }).mfa.issuer, 'Example Login')
})

t.test('a key with no value at all is a fault of the program, not of the config', async (t) => {
  const l = layer()
  l.delete('server.port')
  t.throws(() => buildConfig(l, { dev: false, cwd: CWD }), { message: 'config: server.port has no value, not even a default' })
  try {
    buildConfig(l, { dev: false, cwd: CWD })
  } catch (error) {
    t.notOk(isAppError(error), 'not a CONFIG_INVALID an operator could fix')
  }
})
