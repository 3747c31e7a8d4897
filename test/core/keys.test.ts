/**
 * Signing keys over a real LMDB store: key generation, effective state, the keyring the daemon
 * signs and verifies with, and the JWKS, including changes made to the store behind its back
 * (as authctl does from another process) taking effect without a restart.
 */
import { createPrivateKey, createPublicKey } from 'node:crypto'
import t from 'tap'
import { createKeyring, generateKey, keyStates } from '../../src/core/keys.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { settleKeys, type KeyRecord, type Store } from '../../src/store/store.js'
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
  const state = (key: KeyRecord, now: number) => keyStates([key], now, WINDOW)[0]!.state
  t.equal(state(k, 10_000 + WINDOW), 'retiring')
  t.equal(state(k, 10_001 + WINDOW), 'retired')
  t.equal(keyStates([k], 10_001 + WINDOW, WINDOW)[0]!.retiredAt, 10_000 + WINDOW, 'retired when its last token expired')
  t.equal(state({ ...k, state: 'active', retiringAt: null }, 1e15), 'active')
})

/** a key made at `at` that is next until `from` */
const nextKey = (at: number, from: number): KeyRecord => ({ ...generateKey('ES256', at), state: 'next', activatedAt: from })

t.test('a next key signs from its activation time, and the key it replaces is retiring from that moment', async (t) => {
  const old = generateKey('ES256', 0)
  const next = nextKey(1000, 1000 + 300_000)
  const at = (now: number) => keyStates([old, next], now, WINDOW).map((k) => [k.state, k.retiringAt])
  t.same(at(1000), [['active', null], ['next', null]])
  t.same(at(300_999), [['active', null], ['next', null]], 'not a millisecond early')
  t.same(at(301_000), [['retiring', 301_000], ['active', null]])
  t.same(at(301_000 + WINDOW), [['retiring', 301_000], ['active', null]], 'the old key verifies its last tokens')
  t.same(at(301_001 + WINDOW), [['retired', 301_000], ['active', null]])
  // exactly one key signs at every moment, whatever the order the store lists them in
  for (const now of [0, 300_999, 301_000, 1e12]) {
    for (const keys of [[old, next], [next, old]]) t.equal(keyStates(keys, now, WINDOW).filter((k) => k.state === 'active').length, 1, `at ${now}`)
  }
})

t.test('a transition recorded half-way (one key written, not the other) still derives the same states', async (t) => {
  const old = generateKey('ES256', 0)
  const next = nextKey(0, 5000)
  const derived = settleKeys([old, next], 6000)
  const [oldAfter, nextAfter] = derived
  t.same([oldAfter!.state, oldAfter!.retiringAt, nextAfter!.state], ['retiring', 5000, 'active'])
  t.same(settleKeys([oldAfter!, next], 6000), derived, 'only the old key recorded')
  t.same(settleKeys([old, nextAfter!], 6000), derived, 'only the new key recorded')
  t.same(settleKeys(derived, 6000), derived, 'both recorded: nothing changes')
})

