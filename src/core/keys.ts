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
   * another instance may start signing with it a moment before this one), or undefined. From the
   * keys as last loaded (see sync), their states derived again whenever time alone changes them.
   */
  verifying(kid: string): LoadedKey | undefined
  /** the public keys that verify current tokens, and those of keys about to sign (next) */
  jwks(): { keys: LoadedKey['jwk'][] }
  /**
   * Loads the keys again when `keysVersion` (the store's, as the caller has just read it: /me's
   * one read per turn, core/me-view.ts) is not the one loaded; resolves to whether it did. `at`:
   * when that read began (the keys are the store's as of then), now by default.
   */
  sync(keysVersion: number, at?: number): Promise<boolean>
  /**
   * Reads the store's keys version and syncs (before signing, and for the JWKS). Calls made while
   * a read is under way share it: a flood of JWKS requests is one read at a time.
   */
  refresh(): Promise<boolean>
  /** the keys version loaded */
  readonly version: number
  /** increases whenever the keys in use change (loaded again, or a state changed by time) */
  readonly generation: number
  /**
   * when the keys held were last known to be the store's (the start of the last read of its keys
   * version that found them so, or loaded them): how stale they may be when the store cannot be
   * read (-Infinity before any)
   */
  readonly confirmedAt: number
}

/**
 * Builds the daemon's keyring over the store, loaded. It holds the keys as of the store's keys
 * version it last saw: whoever reads that version (me-view on every turn with a /me, refresh()
 * before a token is signed) hands it in, so keys rotated or revoked by authctl take effect on the
 * next request, without a restart.
 */
export async function createKeyring(deps: { store: Store; now: () => number; verifyWindowMs: number }): Promise<Keyring> {
  let version = -1
  let generation = 0
  let records: KeyRecord[] = []
  let byKid = new Map<string, LoadedKey>()
  let active: LoadedKey | undefined
  let jwks: { keys: LoadedKey['jwk'][] } = { keys: [] }
  // the earliest moment a key changes state by time alone (next → active, retiring → retired)
  let nextChange = Infinity
  // loads started, and the last one applied: an older load finishing late is not applied
  let started = 0
  let applied = 0
  let loading: { version: number; promise: Promise<boolean> } | undefined
  let refreshing: Promise<boolean> | undefined
  let confirmedAt = -Infinity

  /** the keys in use, from `records` as they stand now */
  const build = (): void => {
    const now = deps.now()
    const next = new Map<string, LoadedKey>()
    let nextActive: LoadedKey | undefined
    const states = keyStates(records, now, deps.verifyWindowMs)
    // the moment a next key starts signing or a retiring key retires: state is derived again then
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
    generation++
  }
  /** derives the states again once time alone has changed one */
  const current = (): void => {
    if (nextChange !== Infinity && deps.now() >= nextChange) build()
  }

  const ring: Keyring = {
    signing() {
      current()
      if (active === undefined) throw new Error('no active signing key')
      return active
    },
    verifying(kid) {
      current()
      return byKid.get(kid)
    },
    jwks() {
      current()
      return jwks
    },
    sync(keysVersion, at = deps.now()) {
      if (keysVersion === version) {
        confirmedAt = Math.max(confirmedAt, at)
        return Promise.resolve(false)
      }
      if (loading !== undefined && loading.version === keysVersion) return loading.promise
      const seq = ++started
      const promise = deps.store.listKeys().then((keys) => {
        if (seq < applied) return false
        applied = seq
        records = keys
        version = keysVersion
        confirmedAt = Math.max(confirmedAt, at)
        build()
        return true
      })
      loading = { version: keysVersion, promise }
      const done = (): void => {
        if (loading?.promise === promise) loading = undefined
      }
      promise.then(done, done)
      return promise
    },
    refresh() {
      const at = deps.now()
      refreshing ??= deps.store
        .keysVersion()
        .then((v) => ring.sync(v, at))
        .finally(() => {
          refreshing = undefined
        })
      return refreshing
    },
    get version() {
      return version
    },
    get generation() {
      return generation
    },
    get confirmedAt() {
      return confirmedAt
    },
  }
  await ring.refresh()
  return ring
}
