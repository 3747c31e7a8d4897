import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { loadConfig, type ConfigFlags } from '../../src/config/load.js'
import { isAppError } from '../../src/errors.js'

type Env = Record<string, string | undefined>

function load(cwd: string, options: { flags?: ConfigFlags; env?: Env } = {}) {
  return loadConfig({ flags: options.flags ?? {}, env: options.env ?? {}, cwd })
}

function configError(t: Test, fn: () => unknown, ...patterns: Array<string | RegExp>): void {
  try {
    fn()
  } catch (error) {
    t.ok(isAppError(error), 'throws an AppError')
    t.equal((error as { code?: unknown }).code, 'CONFIG_INVALID')
    const message = (error as Error).message
    t.notMatch(message, /\n/, 'one line')
    for (const pattern of patterns) {
      if (typeof pattern === 'string') t.ok(message.includes(pattern), `${JSON.stringify(message)} mentions ${pattern}`)
      else t.match(message, pattern)
    }
    return
  }
  t.fail('expected a CONFIG_INVALID error')
}

t.test('with nothing configured, gives the built-in defaults', async (t) => {
  const cwd = t.testdir({})
  const { config, file } = load(cwd)
  t.equal(file, null)
  t.same(config, {
    server: { host: '127.0.0.1', port: 8080, trustProxy: [], bodyLimit: 16_384, publicUrl: 'http://127.0.0.1:8080', socket: null },
    store: { path: join(cwd, 'data'), backend: 'lmdb', url: '', poolSize: 10 },
    tokens: { algorithm: 'ES256', accessTtlMs: 900_000, issuer: 'authd', audience: 'authd', clockToleranceMs: 5_000, keyLeadMs: 300_000 },
    sessions: { idleTtlMs: 7 * 86_400_000, absoluteTtlMs: 30 * 86_400_000, reuseGraceMs: 10_000, maxPerUser: 50 },
    cookie: { name: '__Host-authd_rt', secure: true, sameSite: 'Strict', path: '/' },
    cors: { origins: [] },
    passwords: { minLength: 8, maxLength: 256, memoryKib: 19456, timeCost: 2, parallelism: 1 },
    rateLimit: {
      login: {
        perIpEmail: { count: 5, windowMs: 900_000, text: '5/15m' },
        perEmail: { count: 20, windowMs: 3_600_000, text: '20/1h' },
        perIp: { count: 50, windowMs: 900_000, text: '50/15m' },
        perDevice: { count: 10, windowMs: 900_000, text: '10/15m' },
      },
      register: { perIp: { count: 10, windowMs: 3_600_000, text: '10/1h' } },
      refresh: { perIp: { count: 150, windowMs: 300_000, text: '150/5m' } },
      mfa: { perUser: { count: 5, windowMs: 900_000, text: '5/15m' } },
      maxKeys: 100_000,
    },
    audit: { retentionMs: 90 * 86_400_000 },
    registration: { enabled: true },
    mfa: { issuer: 'authd' },
    log: { level: 'info' },
    metrics: { enabled: true },
    dev: false,
  })
})

t.test('--dev drops the Secure attribute and the __Host- prefix of the cookie', async (t) => {
  const { config } = load(t.testdir({}), { flags: { dev: true } })
  t.equal(config.dev, true)
  t.same(config.cookie, { name: 'authd_rt', secure: false, sameSite: 'Strict', path: '/' })
})

t.test('--dev with an explicit __Secure- cookie name is an error naming both keys', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '[cookie]\nname = "__Secure-rt"\n' })
  configError(
    t,
    () => load(cwd, { flags: { dev: true } }),
    'config: cookie.secure must be true when cookie.name has a __Secure- or __Host- prefix',
    '(got false by default with --dev; cookie.name is "__Secure-rt" in ' + join(cwd, 'auth.toml') + ')',
  )
})

t.test('--dev keeps an explicitly configured cookie', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '[cookie]\nname = "rt"\nsecure = true\n' })
  t.same(load(cwd, { flags: { dev: true } }).config.cookie, { name: 'rt', secure: true, sameSite: 'Strict', path: '/' })
})

