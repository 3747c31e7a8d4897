/**
 * The cache of verified access tokens: a token verified twice in a while is remembered, and then
 * skips only the signature and the decoding. Its time checks still run on every call, it is
 * forgotten as soon as the keys change (a key revoked, rotated, or run out), the cache never holds
 * more than its bound, and tokens presented once do not push out the remembered ones.
 */
import t, { type Test } from 'tap'
import { createAccessTokens, markOf, SEEN_MARKS, VERIFIED_TOKENS_CACHED, type AccessTokens } from '../../src/core/access-tokens.js'
import { createKeyring, generateKey, type Keyring } from '../../src/core/keys.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { Store } from '../../src/store/store.js'
import { b64url, craft, decode, signer } from '../helpers/jwt.js'

const TTL = 15 * 60_000
const TOLERANCE = 5_000
const CLAIMS = { sub: 'user-1', email: 'ann@example.com', sid: 'session-1' }

interface Setup {
  dir: string
  store: Store
  keyring: Keyring
  tokens: AccessTokens
  clock: { now: number }
}

async function setup(t: Test, alg: 'ES256' | 'RS256' = 'ES256'): Promise<Setup> {
  const dir = t.testdir()
  const store = await openLmdbStore({ path: dir })
  t.teardown(() => store.close())
  const clock = { now: Date.now() }
  await store.ensureActiveKey(() => generateKey(alg, clock.now))
  const keyring = await createKeyring({ store, now: () => clock.now, verifyWindowMs: TTL + TOLERANCE })
  const tokens = createAccessTokens({ keyring, now: () => clock.now, issuer: 'authd', audience: 'authd', ttlMs: TTL, clockToleranceMs: TOLERANCE })
  return { dir, store, keyring, tokens, clock }
}

/**
 * `n` new tokens whose marks are all different, and different from those in `used` (which gains
 * theirs). Two tokens may share a mark (30 bits of the signature), and then the second is
 * remembered at its first verification: among the 8 000 or so tokens of a test that happens in
 * about one run of 30, so the tests that count remembered tokens use tokens whose marks differ.
 */
function distinctTokens(tokens: AccessTokens, n: number, used: Set<number>): string[] {
  const out: string[] = []
  for (let i = 0; out.length < n; i++) {
    const token = tokens.sign({ ...CLAIMS, sid: `s${i}` }).token
    const mark = markOf(token)
    if (used.has(mark)) continue
    used.add(mark)
    out.push(token)
  }
  return out
}

/** verifies the token twice (the second time remembers it) and checks that it is remembered now */
function remember(t: Test, tokens: AccessTokens, token: string): void {
  const before = tokens.cached
  t.ok(tokens.verify(token), 'verified')
  t.ok(tokens.verify(token), 'verified again, and remembered')
  t.equal(tokens.cached, before + 1, 'one more token remembered')
}

t.test('remembers a token verified a second time, and answers the same claims from the cache', async (t) => {
  for (const alg of ['ES256', 'RS256'] as const) {
    const { tokens } = await setup(t, alg)
    const { token } = tokens.sign(CLAIMS)
    t.equal(tokens.cached, 0)
    const first = tokens.verify(token)
    t.match(first, CLAIMS)
    t.equal(tokens.cached, 0, 'not remembered when verified once')
    t.same(tokens.verify(token), first, 'verified again')
    t.equal(tokens.cached, 1, 'remembered the second time')
    t.same(tokens.verify(token), first, 'the same claims from the cache')
    t.equal(tokens.cached, 1)
  }
})

t.test('tokens presented once do not push out the remembered ones', async (t) => {
  const { tokens } = await setup(t)
  const hot = tokens.sign(CLAIMS).token
  remember(t, tokens, hot)
  // twice the cache's bound of tokens, each verified once: before, each was remembered at once
  for (const token of distinctTokens(tokens, 2 * VERIFIED_TOKENS_CACHED, new Set([markOf(hot)]))) {
    if (tokens.verify(token) === null) throw new Error('a fresh token did not verify')
  }
  t.equal(tokens.cached, 1, 'only the token verified twice is remembered')
  t.match(tokens.verify(hot), CLAIMS, 'and it still is')
  t.equal(tokens.cached, 1)
})

