/**
 * GET /.well-known/jwks.json, injected into the handler: the public keys that verify current tokens, so a
 * service can verify access tokens offline with a standard library (jose) — and follow rotation.
 */
import { createLocalJWKSet, jwtVerify } from 'jose'
import t from 'tap'
import { createAdmin, lazyPasswordTools } from '../../src/core/admin.js'
import { generateKey } from '../../src/core/keys.js'
import { addUser, call, buildApp, type TestApp } from '../helpers/app.js'
import { activeKey } from '../helpers/jwt.js'

const PASSWORD = 'correct horse battery'

const jwks = async (app: TestApp): Promise<{ keys: Array<Record<string, unknown>> }> => {
  const r = await call(app, 'GET', '/.well-known/jwks.json')
  if (r.status !== 200) throw new Error(`jwks: ${r.status}`)
  return r.body
}

const loginToken = async (app: TestApp): Promise<string> =>
  (await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })).body.data.accessToken

for (const alg of ['ES256', 'RS256'] as const) {
  t.test(`publishes the ${alg} key with kid, alg and use "sig", cacheable for 5 minutes`, async (t) => {
    const app = await buildApp(t, { env: { AUTHD_TOKENS_ALGORITHM: alg } })
    const r = await call(app, 'GET', '/.well-known/jwks.json')
    t.equal(r.status, 200)
    t.equal(r.headers['cache-control'], 'public, max-age=300')
    t.match(r.headers['content-type'], /^application\/(json|jwk-set\+json)/)
    t.equal(r.headers['x-content-type-options'], 'nosniff')
    t.same(Object.keys(r.body), ['keys'], 'a bare JWK Set, not the success envelope')
    t.equal(r.body.keys.length, 1)
    const jwk = r.body.keys[0]
    const key = await activeKey(app)
    t.match(jwk, { kid: key.kid, alg, use: 'sig', kty: alg === 'ES256' ? 'EC' : 'RSA' })
    for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']) t.notOk(secret in jwk, `no private member ${secret}`)
    t.notMatch(r.text, /PRIVATE/)
  })

  t.test(`lets a service verify ${alg} access tokens offline with jose`, async (t) => {
    const app = await buildApp(t, { env: { AUTHD_TOKENS_ALGORITHM: alg } })
    const user = await addUser(app, 'ann@example.com', PASSWORD)
    const token = await loginToken(app)
    const set = createLocalJWKSet((await jwks(app)) as never)
    const { payload, protectedHeader } = await jwtVerify(token, set, { issuer: 'authd', audience: 'authd', typ: 'at+jwt', algorithms: [alg] })
    t.equal(payload.sub, user.id)
    t.equal(payload.email, 'ann@example.com')
    t.equal(protectedHeader.kid, (await activeKey(app)).kid)
    const tampered = token.slice(0, -4) + (token.endsWith('AAAA') ? 'BBBB' : 'AAAA')
    await t.rejects(jwtVerify(tampered, set, { issuer: 'authd', audience: 'authd' }), 'a tampered token fails offline too')
  })
}

t.test('the JWKS is cached no longer than tokens.key_lead, so a verifier has a rotated-in key before its first token', async (t) => {
  // the default lead is 5m: the documented max-age of 300
  for (const [lead, maxAge] of [
    [undefined, 300],
    ['10m', 300],
    ['5m', 300],
    ['90s', 90],
    ['1500ms', 1],
    ['999ms', 0],
    ['0s', 0],
  ] as const) {
    const app = await buildApp(t, { env: lead === undefined ? {} : { AUTHD_TOKENS_KEY_LEAD: lead } })
    const r = await call(app, 'GET', '/.well-known/jwks.json')
    t.equal(r.headers['cache-control'], `public, max-age=${maxAge}`, `key_lead ${lead ?? 'default'}: max-age ${maxAge} (whole seconds, rounded down)`)
  }
})

t.test('lists a rotated key at once, keeps the old one while its tokens live, and drops a revoked one', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const oldToken = await loginToken(app)
  const old = await activeKey(app)
  t.same(
    (await jwks(app)).keys.map((k) => k.kid),
    [old.kid],
  )
  const next = generateKey('ES256', Date.now())
  await app.store.rotateKey(next, Date.now())
  t.same(
    (await jwks(app)).keys.map((k) => k.kid).sort(),
    [old.kid, next.kid].sort(),
    'both keys, right after the rotation',
  )
  const newToken = await loginToken(app)
  const set = createLocalJWKSet((await jwks(app)) as never)
  const opts = { issuer: 'authd', audience: 'authd' }
  t.equal((await jwtVerify(newToken, set, opts)).protectedHeader.kid, next.kid, 'the new key signs')
  t.equal((await jwtVerify(oldToken, set, opts)).protectedHeader.kid, old.kid, 'tokens of the old key still verify')
  t.ok(await app.store.deleteKey(old.kid))
  t.same(
    (await jwks(app)).keys.map((k) => k.kid),
    [next.kid],
    'a revoked key is gone at once',
  )
})

t.test('a key rotated in by authctl is in the JWKS before it signs; the old key signs until tokens.key_lead has passed (moved clock)', async (t) => {
  const clock = { now: Date.now() }
  const app = await buildApp(t, { now: () => clock.now })
  await addUser(app, 'ann@example.com', PASSWORD)
  const old = await activeKey(app)
  // as `authctl keys rotate` does, on the same store and clock
  const admin = createAdmin({ store: app.store, config: app.config, now: () => clock.now, passwords: lazyPasswordTools(app.config) })
  const { key } = await admin.rotateKey()
  t.equal(key.state, 'next')
  t.same((await jwks(app)).keys.map((k) => k.kid).sort(), [old.kid, key.kid].sort(), 'published at once')
  const kid = (token: string): unknown => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid
  const before = await loginToken(app)
  t.equal(kid(before), old.kid, 'the old key signs right after the rotation')
  clock.now += app.config.tokens.keyLeadMs - 1
  t.equal(kid(await loginToken(app)), old.kid, 'and until the lead has passed')
  clock.now += 1
  const after = await loginToken(app)
  t.equal(kid(after), key.kid, 'then the new key signs, with nothing written to the store')
  const set = createLocalJWKSet((await jwks(app)) as never)
  const opts = { issuer: 'authd', audience: 'authd', currentDate: new Date(clock.now) }
  t.equal((await jwtVerify(before, set, opts)).protectedHeader.kid, old.kid, 'tokens of the old key still verify')
  t.equal((await jwtVerify(after, set, opts)).protectedHeader.kid, key.kid)
})
