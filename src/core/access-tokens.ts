/**
 * Access tokens: short-lived JWS (ES256 or RS256) with typ "at+jwt". Verification returns null for
 * every bad token, whatever the reason, so no reason can leak and no library error becomes a 500.
 *
 * jsonwebtoken signs, and verifies the signature with the algorithm pinned to the key named by
 * kid (a KeyObject built once: keys.ts) and the registered claims (iss, aud, exp and nbf with the
 * clock tolerance). On top of it we check what it does not: typ, no crit, one text per token
 * (canonical base64url, low-S ES256), exp and iat present, iat not in the future, exp within the
 * TTL. A token that passed twice in a while is remembered in a bounded cache keyed by its exact
 * text, so a token presented again skips the signature and the decoding, and nothing else: see
 * verify().
 */
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import type * as Jsonwebtoken from 'jsonwebtoken'
import type { Keyring, LoadedKey } from './keys.js'

export interface AccessClaims {
  sub: string
  email: string
  sid: string
  jti: string
  iat: number
  exp: number
}

export interface AccessTokens {
  /**
   * `amr` (RFC 8176): how the session's user proved who they are, e.g. `["pwd"]` or
   * `["pwd","otp","mfa"]`; every token of a session carries the session's (README, "Second factor").
   */
  sign(claims: { sub: string; email: string; sid: string; amr?: readonly string[] }): { token: string; expiresIn: number }
  /**
   * The token's claims if it is one of ours, signed by a key the keyring holds now and timely;
   * else null. The keyring is as its last sync left it: /me syncs it first (core/me-view.ts).
   */
  verify(token: string): AccessClaims | null
  /** how many verified tokens are remembered now (at most VERIFIED_TOKENS_CACHED) */
  readonly cached: number
}

/** the part of jsonwebtoken used here */
export type Jwt = Pick<typeof Jsonwebtoken, 'sign' | 'verify'>

const require = createRequire(import.meta.url)
/**
 * jsonwebtoken, loaded when first needed (node keeps it once loaded). Loading it is a sixth of
 * the daemon's start-up, so authd loads it right after its listening line, before it reads any
 * request (daemon/main.ts); authctl never does.
 */
export const loadJwt = (): Jwt => require('jsonwebtoken') as Jwt

// Anything longer is not one of ours; refuse before decoding (a kid of 8 KB, say).
const MAX_TOKEN_LENGTH = 4096
/** compact JWS: three non-empty base64url segments */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/

/**
 * Verified tokens remembered at most (under 1 KB each): the tokens of that many clients active
 * within one access-token lifetime. Past it the oldest is forgotten; a forgotten token is simply
 * verified again.
 */
export const VERIFIED_TOKENS_CACHED = 4096

/**
 * A token is remembered from its second full verification, not its first: a token presented once
 * (a client seen once, a stream of distinct tokens) costs no entry, so it neither pushes out the
 * tokens of the clients that call often nor leaves a kilobyte to the garbage collector. What was
 * verified once is marked by a number taken from its signature, in two generations of this many
 * marks: a token verified again within the last 4 096 to 8 192 full verifications is remembered.
 * A mark is only a hint (two tokens may share one, and then the second is remembered at once):
 * what is remembered is keyed, and found, by the token's exact text.
 */
export const SEEN_MARKS = 4096

interface Verified {
  /** the key that verified the signature: the entry is good only while that key still verifies */
  key: LoadedKey
  claims: AccessClaims
  /** the token's nbf, or -Infinity */
  nbf: number
}