t.test(`remembers a token verified again within ${SEEN_MARKS} to ${2 * SEEN_MARKS} full verifications, not later`, async (t) => {
  const { tokens } = await setup(t)
  const [soon, late, ...others] = distinctTokens(tokens, 2 + 2 * SEEN_MARKS, new Set()) as [string, string, ...string[]]
  t.ok(tokens.verify(late))
  t.ok(tokens.verify(soon))
  // the others fill the generation that marked both, and begin the next
  for (const token of others.slice(0, SEEN_MARKS)) tokens.verify(token)
  t.ok(tokens.verify(soon))
  t.equal(tokens.cached, 1, 'verified again one generation on: remembered')
  // a second generation past `late`'s mark: it is forgotten
  for (const token of others.slice(SEEN_MARKS)) tokens.verify(token)
  t.ok(tokens.verify(late))
  t.equal(tokens.cached, 1, 'verified again two generations on: not remembered')
  t.ok(tokens.verify(late))
  t.equal(tokens.cached, 2, 'remembered at its next verification')
})

t.test('never remembers a token that failed, so a failure is checked afresh every time', async (t) => {
  const { tokens } = await setup(t)
  const { token } = tokens.sign(CLAIMS)
  const [h, p] = token.split('.')
  t.equal(tokens.verify(`${h}.${p}.${'A'.repeat(86)}`), null)
  t.equal(tokens.verify(`${token}x`), null)
  t.equal(tokens.cached, 0)
})

t.test('refuses a cached token once it expires, allowing the clock tolerance', async (t) => {
  const { tokens, clock } = await setup(t)
  const start = clock.now
  const { token } = tokens.sign(CLAIMS)
  remember(t, tokens, token)
  clock.now = start + TTL + TOLERANCE - 1000
  t.ok(tokens.verify(token), 'cached, still within the tolerance')
  clock.now = start + TTL + TOLERANCE + 1000
  t.equal(tokens.verify(token), null, 'cached, but expired')
  t.equal(tokens.cached, 0, 'and forgotten')
})

t.test('refuses a cached token whose iat is in the future again after the clock stepped back', async (t) => {
  const { tokens, clock } = await setup(t)
  const start = clock.now
  const { token } = tokens.sign(CLAIMS)
  remember(t, tokens, token)
  clock.now = start - 60_000
  t.equal(tokens.verify(token), null, 'issued a minute from now, beyond the tolerance')
  clock.now = start
  t.ok(tokens.verify(token), 'and good again once the clock is back')
})

