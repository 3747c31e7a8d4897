/**
 * Signing keys: creation, the keyring the daemon signs and verifies with, and the JWKS.
 * KeyObjects are built once per key: jsonwebtoken re-parses PEM strings on every call.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject, type JsonWebKey } from 'node:crypto'
import type { Algorithm } from '../config/types.js'
import type { KeyRecord, KeyState, Store } from '../store/store.js'

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
 * The state a key is really in at `now`: a retiring key whose every token has expired (it
 * stopped signing more than one access-token lifetime, plus leeway, ago) is retired.
 */
export function effectiveState(key: KeyRecord, now: number, verifyWindowMs: number): KeyState {
  if (key.state === 'retiring' && key.retiringAt !== null && now > key.retiringAt + verifyWindowMs) return 'retired'
  return key.state
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
   * A key that may verify tokens now (active or retiring), or undefined. `changes` is the
   * store's change counter if the caller has just read it (see reload).
   */
  verifying(kid: string, changes?: number): LoadedKey | undefined
  /** the public keys that verify current tokens */
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
  // the earliest moment a retiring key turns retired: state is re-derived then
  let nextChange = Infinity

  const load = (): void => {
    const now = deps.now()
    const next = new Map<string, LoadedKey>()
    let nextActive: LoadedKey | undefined
    let activatedAt = -Infinity
    nextChange = Infinity
    for (const rec of deps.store.listKeys()) {
      const state = effectiveState(rec, now, deps.verifyWindowMs)
      if (state === 'retired') continue
      if (state === 'retiring' && rec.retiringAt !== null) nextChange = Math.min(nextChange, rec.retiringAt + deps.verifyWindowMs)
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
      // one key is active at a time; were there ever two, the latest activated signs
      if (state === 'active' && (nextActive === undefined || (rec.activatedAt ?? 0) > activatedAt)) {
        nextActive = loaded
        activatedAt = rec.activatedAt ?? 0
      }
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
      if (changes === seenChanges && now <= nextChange) return false
      seenChanges = changes
      const v = deps.store.keysVersion()
      if (v === version && now <= nextChange) return false
      version = v
      load()
      return true
    },
  }
  ring.reload()
  return ring
}
