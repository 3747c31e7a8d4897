/**
 * Access tokens on a real keyring over LMDB: the header and claims of README, "Call the API", the
 * lifetime and clock tolerance, key rotation and revocation, and verify() answering null (never
 * throwing) for anything that is not a token of ours.
 */
import fc from 'fast-check'
import t, { type Test } from 'tap'
import { createAccessTokens, type AccessTokens } from '../../src/core/access-tokens.js'
import { createKeyring, generateKey, type Keyring } from '../../src/core/keys.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { Store } from '../../src/store/store.js'
import { craft, decode, highSTwin, P256_N, signer, sOf } from '../helpers/jwt.js'

const TTL = 15 * 60_000
const TOLERANCE = 5_000

async function setup(t: Test, alg: 'ES256' | 'RS256' = 'ES256'): Promise<{ store: Store; keyring: Keyring; tokens: AccessTokens; clock: { now: number } }> {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  const clock = { now: Date.now() }
  await store.ensureActiveKey(() => generateKey(alg, clock.now))
  const keyring = await createKeyring({ store, now: () => clock.now, verifyWindowMs: TTL + TOLERANCE })
  const tokens = createAccessTokens({ keyring, now: () => clock.now, issuer: 'authd', audience: 'authd', ttlMs: TTL, clockToleranceMs: TOLERANCE })
  return { store, keyring, tokens, clock }
}

const CLAIMS = { sub: 'user-1', email: 'ann@example.com', sid: 'session-1' }

t.test('signs a JWS with alg, kid and typ at+jwt, and the contract claims', async (t) => {
  for (const alg of ['ES256', 'RS256'] as const) {
    const { store, tokens, clock } = await setup(t, alg)
    const { token, expiresIn } = tokens.sign(CLAIMS)
    t.equal(expiresIn, 900)
    const { header, payload } = decode(token)
    t.same(header, { alg, kid: (await store.listKeys())[0]!.kid, typ: 'at+jwt' })
    const iat = Math.floor(clock.now / 1000)
    t.same(Object.keys(payload).sort(), ['aud', 'email', 'exp', 'iat', 'iss', 'jti', 'sid', 'sub'])
    t.match(payload, { iss: 'authd', aud: 'authd', ...CLAIMS, iat, exp: iat + 900 })
    t.match(payload.jti, /^[A-Za-z0-9_-]{16,}$/)
    t.same(tokens.verify(token), { ...CLAIMS, jti: payload.jti, iat, exp: iat + 900 })
  }
})

t.test('issues ES256 signatures only in low-S form (s <= n/2), so a token has one text', async (t) => {
  const { tokens } = await setup(t)
  const high = Array.from({ length: 200 }, () => decode(tokens.sign(CLAIMS).token).signature).filter((s) => sOf(s) > P256_N / 2n)
  t.equal(high.length, 0, 'no high-S signature among 200 tokens')
})

t.test('refuses the high-S twin (r, n - s) of a valid ES256 token', async (t) => {
  const { tokens } = await setup(t)
  for (let i = 0; i < 20; i++) {
    const { token } = tokens.sign(CLAIMS)
    const twin = highSTwin(token)
    t.not(twin, token)
    t.equal(tokens.verify(twin), null, 'the twin is refused')
    t.ok(tokens.verify(token), 'the token itself verifies')
    t.equal(tokens.verify(twin), null, 'and the twin is still refused once the token is remembered')
  }
})

t.test('gives every token its own jti', async (t) => {
  const { tokens } = await setup(t)
  const jtis = new Set(Array.from({ length: 50 }, () => decode(tokens.sign(CLAIMS).token).payload.jti))
  t.equal(jtis.size, 50)
})

t.test('accepts a token until exp plus the clock tolerance, then refuses it', async (t) => {
  const { tokens, clock } = await setup(t)
  const start = clock.now
  const { token } = tokens.sign(CLAIMS)
  clock.now = start + TTL + TOLERANCE - 1000
  t.ok(tokens.verify(token))
  clock.now = start + TTL + TOLERANCE + 1000
  t.equal(tokens.verify(token), null)
})

