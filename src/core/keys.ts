/**
 * Signing keys: creation, the keyring the daemon signs and verifies with, and the JWKS.
 * KeyObjects are built once per key: jsonwebtoken re-parses PEM strings on every call.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject, type JsonWebKey } from 'node:crypto'
import type { Algorithm } from '../config/types.js'
import { settleKeys, type KeyRecord, type KeyState, type Store } from '../store/store.js'

export function generateKey(alg: Algorithm, now: number): KeyRecord {
  const pair =
    alg === 'ES256'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : generateKeyPairSync('rsa', { modulusLength: 2048 })
  return {
    kid: randomBytes(12).toString('base64url'),
    alg,
    state: 'active',
    privateKeyPem: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    publicKeyPem: pair.publicKey.export({ type: 'spki', format: 'pem' }) as string,
    createdAt: now,
    activatedAt: now,
    retiringAt: null,
    retiredAt: null,
  }
}

/**
 * The keys as they really stand at `now`, derived from their stored times (so every process
 * agrees without writing): a `next` key whose time has come is active and the key it superseded
 * retiring from that moment (settleKeys); a retiring key whose every token has expired (it
 * stopped signing more than one access-token lifetime, plus leeway, ago) is retired.
 */
export function keyStates(keys: readonly KeyRecord[], now: number, verifyWindowMs: number): KeyRecord[] {
  return settleKeys(keys, now).map((k) =>
    k.state === 'retiring' && k.retiringAt !== null && now > k.retiringAt + verifyWindowMs
      ? { ...k, state: 'retired', retiredAt: k.retiredAt ?? k.retiringAt + verifyWindowMs }
      : k,
  )
}

/** The next moment at which `keyStates` would answer differently for these keys, or Infinity. */
export function nextKeyChange(keys: readonly KeyRecord[], verifyWindowMs: number): number {
  let at = Infinity
  for (const k of keys) {
    if (k.state === 'next' && k.activatedAt !== null) at = Math.min(at, k.activatedAt)
    // retired from the first millisecond past its window
    if (k.state === 'retiring' && k.retiringAt !== null) at = Math.min(at, k.retiringAt + verifyWindowMs + 1)
  }
  return at
}

export interface LoadedKey {
  kid: string
  alg: Algorithm
  state: KeyState
  privateKey: KeyObject | null
  publicKey: KeyObject
  jwk: JsonWebKey & { kid: string; alg: Algorithm; use: 'sig' }
}

export interface Keyring {
  /** the key that signs now */
  signing(): LoadedKey
  /**
   * A key that may verify tokens now (active or retiring, or next: it is published already, and
   * another instance may start signing with it a moment before this one), or undefined. `changes` is the
   * store's change counter if the caller has just read it (see reload).
   */
  verifying(kid: string, changes?: number): LoadedKey | undefined
  /** the public keys that verify current tokens, and those of keys about to sign (next) */
  jwks(): { keys: LoadedKey['jwk'][] }
  /**
   * Re-reads the store if its keys changed (cheap when they did not): one read of the store's
   * change counter, none when the caller passes it in, and the keys version only when that
   * counter moved.
   */
  reload(changes?: number): boolean
}

/**
 * Builds the daemon's keyring over the store. It checks the store's keys version on every use,
 * so keys rotated or revoked by authctl take effect on the next request, without a restart.
 */
export function createKeyring(deps: { store: Store; now: () => number; verifyWindowMs: number }): Keyring {
  let version = -1
  // the store's change counter when the keys version was last read
  let seenChanges = -1
  let byKid = new Map<string, LoadedKey>()
  let active: LoadedKey | undefined
  let jwks: { keys: LoadedKey['jwk'][] } = { keys: [] }
  // the earliest moment a key changes state by time alone (next → active, retiring → retired)
  let nextChange = Infinity

  const load = (): void => {
    const now = deps.now()
    const next = new Map<string, LoadedKey>()
    let nextActive: LoadedKey | undefined
    const states = keyStates(deps.store.listKeys(), now, deps.verifyWindowMs)
    // the moment a next key starts signing or a retiring key retires: state is re-derived then
    nextChange = nextKeyChange(states, deps.verifyWindowMs)
    for (const rec of states) {
      const state = rec.state
      if (state === 'retired') continue
      const reuse = byKid.get(rec.kid)
      const publicKey = reuse?.publicKey ?? createPublicKey(rec.publicKeyPem)
      const loaded: LoadedKey = {
        kid: rec.kid,
        alg: rec.alg,
        state,
        privateKey: state === 'active' ? (reuse?.privateKey ?? createPrivateKey(rec.privateKeyPem)) : null,
        publicKey,
        jwk: { ...publicKey.export({ format: 'jwk' }), kid: rec.kid, alg: rec.alg, use: 'sig' },
      }
      next.set(rec.kid, loaded)
      // keyStates leaves exactly one key active (the latest activated)
      if (state === 'active') nextActive = loaded
    }
    byKid = next
    active = nextActive
    jwks = { keys: [...next.values()].map((k) => k.jwk) }
  }

  const ring: Keyring = {
    signing() {
      ring.reload()
      if (active === undefined) throw new Error('no active signing key')
      return active
    },
    verifying(kid, changes) {
      // the store's change counter checked on every call (given by the caller, or one cheap read),
      // so a key revoked by authctl is refused on the very next request
      ring.reload(changes)
      return byKid.get(kid)
    },
    jwks() {
      // re-read like signing/verifying do: a key rotated or revoked by authctl shows at once
      ring.reload()
      return jwks
    },
    reload(changes = deps.store.changes()) {
      const now = deps.now()
      if (changes === seenChanges && now < nextChange) return false
      seenChanges = changes
      const v = deps.store.keysVersion()
      if (v === version && now < nextChange) return false
      version = v
      load()
      return true
    },
  }
  ring.reload()
  return ring
}