t.test('port: a flag beats the environment, which beats the file', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '[server]\nport = 7000\n' })
  t.equal(load(cwd).config.server.port, 7000)
  t.equal(load(cwd, { env: { AUTHD_SERVER_PORT: '9000' } }).config.server.port, 9000)
  t.equal(load(cwd, { env: { AUTHD_SERVER_PORT: '9000' }, flags: { port: '9100' } }).config.server.port, 9100)
  t.equal(load(cwd, { env: { AUTHD_SERVER_PORT: '9000' }, flags: { port: 9200 } }).config.server.port, 9200)
})

t.test('--port 0 is allowed (a free port)', async (t) => {
  t.equal(load(t.testdir({}), { flags: { port: 0 } }).config.server.port, 0)
  t.equal(load(t.testdir({}), { flags: { port: '0' } }).config.server.port, 0)
})

t.test('public_url is derived from the effective host and port unless set', async (t) => {
  const cwd = t.testdir({})
  t.equal(load(cwd, { flags: { host: '::1', port: 9000 } }).config.server.publicUrl, 'http://[::1]:9000')
  t.equal(load(cwd, { flags: { host: 'localhost' } }).config.server.publicUrl, 'http://localhost:8080')
  const env = { AUTHD_SERVER_PUBLIC_URL: 'https://auth.example.com' }
  t.equal(load(cwd, { env, flags: { port: 9000 } }).config.server.publicUrl, 'https://auth.example.com')
})

t.test('mfa.issuer is tokens.issuer unless set; rate_limit.mfa.per_user defaults to 5/15m', async (t) => {
  const cwd = t.testdir({})
  t.equal(load(cwd).config.mfa.issuer, 'authd')
  t.equal(load(cwd, { env: { AUTHD_TOKENS_ISSUER: 'Example Co' } }).config.mfa.issuer, 'Example Co')
  t.equal(load(cwd, { env: { AUTHD_TOKENS_ISSUER: 'Example Co', AUTHD_MFA_ISSUER: 'Example Login' } }).config.mfa.issuer, 'Example Login')
  t.match(load(cwd).config.rateLimit.mfa.perUser, { count: 5, windowMs: 15 * 60_000, text: '5/15m' })
  t.equal(load(cwd, { env: { AUTHD_RATE_LIMIT_MFA_PER_USER: '3/1h' } }).config.rateLimit.mfa.perUser.count, 3)
})

t.test('store.path: --data beats AUTHD_DATA beats the file, relative to cwd', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '[store]\npath = "from-file"\n' })
  t.equal(load(cwd).config.store.path, join(cwd, 'from-file'))
  t.equal(load(cwd, { env: { AUTHD_DATA: 'from-env' } }).config.store.path, join(cwd, 'from-env'))
  t.equal(load(cwd, { env: { AUTHD_STORE_PATH: 'from-env' } }).config.store.path, join(cwd, 'from-env'))
  t.equal(load(cwd, { env: { AUTHD_DATA: 'from-env' }, flags: { data: '/abs/dir' } }).config.store.path, '/abs/dir')
  configError(t, () => load(cwd, { env: { AUTHD_DATA: 'a', AUTHD_STORE_PATH: 'b' } }), 'AUTHD_DATA', '"a"', '"b"')
})

t.test('config file discovery', async (t) => {
  const dir = t.testdir({
    'auth.toml': '[server]\nport = 1111\n',
    'other.toml': '[server]\nport = 2222\n',
    'third.toml': '[server]\nport = 3333\n',
  })

  t.test('reads ./auth.toml when it exists', async (t) => {
    const { config, file } = load(dir)
    t.equal(file, join(dir, 'auth.toml'))
    t.equal(config.server.port, 1111)
  })
  t.test('AUTHD_CONFIG beats ./auth.toml, relative to cwd', async (t) => {
    const { config, file } = load(dir, { env: { AUTHD_CONFIG: 'other.toml' } })
    t.equal(file, join(dir, 'other.toml'))
    t.equal(config.server.port, 2222)
  })
  t.test('--config beats AUTHD_CONFIG', async (t) => {
    const { config, file } = load(dir, { env: { AUTHD_CONFIG: 'other.toml' }, flags: { config: join(dir, 'third.toml') } })
    t.equal(file, join(dir, 'third.toml'))
    t.equal(config.server.port, 3333)
  })
  t.test('a named file that does not exist is an error naming it', async (t) => {
    configError(t, () => load(dir, { env: { AUTHD_CONFIG: 'missing.toml' } }), join(dir, 'missing.toml'), 'no such file')
  })
  t.test('an empty --config or AUTHD_CONFIG is an error', async (t) => {
    configError(t, () => load(dir, { flags: { config: '' } }), '--config')
    configError(t, () => load(dir, { env: { AUTHD_CONFIG: '' } }), 'AUTHD_CONFIG')
  })
})