t.test('refuses a token issued in the future beyond the tolerance', async (t) => {
  const { tokens, clock } = await setup(t)
  const start = clock.now
  clock.now = start + 60_000
  const { token } = tokens.sign(CLAIMS)
  clock.now = start + 60_000 - TOLERANCE + 1000
  t.ok(tokens.verify(token), 'within tolerance')
  clock.now = start
  t.equal(tokens.verify(token), null)
})

t.test('keeps verifying tokens of a rotated-out key, and stops at once when it is revoked', async (t) => {
  const { store, keyring, tokens, clock } = await setup(t)
  const old = tokens.sign(CLAIMS).token
  const oldKid = decode(old).header.kid as string
  await store.rotateKey(generateKey('ES256', clock.now), clock.now)
  // what /me does on its turn (core/me-view.ts) and a login before it signs
  t.equal(await keyring.refresh(), true, 'the keys version moved: loaded again')
  const fresh = tokens.sign(CLAIMS).token
  t.not(decode(fresh).header.kid, oldKid, 'the new key signs')
  t.ok(tokens.verify(old), 'the retiring key still verifies')
  t.ok(tokens.verify(fresh))
  t.ok(await store.deleteKey(oldKid))
  await keyring.refresh()
  t.equal(tokens.verify(old), null, 'revoked: refused on the very next call')
  t.ok(tokens.verify(fresh))
})

t.test('refuses a token whose every header or payload character is changed, one at a time', async (t) => {
  const { tokens } = await setup(t)
  const { token } = tokens.sign(CLAIMS)
  const signed = token.lastIndexOf('.')
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  let accepted = 0
  for (let i = 0; i < signed; i++) {
    if (token[i] === '.') continue
    const other = alphabet[(alphabet.indexOf(token[i]!) + 17) % 64]!
    if (tokens.verify(token.slice(0, i) + other + token.slice(i + 1)) !== null) accepted++
  }
  t.equal(accepted, 0)
})

t.test('answers null, never throwing, for arbitrary input', async (t) => {
  const { tokens } = await setup(t)
  const { token } = tokens.sign(CLAIMS)
  const [h, p] = token.split('.')
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 300 }), fc.base64String().map((s) => `${h}.${p}.${s.replace(/=/g, '')}`)), (s) => tokens.verify(s) === null),
    { numRuns: 2000 },
  )
  t.equal(tokens.verify(''), null)
  t.equal(tokens.verify('..'), null)
  t.equal(tokens.verify(`${h}.${p}.`), null)
})

t.test('refuses a token of ours, validly signed, that is longer than 4096 characters or whose jti is missing or not a string', async (t) => {
  const { store, tokens, clock } = await setup(t)
  const key = (await store.listKeys()).find((k) => k.state === 'active')!
  const header = { alg: key.alg, kid: key.kid, typ: 'at+jwt' }
  const iat = Math.floor(clock.now / 1000)
  const claims = { iss: 'authd', aud: 'authd', ...CLAIMS, jti: 'j-1', iat, exp: iat + TTL / 1000 }
  const good = craft(header, claims, signer(key))
  t.ok(tokens.verify(good), 'the same token, crafted here, is accepted: only what differs refuses the others')
  // padded to just over the bound with a claim of its own: still a valid signature over all of it
  const filler = 'x'.repeat(4096)
  const long = craft(header, { ...claims, pad: filler }, signer(key))
  t.ok(long.length > 4096 && long.length < 6000)
  t.equal(tokens.verify(long), null, `${long.length} characters`)
  const shortPad = craft(header, { ...claims, pad: 'x'.repeat(2000) }, signer(key))
  t.ok(shortPad.length <= 4096 && tokens.verify(shortPad), 'a padded token within the bound is accepted (the bound, not the claim, refuses the long one)')
  const { jti: _jti, ...noJti } = claims
  t.equal(tokens.verify(craft(header, noJti, signer(key))), null, 'no jti')
  t.equal(tokens.verify(craft(header, { ...claims, jti: 7 }, signer(key))), null, 'a jti that is a number')
})