const parseSegment = (segment: string): unknown => {
  try {
    return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
/**
 * Whether `s` (base64url characters only, no padding) is the one spelling of the bytes it
 * decodes to: base64url leaves spare bits in the last character (and a lone last character
 * holds no whole byte), so several texts decode to the same bytes; the canonical one has them
 * all zero. Decided from the text alone, with no decode and re-encode.
 */
function canonicalBase64url(s: string): boolean {
  const rest = s.length % 4
  if (rest === 1) return false
  if (rest === 0) return true
  // 2 characters carry 1 byte and 4 spare bits, 3 characters 2 bytes and 2 spare bits
  const spare = rest === 2 ? 0x0f : 0x03
  return (B64URL.indexOf(s[s.length - 1]!) & spare) === 0
}

/** Protected headers seen lately (every token of one key has the same), parsed once each */
const HEADERS_KEPT = 64

/** the order n of P-256, and n/2: an ECDSA signature (r, s) verifies as (r, n - s) too */
const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n
const P256_HALF_N = P256_N >> 1n
/** an ES256 signature is r||s, 64 bytes (RFC 7518 3.4): 86 base64url characters */
const ES256_SIGNATURE_CHARS = 86

/**
 * A token's mark (SEEN_MARKS): a 30-bit number from the first characters of its signature segment
 * (random for ES256's r and for RS256 alike), FNV-1a over 8 characters, no allocation. A small
 * integer, so a Set of them holds no objects.
 */
export function markOf(token: string): number {
  const start = token.lastIndexOf('.') + 1
  let h = 0x811c9dc5
  for (let i = start; i < start + 8; i++) h = Math.imul(h ^ token.charCodeAt(i), 0x01000193)
  return h & 0x3fffffff
}

const sOf = (signature: Buffer): bigint => BigInt(`0x${signature.subarray(32, 64).toString('hex')}`)
/** n/2 as 32 big-endian bytes: s is low when its bytes compare at most equal */
const P256_HALF_N_BYTES = Buffer.from(P256_HALF_N.toString(16).padStart(64, '0'), 'hex')
/** whether the s of an r||s signature (64 bytes) is above n/2, compared as bytes (no BigInt per check) */
const highS = (signature: Buffer): boolean => signature.compare(P256_HALF_N_BYTES, 0, 32, 32, 64) > 0

/**
 * The ES256 token in low-S form (s ≤ n/2). ECDSA's (r, n − s) is as valid as (r, s), and
 * jsonwebtoken (node's ECDSA) issues either, so without this every token had a high-S twin of
 * another text that verified too (a second "exactly this token" for caches, deny-lists and
 * replay logs): we issue and accept low-S only.
 */
function lowS(token: string): string {
  const dot = token.lastIndexOf('.')
  const signature = Buffer.from(token.slice(dot + 1), 'base64url')
  if (!highS(signature)) return token
  const low = Buffer.from((P256_N - sOf(signature)).toString(16).padStart(64, '0'), 'hex')
  return `${token.slice(0, dot + 1)}${Buffer.concat([signature.subarray(0, 32), low]).toString('base64url')}`
}

export function createAccessTokens(deps: {
  keyring: Keyring
  now: () => number
  issuer: string
  audience: string
  ttlMs: number
  clockToleranceMs: number
}): AccessTokens {
  const ttlS = Math.floor(deps.ttlMs / 1000)
  const toleranceS = Math.ceil(deps.clockToleranceMs / 1000)
  let jwt: Jwt | undefined
  const verified = new Map<string, Verified>()
  // the marks of tokens verified once lately (SEEN_MARKS): this generation's, and the one before
  let seen = new Set<number>()
  let seenBefore = new Set<number>()
  /** whether a token just verified was verified once before in a while; marks it otherwise */
  const seenAgain = (token: string): boolean => {
    const mark = markOf(token)
    if (seen.has(mark) || seenBefore.has(mark)) return true
    if (seen.size >= SEEN_MARKS) {
      const emptied = seenBefore
      emptied.clear()
      seenBefore = seen
      seen = emptied
    }
    seen.add(mark)
    return false
  }
  // the header segment's text → its object (undefined: not a JSON object); bounded, emptied when full
  const headers = new Map<string, Record<string, unknown> | undefined>()
  const headerOf = (segment: string): Record<string, unknown> | undefined => {
    if (headers.has(segment)) return headers.get(segment)
    const parsed = parseSegment(segment)
    const header = isObject(parsed) ? parsed : undefined
    if (headers.size >= HEADERS_KEPT) headers.clear()
    // only small ones are kept: an attacker's 4 KB header is parsed each time, as before
    if (segment.length <= 256) headers.set(segment, header)
    return header
  }

  // exp with the tolerance (expired once now >= exp + tolerance, as jsonwebtoken counts), nbf,
  // and iat not in the future: the clock may have moved either way since the token was cached
  const timely = (v: Verified, nowS: number): boolean =>
    nowS < v.claims.exp + toleranceS && v.claims.iat <= nowS + toleranceS && v.nbf <= nowS + toleranceS

  /** the payload if jsonwebtoken verifies the token with `key`, else undefined; never throws */
  function verifiedPayload(token: string, key: LoadedKey, nowS: number): unknown {
    try {
      // the algorithm is pinned to the key named by kid: no "none", no HS256 with a public key
      return (jwt ??= loadJwt()).verify(token, key.publicKey, {
        algorithms: [key.alg],
        issuer: deps.issuer,
        audience: deps.audience,
        clockTolerance: toleranceS,
        clockTimestamp: nowS,
      })
    } catch {
      // every refusal is a bad token, never a 500: jsonwebtoken throws its own errors, and can
      // throw a plain TypeError (a malformed ES256 signature, say)
      return undefined
    }
  }

  function verifyFully(token: string, nowS: number): Verified | null {
    if (token.length > MAX_TOKEN_LENGTH || !COMPACT_JWS.test(token)) return null
    const dot = token.lastIndexOf('.')
    const s = token.slice(dot + 1)
    // base64url leaves spare bits in the last character: several spellings decode to the same
    // signature. Only the one we issue is accepted, so a token has exactly one text.
    if (!canonicalBase64url(s)) return null
    const header = headerOf(token.slice(0, token.indexOf('.')))
    if (header === undefined) return null
    const { alg, kid, typ, crit } = header
    // RFC 7515 4.1.11: a critical extension we do not implement (we implement none) must be refused
    if (crit !== undefined) return null
    // typ is checked so that an ID token or other JWS of ours is not accepted (jsonwebtoken ignores it)
    if (typ !== 'at+jwt' || typeof kid !== 'string') return null
    const key = deps.keyring.verifying(kid)
    // the algorithm is pinned to the key named by kid (and again in jsonwebtoken's options)
    if (key === undefined || alg !== key.alg) return null
    // ES256: r||s only, and its low-S form only (the high-S twin verifies under plain ECDSA)
    if (key.alg === 'ES256' && (s.length !== ES256_SIGNATURE_CHARS || highS(Buffer.from(s, 'base64url')))) return null
    const c = verifiedPayload(token, key, nowS)
    if (!isObject(c)) return null
    // ours always carry exp and iat (jsonwebtoken accepts a token without exp), exp within the TTL
    if (typeof c.exp !== 'number' || typeof c.iat !== 'number' || c.exp - c.iat > ttlS) return null
    if (typeof c.sub !== 'string' || typeof c.sid !== 'string' || typeof c.email !== 'string' || typeof c.jti !== 'string') return null
    const v: Verified = {
      key,
      claims: Object.freeze({ sub: c.sub, email: c.email, sid: c.sid, jti: c.jti, iat: c.iat, exp: c.exp }),
      nbf: typeof c.nbf === 'number' ? c.nbf : -Infinity,
    }
    // iat not in the future (jsonwebtoken has checked exp and nbf already)
    return timely(v, nowS) ? v : null
  }

  return {
    sign(claims) {
      const key = deps.keyring.signing()
      const iat = Math.floor(deps.now() / 1000)
      const payload = { iss: deps.issuer, aud: deps.audience, ...claims, jti: randomBytes(12).toString('base64url'), iat, exp: iat + ttlS }
      // the header is {"alg","typ","kid"}, in that order
      const token = (jwt ??= loadJwt()).sign(payload, key.privateKey!, { algorithm: key.alg, keyid: key.kid, header: { alg: key.alg, typ: 'at+jwt' } })
      return { token: key.alg === 'ES256' ? lowS(token) : token, expiresIn: ttlS }
    },

    verify(token) {
      const nowS = Math.floor(deps.now() / 1000)
      const hit = verified.get(token)
      if (hit !== undefined) {
        // A remembered token skips only the signature and the decoding: the time checks run on
        // every call, and the key must still be the very one that verified it. Any change to the
        // keys (revoked, rotated, a retiring key run out) rebuilds the keyring, and then nothing
        // remembered is trusted: the cache is emptied and this token is verified afresh.
        if (deps.keyring.verifying(hit.key.kid) === hit.key) {
          if (timely(hit, nowS)) return hit.claims
          verified.delete(token)
          return null
        }
        verified.clear()
      }
      const fresh = verifyFully(token, nowS)
      if (fresh === null) return null
      if (!seenAgain(token)) return fresh.claims
      if (verified.size >= VERIFIED_TOKENS_CACHED) verified.delete(verified.keys().next().value!)
      verified.set(token, fresh)
      return fresh.claims
    },

    get cached() {
      return verified.size
    },
  }
}