t.test('an unparsable file is an error naming the file and the line', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '[server]\nport = = 1\n' })
  configError(t, () => load(cwd), join(cwd, 'auth.toml'), 'line 2')
})

t.test('unknown keys in the file are errors, at any depth', async (t) => {
  // each names the key and the value it was given (README, "Administer with authctl")
  const cases: Array<[string, string, string]> = [
    ['[server]\nprot = 1\n', 'server.prot', 'got 1 in'],
    ['[servre]\nport = 1\n', 'servre', 'got a table in'],
    ['top = "x"\n', 'top', 'got "x" in'],
    ['[rate_limit.login]\nper_ip_mail = "5/1m"\n', 'rate_limit.login.per_ip_mail', 'got "5/1m" in'],
    ['[rate_limit.logout]\nper_ip = "5/1m"\n', 'rate_limit.logout', 'got a table in'],
  ]
  for (const [toml, key, value] of cases) {
    const cwd = t.testdir({ 'auth.toml': toml })
    configError(t, () => load(cwd), `"${key}"`, value, join(cwd, 'auth.toml'))
  }
  const cwd = t.testdir({ 'auth.toml': 'server = 1\n' })
  configError(t, () => load(cwd), 'config: server must be a table')
  const cwd2 = t.testdir({ 'auth.toml': '[server.host]\nx = 1\n' })
  configError(t, () => load(cwd2), 'config: server.host', 'got a table')
})

t.test('unknown AUTHD_ variables are errors; other variables are ignored', async (t) => {
  const cwd = t.testdir({})
  configError(t, () => load(cwd, { env: { AUTHD_SERVER_PROT: '1' } }), 'AUTHD_SERVER_PROT', '(got "1")')
  configError(t, () => load(cwd, { env: { AUTHD_RATE_LIMIT_LOGIN: '5/1m' } }), 'AUTHD_RATE_LIMIT_LOGIN', '(got "5/1m")')
  t.equal(load(cwd, { env: { HOME: '/root', AUTHDX: '1', AUTHD_SERVER_PROT: undefined } }).config.server.port, 8080)
})

t.test('environment values are read per key type', async (t) => {
  const { config } = load(t.testdir({}), {
    env: {
      AUTHD_SERVER_TRUST_PROXY: '10.0.0.0/8, 192.168.1.1',
      AUTHD_CORS_ORIGINS: '["https://a.example.com", "http://localhost:3000/"]',
      AUTHD_SERVER_BODY_LIMIT: '1MB',
      AUTHD_TOKENS_ACCESS_TTL: '5m',
      AUTHD_RATE_LIMIT_LOGIN_PER_IP: '10/1m',
      AUTHD_RATE_LIMIT_MAX_KEYS: '5000',
      AUTHD_REGISTRATION_ENABLED: 'false',
      AUTHD_COOKIE_SAME_SITE: 'Lax',
    },
  })
  t.same(config.server.trustProxy, ['10.0.0.0/8', '192.168.1.1/32'])
  t.same(config.cors.origins, ['https://a.example.com', 'http://localhost:3000'])
  t.equal(config.server.bodyLimit, 1_048_576)
  t.equal(config.tokens.accessTtlMs, 300_000)
  t.same(config.rateLimit.login.perIp, { count: 10, windowMs: 60_000, text: '10/1m' })
  t.equal(config.rateLimit.maxKeys, 5000)
  t.equal(config.registration.enabled, false)
  t.equal(config.cookie.sameSite, 'Lax')
  t.same(load(t.testdir({}), { env: { AUTHD_CORS_ORIGINS: '' } }).config.cors.origins, [])
  t.same(load(t.testdir({}), { env: { AUTHD_CORS_ORIGINS: "['https://b.example']" } }).config.cors.origins, ['https://b.example'])
})