t.test('checks nbf of a cached token on every call', async (t) => {
  const { store, tokens, clock } = await setup(t)
  const key = (await store.listKeys())[0]!
  const nowS = Math.floor(clock.now / 1000)
  const token = craft({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' }, { iss: 'authd', aud: 'authd', ...CLAIMS, jti: 'j', iat: nowS, exp: nowS + 900, nbf: nowS }, signer(key))
  remember(t, tokens, token)
  clock.now -= 60_000
  t.equal(tokens.verify(token), null, 'not valid yet at the earlier time')
})

t.test('refuses a cached token on the very next call once its key is revoked by another handle (as authctl does)', async (t) => {
  const { dir, store, keyring, tokens, clock } = await setup(t)
  const old = tokens.sign(CLAIMS).token
  const oldKid = decode(old).header.kid as string
  // authctl works on the same data directory from another process
  const admin = await openLmdbStore({ path: dir })
  t.teardown(() => admin.close())
  await admin.rotateKey(generateKey('ES256', clock.now), clock.now)
  // the keys version as the next /me's turn reads it (core/me-view.ts)
  await keyring.refresh()
  const fresh = tokens.sign(CLAIMS).token
  t.ok(tokens.verify(old), 'the retiring key still verifies')
  t.ok(tokens.verify(old), 'and remembers it')
  t.ok(tokens.verify(old), 'from the cache')
  t.equal(tokens.cached, 1)
  t.ok(tokens.verify(fresh))
  t.ok(await admin.deleteKey(oldKid))
  // lmdb renews this handle's read snapshot within a millisecond of its last read (a timer): the
  // daemon's next request runs after that (see test/store/decoded-cache.test.ts)
  await new Promise((resolve) => setTimeout(resolve, 5))
  t.equal(await keyring.refresh(), true, 'the next turn sees the keys version move')
  t.equal(tokens.verify(old), null, 'revoked: refused on the very next call')
  t.equal(tokens.verify(old), null, 'and after')
  t.ok(tokens.verify(fresh), 'tokens of the other key still verify')
  t.ok(await store.getKey(oldKid) === undefined)
})

t.test('forgets every cached token when the keys change, and verifies them afresh', async (t) => {
  const { store, keyring, tokens, clock } = await setup(t)
  const a = tokens.sign(CLAIMS).token
  const b = tokens.sign({ ...CLAIMS, sid: 'session-2' }).token
  remember(t, tokens, a)
  remember(t, tokens, b)
  t.equal(tokens.cached, 2)
  await store.rotateKey(generateKey('ES256', clock.now), clock.now)
  await keyring.refresh()
  t.ok(tokens.verify(a), 'still valid under the retiring key, verified again')
  t.equal(tokens.cached, 1, 'the cache was emptied, then this token remembered again')
})

t.test('refuses a cached token once its retiring key has run out', async (t) => {
  const { store, keyring, tokens, clock } = await setup(t)
  const start = clock.now
  const old = tokens.sign(CLAIMS).token
  await store.rotateKey(generateKey('ES256', clock.now), clock.now)
  await keyring.refresh()
  remember(t, tokens, old)
  // past the verify window of the retiring key (its last token's lifetime plus the tolerance)
  clock.now = start + TTL + TOLERANCE + 1
  t.equal(tokens.verify(old), null)
})

t.test(`remembers at most ${VERIFIED_TOKENS_CACHED} tokens, forgetting the oldest first`, async (t) => {
  const { tokens } = await setup(t)
  const first = tokens.sign(CLAIMS).token
  remember(t, tokens, first)
  for (let i = 0; i < VERIFIED_TOKENS_CACHED; i++) {
    const token = tokens.sign({ ...CLAIMS, sid: `s${i}` }).token
    if (tokens.verify(token) === null || tokens.verify(token) === null) throw new Error('a fresh token did not verify')
  }
  t.equal(tokens.cached, VERIFIED_TOKENS_CACHED, 'bounded')
  t.ok(tokens.verify(first), 'the forgotten first token is verified again')
  t.equal(tokens.cached, VERIFIED_TOKENS_CACHED)
})

t.test('does not mix up tokens that differ only in the payload or the signature', async (t) => {
  const { store, tokens, clock } = await setup(t)
  const key = (await store.listKeys())[0]!
  const nowS = Math.floor(clock.now / 1000)
  const header = { alg: 'ES256', kid: key.kid, typ: 'at+jwt' }
  const payload = { iss: 'authd', aud: 'authd', ...CLAIMS, jti: 'j', iat: nowS, exp: nowS + 900 }
  const good = craft(header, payload, signer(key))
  remember(t, tokens, good)
  const [h, , s] = good.split('.')
  t.equal(tokens.verify(`${h}.${b64url({ ...payload, sub: 'user-2' })}.${s}`), null, 'another payload under the cached signature')
  const other = craft(header, payload, signer(key))
  t.not(other, good, 'ECDSA signatures differ each time')
  t.match(tokens.verify(other), CLAIMS, 'a second valid signature verifies on its own')
})
