/**
 * Signing keys over a real LMDB store: key generation, effective state, the keyring the daemon
 * signs and verifies with, and the JWKS, including changes made to the store behind its back
 * (as authctl does from another process) taking effect without a restart.
 */
import { createPrivateKey, createPublicKey } from 'node:crypto'
import t from 'tap'
import { createKeyring, effectiveState, generateKey } from '../../src/core/keys.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { Store } from '../../src/store/store.js'
import type { Test } from 'tap'

const WINDOW = 15 * 60_000 + 5_000

async function openStore(t: Test): Promise<Store> {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  return store
}

t.test('generates ES256 and RS256 key pairs with an opaque kid', async (t) => {
  for (const alg of ['ES256', 'RS256'] as const) {
    const k = generateKey(alg, 1000)
    t.match(k.kid, /^[A-Za-z0-9_-]{16}$/)
    t.match(k, { alg, state: 'active', createdAt: 1000, activatedAt: 1000, retiringAt: null, retiredAt: null })
    t.equal(createPrivateKey(k.privateKeyPem).asymmetricKeyType, alg === 'ES256' ? 'ec' : 'rsa')
    t.equal(createPublicKey(k.publicKeyPem).asymmetricKeyType, alg === 'ES256' ? 'ec' : 'rsa')
    if (alg === 'ES256') t.equal(createPublicKey(k.publicKeyPem).asymmetricKeyDetails?.namedCurve, 'prime256v1')
    else t.equal(createPublicKey(k.publicKeyPem).asymmetricKeyDetails?.modulusLength, 2048)
  }
  t.not(generateKey('ES256', 0).kid, generateKey('ES256', 0).kid)
})

t.test('a retiring key turns retired once its last token has expired', async (t) => {
  const k = { ...generateKey('ES256', 0), state: 'retiring' as const, retiringAt: 10_000 }
  t.equal(effectiveState(k, 10_000 + WINDOW, WINDOW), 'retiring')
  t.equal(effectiveState(k, 10_001 + WINDOW, WINDOW), 'retired')
  t.equal(effectiveState({ ...k, state: 'active', retiringAt: null }, 1e15, WINDOW), 'active')
})

t.test('signs with the active key and publishes only public parts in the JWKS', async (t) => {
  const store = await openStore(t)
  const first = await store.ensureActiveKey(() => generateKey('ES256', Date.now()))
  const ring = createKeyring({ store, now: Date.now, verifyWindowMs: WINDOW })
  t.equal(ring.signing().kid, first.kid)
  t.equal(ring.verifying(first.kid)?.kid, first.kid)
  t.equal(ring.verifying('nope'), undefined)
  t.equal(ring.verifying('__proto__'), undefined)
  const jwks = ring.jwks()
  t.equal(jwks.keys.length, 1)
  const jwk = jwks.keys[0]!
  t.match(jwk, { kid: first.kid, alg: 'ES256', use: 'sig', kty: 'EC', crv: 'P-256' })
  t.notOk('d' in jwk, 'no private part')
  t.equal(createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' }), first.publicKeyPem)
})

t.test('publishes a rotated key in the JWKS at once, with no other keyring call in between', async (t) => {
  const store = await openStore(t)
  const first = await store.ensureActiveKey(() => generateKey('ES256', Date.now()))
  const ring = createKeyring({ store, now: Date.now, verifyWindowMs: WINDOW })
  t.same(
    ring.jwks().keys.map((k) => k.kid),
    [first.kid],
  )
  const second = generateKey('ES256', Date.now())
  await store.rotateKey(second, Date.now())
  t.same(
    ring.jwks().keys.map((k) => k.kid).sort(),
    [first.kid, second.kid].sort(),
    'the JWKS lists the new key as soon as the store has it',
  )
  t.equal(ring.signing().kid, second.kid, 'the new key signs')
  t.equal(ring.verifying(first.kid)?.state, 'retiring', 'the old one still verifies')
})

t.test('drops a revoked key from verification and the JWKS at once', async (t) => {
  const store = await openStore(t)
  const first = await store.ensureActiveKey(() => generateKey('ES256', Date.now()))
  const ring = createKeyring({ store, now: Date.now, verifyWindowMs: WINDOW })
  const second = generateKey('ES256', Date.now())
  await store.rotateKey(second, Date.now())
  t.equal(ring.jwks().keys.length, 2)
  t.ok(await store.deleteKey(first.kid))
  t.same(
    ring.jwks().keys.map((k) => k.kid),
    [second.kid],
    'the JWKS no longer lists the revoked key',
  )
  t.equal(ring.verifying(first.kid), undefined)
})

t.test('stops verifying with a retiring key, and drops it from the JWKS, once its tokens have expired', async (t) => {
  const store = await openStore(t)
  let now = Date.now()
  const first = await store.ensureActiveKey(() => generateKey('ES256', now))
  const ring = createKeyring({ store, now: () => now, verifyWindowMs: WINDOW })
  const second = generateKey('ES256', now)
  await store.rotateKey(second, now)
  now += WINDOW
  t.ok(ring.verifying(first.kid), 'still verifies at the edge of the window')
  t.equal(ring.jwks().keys.length, 2)
  now += 1
  t.same(
    ring.jwks().keys.map((k) => k.kid),
    [second.kid],
  )
  t.equal(ring.verifying(first.kid), undefined)
  t.equal(ring.signing().kid, second.kid)
})

t.test('picks up keys written by another handle on the same data directory', async (t) => {
  const dir = t.testdir()
  const a = await openLmdbStore({ path: dir })
  t.teardown(() => a.close())
  const first = await a.ensureActiveKey(() => generateKey('ES256', Date.now()))
  const ring = createKeyring({ store: a, now: Date.now, verifyWindowMs: WINDOW })
  t.equal(ring.signing().kid, first.kid)
  const b = await openLmdbStore({ path: dir })
  t.teardown(() => b.close())
  const second = generateKey('RS256', Date.now())
  await b.rotateKey(second, Date.now())
  // as the daemon's next request would: lmdb renews a's read snapshot within a millisecond
  await new Promise((resolve) => setTimeout(resolve, 5))
  t.equal(ring.signing().kid, second.kid)
  t.equal(ring.signing().alg, 'RS256')
})