t.test('each bad value is an error naming the key, the value and its source', async (t) => {
  const cwd = t.testdir({})
  const cases: Array<[Env, string, string]> = [
    [{ AUTHD_SERVER_PORT: 'abc' }, 'server.port must be an integer 0-65535', '"abc"'],
    [{ AUTHD_SERVER_PORT: '65536' }, 'server.port', '65536'],
    [{ AUTHD_SERVER_PORT: '-1' }, 'server.port', '-1'],
    [{ AUTHD_SERVER_HOST: 'no such host' }, 'server.host', '"no such host"'],
    [{ AUTHD_SERVER_TRUST_PROXY: '10.0.0.0/33' }, 'server.trust_proxy', '"10.0.0.0/33"'],
    [{ AUTHD_SERVER_TRUST_PROXY: '10.0.0.0/8,nope' }, 'server.trust_proxy', '"nope"'],
    [{ AUTHD_SERVER_TRUST_PROXY: '::1/129' }, 'server.trust_proxy', '"::1/129"'],
    [{ AUTHD_SERVER_TRUST_PROXY: '["a"' }, 'server.trust_proxy must be a list', '"[\\"a\\""'],
    [{ AUTHD_SERVER_BODY_LIMIT: '16' }, 'server.body_limit', '"16"'],
    [{ AUTHD_SERVER_BODY_LIMIT: '0kb' }, 'server.body_limit', '"0kb"'],
    [{ AUTHD_SERVER_PUBLIC_URL: 'example.com' }, 'server.public_url', '"example.com"'],
    [{ AUTHD_SERVER_PUBLIC_URL: 'ftp://example.com' }, 'server.public_url', '"ftp://example.com"'],
    [{ AUTHD_STORE_PATH: '' }, 'store.path', '""'],
    [{ AUTHD_TOKENS_ALGORITHM: 'HS256' }, 'tokens.algorithm must be one of ES256, RS256', '"HS256"'],
    [{ AUTHD_TOKENS_ACCESS_TTL: '15' }, 'tokens.access_ttl', '"15"'],
    [{ AUTHD_TOKENS_ACCESS_TTL: '0s' }, 'tokens.access_ttl must be a duration greater than 0', '"0s"'],
    [{ AUTHD_TOKENS_ISSUER: '' }, 'tokens.issuer', '""'],
    [{ AUTHD_MFA_ISSUER: '' }, 'mfa.issuer', '""'],
    [{ AUTHD_RATE_LIMIT_MFA_PER_USER: '0/15m' }, 'rate_limit.mfa.per_user', '"0/15m"'],
    [{ AUTHD_TOKENS_CLOCK_TOLERANCE: '-5s' }, 'tokens.clock_tolerance', '"-5s"'],
    [{ AUTHD_TOKENS_KEY_LEAD: '5 minutes' }, 'tokens.key_lead', '"5 minutes"'],
    [{ AUTHD_SESSIONS_IDLE_TTL: '0d' }, 'sessions.idle_ttl', '"0d"'],
    [{ AUTHD_SESSIONS_ABSOLUTE_TTL: '1 day' }, 'sessions.absolute_ttl', '"1 day"'],
    [{ AUTHD_SESSIONS_REUSE_GRACE: '1.5s' }, 'sessions.reuse_grace', '"1.5s"'],
    [{ AUTHD_COOKIE_NAME: 'a b' }, 'cookie.name', '"a b"'],
    [{ AUTHD_COOKIE_SECURE: 'yes' }, 'cookie.secure must be true or false', '"yes"'],
    [{ AUTHD_COOKIE_SECURE: 'false' }, 'cookie.secure must be true when cookie.name has a __Secure- or __Host- prefix', 'false'],
    [{ AUTHD_COOKIE_PATH: '/api/auth', AUTHD_COOKIE_NAME: '__Host-rt' }, 'cookie.path must be "/" when cookie.name has a __Host- prefix', '"/api/auth"'],
    [{ AUTHD_COOKIE_SAME_SITE: 'strict' }, 'cookie.same_site', '"strict"'],
    [{ AUTHD_COOKIE_SAME_SITE: 'None', AUTHD_COOKIE_SECURE: 'false' }, 'cookie.same_site None requires cookie.secure = true', '"None"'],
    [{ AUTHD_COOKIE_PATH: 'api' }, 'cookie.path', '"api"'],
    [{ AUTHD_COOKIE_PATH: '/a;b' }, 'cookie.path', '"/a;b"'],
    [{ AUTHD_CORS_ORIGINS: 'https://a.example.com/app' }, 'cors.origins', '"https://a.example.com/app"'],
    [{ AUTHD_CORS_ORIGINS: '*' }, 'cors.origins', '"*"'],
    [{ AUTHD_CORS_ORIGINS: 'https://a.example.com?' }, 'cors.origins', '"https://a.example.com?"'],
    [{ AUTHD_CORS_ORIGINS: 'chrome-extension://abc' }, 'cors.origins', '"chrome-extension://abc"'],
    [{ AUTHD_PASSWORDS_MIN_LENGTH: '0' }, 'passwords.min_length', '0'],
    [{ AUTHD_PASSWORDS_MAX_LENGTH: '4097' }, 'passwords.max_length', '4097'],
    [{ AUTHD_PASSWORDS_MAX_LENGTH: '10', AUTHD_PASSWORDS_MIN_LENGTH: '12' }, 'passwords.max_length must be >= passwords.min_length', '10'],
    [{ AUTHD_PASSWORDS_MEMORY_KIB: '19455' }, 'passwords.memory_kib must be an integer 19456-1048576', '19455'],
    [{ AUTHD_PASSWORDS_MEMORY_KIB: '2000000' }, 'passwords.memory_kib', '2000000'],
    [{ AUTHD_PASSWORDS_TIME_COST: '1' }, 'passwords.time_cost', '1'],
    [{ AUTHD_PASSWORDS_TIME_COST: '11' }, 'passwords.time_cost', '11'],
    [{ AUTHD_PASSWORDS_PARALLELISM: '0' }, 'passwords.parallelism', '0'],
    [{ AUTHD_PASSWORDS_PARALLELISM: '17' }, 'passwords.parallelism', '17'],
    [{ AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '0/15m' }, 'rate_limit.login.per_ip_email', '"0/15m"'],
    [{ AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '20' }, 'rate_limit.login.per_email', '"20"'],
    [{ AUTHD_RATE_LIMIT_REGISTER_PER_IP: '10/0h' }, 'rate_limit.register.per_ip', '"10/0h"'],
    [{ AUTHD_RATE_LIMIT_REFRESH_PER_IP: 'lots' }, 'rate_limit.refresh.per_ip', '"lots"'],
    [{ AUTHD_RATE_LIMIT_MAX_KEYS: '999' }, 'rate_limit.max_keys must be an integer >= 1000', '999'],
    [{ AUTHD_REGISTRATION_ENABLED: '1' }, 'registration.enabled', '"1"'],
    [{ AUTHD_LOG_LEVEL: 'verbose' }, 'log.level', '"verbose"'],
    [{ AUTHD_METRICS_ENABLED: 'TRUE' }, 'metrics.enabled', '"TRUE"'],
  ]
  for (const [env, key, value] of cases) {
    t.test(`${key} ${value}`, async (t) => {
      const sources = Object.keys(env).map((name) => `from ${name}`)
      configError(t, () => load(cwd, { env }), `config: ${key}`, `(got ${value} from`, ...sources)
    })
  }
})