t.test('signs with the active key and publishes only public parts in the JWKS', async (t) => {
  const store = await openStore(t)
  const first = await store.ensureActiveKey(() => generateKey('ES256', Date.now()))
  const ring = await createKeyring({ store, now: Date.now, verifyWindowMs: WINDOW })
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

t.test('publishes a rotated key in the JWKS on the next refresh (the JWKS route and every /me turn refresh it)', async (t) => {
  const store = await openStore(t)
  const first = await store.ensureActiveKey(() => generateKey('ES256', Date.now()))
  const ring = await createKeyring({ store, now: Date.now, verifyWindowMs: WINDOW })
  t.same(
    ring.jwks().keys.map((k) => k.kid),
    [first.kid],
  )
  const second = generateKey('ES256', Date.now())
  await store.rotateKey(second, Date.now())
  t.equal(await ring.refresh(), true, 'the keys version moved')
  t.equal(await ring.refresh(), false, 'and not again')
  t.same(
    ring.jwks().keys.map((k) => k.kid).sort(),
    [first.kid, second.kid].sort(),
    'the JWKS lists the new key as soon as the store has it',
  )
  t.equal(ring.signing().kid, second.kid, 'the new key signs')
  t.equal(ring.verifying(first.kid)?.state, 'retiring', 'the old one still verifies')
})

t.test('drops a revoked key from verification and the JWKS on the next refresh', async (t) => {
  const store = await openStore(t)
  const first = await store.ensureActiveKey(() => generateKey('ES256', Date.now()))
  const ring = await createKeyring({ store, now: Date.now, verifyWindowMs: WINDOW })
  const second = generateKey('ES256', Date.now())
  await store.rotateKey(second, Date.now())
  await ring.refresh()
  t.equal(ring.jwks().keys.length, 2)
  t.ok(await store.deleteKey(first.kid))
  t.equal(ring.verifying(first.kid)?.kid, first.kid, 'until then the keys are as loaded')
  await ring.refresh()
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
  const ring = await createKeyring({ store, now: () => now, verifyWindowMs: WINDOW })
  const second = generateKey('ES256', now)
  await store.rotateKey(second, now)
  await ring.refresh()
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
  const ring = await createKeyring({ store: a, now: Date.now, verifyWindowMs: WINDOW })
  t.equal(ring.signing().kid, first.kid)
  const b = await openLmdbStore({ path: dir })
  t.teardown(() => b.close())
  const second = generateKey('RS256', Date.now())
  await b.rotateKey(second, Date.now())
  // as the daemon's next request would: lmdb renews a's read snapshot within a millisecond
  await new Promise((resolve) => setTimeout(resolve, 5))
  await ring.refresh()
  t.equal(ring.signing().kid, second.kid)
  t.equal(ring.signing().alg, 'RS256')
})

t.test('a key rotated in with a lead is in the JWKS before it signs, then signs by itself once the lead has passed', async (t) => {
  const store = await openStore(t)
  let now = Date.UTC(2026, 0, 1)
  const first = await store.ensureActiveKey(() => generateKey('ES256', now))
  const ring = await createKeyring({ store, now: () => now, verifyWindowMs: WINDOW })
  t.equal(ring.signing().kid, first.kid)
  const stored = await store.rotateKey(nextKey(now, now + 300_000), now)
  await ring.refresh()
  t.equal(stored.state, 'next')
  t.same(ring.jwks().keys.map((k) => k.kid).sort(), [first.kid, stored.kid].sort(), 'published at once')
  t.equal(ring.signing().kid, first.kid, 'the old key still signs')
  t.equal(ring.verifying(stored.kid)?.state, 'next')
  now += 299_999
  t.equal(ring.signing().kid, first.kid, 'until the lead has passed')
  const version = await store.keysVersion()
  now += 1
  t.equal(ring.signing().kid, stored.kid, 'then the new key signs, with no write to the store')
  t.equal(await store.keysVersion(), version)
  t.equal(ring.verifying(first.kid)?.state, 'retiring', 'the old key verifies its tokens')
  now += WINDOW + 1
  t.same(ring.jwks().keys.map((k) => k.kid), [stored.kid], 'and retires once they have expired')
})

t.test('two daemons on one store agree, at every moment, on which key signs', async (t) => {
  const dir = t.testdir()
  const a = await openLmdbStore({ path: dir })
  t.teardown(() => a.close())
  const b = await openLmdbStore({ path: dir })
  t.teardown(() => b.close())
  let now = Date.UTC(2026, 0, 1)
  await a.ensureActiveKey(() => generateKey('ES256', now))
  const ringA = await createKeyring({ store: a, now: () => now, verifyWindowMs: WINDOW })
  const ringB = await createKeyring({ store: b, now: () => now, verifyWindowMs: WINDOW })
  const next = await a.rotateKey(nextKey(now, now + 60_000), now)
  await new Promise((resolve) => setTimeout(resolve, 5))
  await Promise.all([ringA.refresh(), ringB.refresh()])
  for (const step of [0, 59_999, 1, 1, WINDOW]) {
    now += step
    t.equal(ringA.signing().kid, ringB.signing().kid, `at +${step}`)
  }
  t.equal(ringA.signing().kid, next.kid)
})

t.test('a rotation replaces a key still next; with no key signing, a next key is active at once', async (t) => {
  const store = await openStore(t)
  const now = Date.UTC(2026, 0, 1)
  const lone = await store.rotateKey(nextKey(now, now + 300_000), now)
  t.equal(lone.state, 'active', 'no key signed: the new one signs at once')
  t.equal(lone.activatedAt, now)
  const pending = await store.rotateKey(nextKey(now, now + 300_000), now)
  const again = await store.rotateKey(nextKey(now + 10, now + 300_010), now + 10)
  t.equal(await store.getKey(pending.kid), undefined, 'the key still next is replaced (it never signed)')
  t.equal((await store.getKey(again.kid))?.state, 'next')
  const immediate = await store.rotateKey(generateKey('ES256', now + 20), now + 20)
  t.equal(await store.getKey(again.kid), undefined, 'an immediate rotation replaces it too')
  t.same(keyStates(await store.listKeys(), now + 20, WINDOW).map((k) => [k.kid, k.state]).sort(), [[lone.kid, 'retiring'], [immediate.kid, 'active']].sort())
})
