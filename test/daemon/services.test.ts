/**
 * What the daemon builds from a Config (src/daemon/services.ts), in process on LMDB in temp
 * directories: the store it opens (or the one it is given), the signing key of tokens.algorithm
 * kept across starts, the in-process limiter, the config's password and token settings reaching
 * the hasher, the policy and the tokens, the HTTP handler built once and another for a completed
 * config, authctl's limit clears applied from the store, and what close() closes (once).
 */
import t, { type Test } from 'tap'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { createServices, type ServiceOptions } from '../../src/daemon/services.js'
import { addUser, call, captureLogs, testConfig } from '../helpers/app.js'
import { switchable } from '../helpers/unavailable-store.js'

const PASSWORD = 'correct horse battery'

async function services(t: Test, dir: string, env: Record<string, string> = {}, opts: ServiceOptions = {}) {
  const logs = captureLogs()
  const s = await createServices(testConfig(dir, env), { logDestination: logs.stream, processMetrics: false, ...opts })
  t.teardown(() => s.close())
  return Object.assign(s, { logs })
}

const claims = (token: string): Record<string, unknown> => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>

t.test('from a config alone: the store at store.path, a signing key of tokens.algorithm, an in-process limiter', async (t) => {
  const dir = t.testdir()
  const s = await services(t, dir, { AUTHD_TOKENS_ALGORITHM: 'RS256' })
  t.equal(s.store.backend, 'lmdb')
  t.equal(s.store.location, dir, 'the directory the config names')
  t.equal(s.keyring.signing().alg, 'RS256', 'the configured algorithm')
  t.same((await s.store.listKeys()).map((k) => k.state), ['active'], 'one key, active')
  t.not(s.memoryLimiter, null, 'LMDB: the limiter is in process')
  await s.auth.admitLogin({ ip: '203.0.113.1', ipKey: '203.0.113.1', userAgent: '' })
  t.equal(s.memoryLimiter!.size(), 1, 'and requests are counted in it')
  t.equal(s.config.store.path, dir)
})

t.test('a second start on the same store signs with the key the first made', async (t) => {
  const dir = t.testdir()
  const first = await services(t, dir)
  const kid = first.keyring.signing().kid
  await first.close()
  const second = await services(t, dir)
  t.equal(second.keyring.signing().kid, kid)
  t.equal((await second.store.listKeys()).length, 1, 'no second key made')
})

t.test("the config's password and token settings reach the hasher, the policy and the tokens, on the clock given", async (t) => {
  const at = Date.UTC(2026, 0, 2, 3, 4, 5)
  const s = await services(
    t,
    t.testdir(),
    { AUTHD_PASSWORDS_TIME_COST: '3', AUTHD_PASSWORDS_MIN_LENGTH: '20', AUTHD_TOKENS_ISSUER: 'https://auth.example.com', AUTHD_TOKENS_AUDIENCE: 'api.example.com', AUTHD_TOKENS_ACCESS_TTL: '5m' },
    { now: () => at },
  )
  t.match(await s.hasher.hash(PASSWORD), /^\$argon2id\$v=19\$m=19456,t=3,p=1\$/, 'argon2id at the configured cost')
  const short = await call(s, 'POST', '/api/auth/register', { json: { email: 'bob@example.com', password: 'only twelve!' } })
  t.equal(short.status, 400)
  t.same(short.body, { success: false, message: 'Password must be at least 20 characters' })
  await addUser(s, 'ann@example.com', PASSWORD)
  const login = await call(s, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  t.equal(login.status, 200)
  t.match(claims(login.body.data.accessToken as string), { iss: 'https://auth.example.com', aud: 'api.example.com', iat: at / 1000, exp: at / 1000 + 300 })
  t.equal((await s.store.listKeys())[0]!.createdAt, at, 'the key made on the same clock')
})

t.test('the handler is built once, when first asked for; app(config) builds another on the same services', async (t) => {
  const dir = t.testdir()
  const s = await services(t, dir)
  t.equal(s.handler, s.handler, 'one handler')
  const origin = 'https://app.example.com'
  const completed = s.app(testConfig(dir, { AUTHD_CORS_ORIGINS: origin }))
  t.not(completed, s.handler)
  const preflight = { origin, 'access-control-request-method': 'POST' }
  const own = await call(s, 'OPTIONS', '/api/auth/login', { headers: preflight })
  t.equal(own.status, 403, 'the handler on `config`: the origin is not listed there')
  const other = await call({ handler: completed }, 'OPTIONS', '/api/auth/login', { headers: preflight })
  t.equal(other.status, 204, 'the other on the config it was given')
  t.equal(other.headers['access-control-allow-origin'], origin)
  await addUser(s, 'ann@example.com', PASSWORD)
  for (const target of [s, { handler: completed }]) {
    t.equal((await call(target, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })).status, 200, 'the same users and keys behind both')
  }
})

t.test('a limit clear written to the store (authctl limits clear) lifts the login limit within a second, and is logged', async (t) => {
  const s = await services(t, t.testdir(), { AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '2/1h' })
  await addUser(s, 'ann@example.com', PASSWORD)
  const login = (password: string) => call(s, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password } })
  for (let i = 0; i < 2; i++) t.equal((await login(`wrong ${i}`)).status, 401)
  t.equal((await login(PASSWORD)).status, 429, 'the email is limited')
  await s.store.addLimitClear({ email: 'ann@example.com' }, Date.now())
  const deadline = performance.now() + 2000
  while (!s.logs.lines.some((l) => l.event === 'limits_cleared') && performance.now() < deadline) await new Promise((r) => setTimeout(r, 25))
  t.match(
    s.logs.lines.find((l) => l.event === 'limits_cleared'),
    { level: 'info', target: 'email', keys: Number, msg: 'login limits cleared by authctl' },
    'said, without the email',
  )
  t.notMatch(s.logs.text(), /ann@example\.com/, 'the email is not in the log')
  t.equal((await login(PASSWORD)).status, 200, 'signs in again')
})

t.test('close() closes the store it opened, once however often asked, and /readyz says 503 from then on', async (t) => {
  const s = await services(t, t.testdir())
  const first = s.close()
  t.equal(s.close(), first, 'the same close')
  await first
  await t.rejects(s.store.listUsers(), 'the store is closed')
  const ready = await call(s, 'GET', '/readyz')
  t.equal(ready.status, 503)
  t.same(ready.body, { success: false, message: 'Not ready' })
})

t.test('a store it was given is left open at close, and not asked once closing has begun', async (t) => {
  const real = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => real.close())
  const sw = switchable(real)
  const s = await services(t, t.testdir(), {}, { store: sw.store })
  t.equal(s.store, sw.store, 'the store given')
  await s.close()
  t.same(await real.listUsers(), [], 'still open')
  const pings = sw.pings
  t.equal((await call(s, 'GET', '/readyz')).status, 503)
  t.equal(sw.pings, pings, '/readyz did not ping')
})

t.test('argon2 leaves one core to the event loop: one hash at a time on 1 or 2 cores, two from 3 cores on', async (t) => {
  const os = await import('node:os')
  for (const [cores, width] of [
    [1, 1],
    [2, 1],
    [3, 2],
    [16, 2],
  ] as const) {
    const { defaultHashConcurrency } = await t.mockImport<typeof import('../../src/daemon/services.js')>('../../src/daemon/services.js', {
      'node:os': { default: { ...os.default, availableParallelism: () => cores } },
    })
    t.equal(defaultHashConcurrency(), width, `${cores} cores: ${width}`)
  }
})