t.test('bad values in the file name the key, the value and the file', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '[server]\nport = "8080"\n' })
  configError(t, () => load(cwd), 'config: server.port must be an integer 0-65535 (got "8080" in ' + join(cwd, 'auth.toml') + ')')
  const cwd2 = t.testdir({ 'auth.toml': '[tokens]\naccess_ttl = 900\n' })
  configError(t, () => load(cwd2), 'tokens.access_ttl', '900')
  const cwd3 = t.testdir({ 'auth.toml': '[cors]\norigins = ["https://a.example", 5]\n' })
  configError(t, () => load(cwd3), 'cors.origins', '(got 5 in')
})

t.test('bad flag values name the key, the value and the flag', async (t) => {
  const cwd = t.testdir({})
  configError(t, () => load(cwd, { flags: { port: 'abc' } }), 'config: server.port must be an integer 0-65535 (got "abc" from --port)')
  configError(t, () => load(cwd, { flags: { port: 1.5 } }), 'server.port', '1.5', '--port')
  configError(t, () => load(cwd, { flags: { host: '' } }), 'server.host', '""', '--host')
})

t.test('zero clock tolerance and reuse grace are allowed', async (t) => {
  const { config } = load(t.testdir({}), { env: { AUTHD_TOKENS_CLOCK_TOLERANCE: '0s', AUTHD_SESSIONS_REUSE_GRACE: '0s' } })
  t.equal(config.tokens.clockToleranceMs, 0)
  t.equal(config.sessions.reuseGraceMs, 0)
})

t.test('tokens.key_lead is a duration, "0s" included (a rotated key then signs at once)', async (t) => {
  t.equal(load(t.testdir({})).config.tokens.keyLeadMs, 300_000)
  t.equal(load(t.testdir({ 'auth.toml': '[tokens]\nkey_lead = "30s"\n' })).config.tokens.keyLeadMs, 30_000)
  t.equal(load(t.testdir({}), { env: { AUTHD_TOKENS_KEY_LEAD: '0s' } }).config.tokens.keyLeadMs, 0)
})

t.test('trust_proxy accepts IPv4 and IPv6 CIDRs and bare addresses', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '[server]\ntrust_proxy = ["10.0.0.0/8", "fd00::/8", "::1", "127.0.0.1"]\n' })
  t.same(load(cwd).config.server.trustProxy, ['10.0.0.0/8', 'fd00::/8', '::1/128', '127.0.0.1/32'])
})

t.test('cors origins are normalised to the form browsers send', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '[cors]\norigins = ["HTTPS://App.Example.com:443/", "http://localhost:5173"]\n' })
  t.same(load(cwd).config.cors.origins, ['https://app.example.com', 'http://localhost:5173'])
})

t.test('server.socket: "" listens on host and port; a path is made absolute against the working directory', async (t) => {
  // a short working directory: tap's test directories are longer than a socket path may be
  const cwd = mkdtempSync(join(tmpdir(), 'authd-cfg-'))
  t.teardown(() => rmSync(cwd, { recursive: true, force: true }))
  writeFileSync(join(cwd, 'auth.toml'), '[server]\nsocket = "run/authd.sock"\n')
  t.equal(load(cwd).config.server.socket, join(cwd, 'run/authd.sock'))
  t.equal(load(t.testdir({})).config.server.socket, null)
  // longer than a Unix socket takes, as an absolute path: a config error (exit 2), not a failure at start
  const long = `/run/${'x'.repeat(100)}.sock`
  configError(t, () => load(cwd, { env: { AUTHD_SERVER_SOCKET: long } }), 'config: server.socket must be at most 107 bytes as an absolute path', '(got')
  t.equal(load(cwd, { env: { AUTHD_SERVER_SOCKET: `/run/${'x'.repeat(97)}.sock` } }).config.server.socket?.length, 107, '107 bytes: taken')
})

t.test('sessions.max_per_user must be a positive integer', async (t) => {
  const cwd = t.testdir({})
  configError(t, () => load(cwd, { env: { AUTHD_SESSIONS_MAX_PER_USER: '0' } }), 'config: sessions.max_per_user must be an integer 1-100000', '(got 0 from AUTHD_SESSIONS_MAX_PER_USER)')
  t.equal(load(cwd, { env: { AUTHD_SESSIONS_MAX_PER_USER: '3' } }).config.sessions.maxPerUser, 3)
})

t.test('the default cookie name __Host-authd_rt refuses a path other than "/"', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '[cookie]\npath = "/api/auth"\n' })
  configError(t, () => load(cwd), 'config: cookie.path must be "/" when cookie.name has a __Host- prefix', '"/api/auth"')
})
