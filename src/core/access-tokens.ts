/**
 * Access tokens: short-lived JWS (ES256 or RS256) with typ "at+jwt". Verification returns null for
 * every bad token, whatever the reason, so no reason can leak and no library error becomes a 500.
 */
import jwt from 'jsonwebtoken'
import { randomBytes } from 'node:crypto'
import type { Keyring } from './keys.js'

export interface AccessClaims {
  sub: string
  email: string
  sid: string
  jti: string
  iat: number
  exp: number
}

export interface AccessTokens {
  sign(claims: { sub: string; email: string; sid: string }): { token: string; expiresIn: number }
  verify(token: string): AccessClaims | null
}

// Anything longer is not one of ours; refuse before decoding (a kid of 8 KB, say).
const MAX_TOKEN_LENGTH = 4096
const B64URL = /^[A-Za-z0-9_-]+$/

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

  return {
    sign(claims) {
      const key = deps.keyring.signing()
      const iat = Math.floor(deps.now() / 1000)
      const payload = { iss: deps.issuer, aud: deps.audience, ...claims, jti: randomBytes(12).toString('base64url'), iat, exp: iat + ttlS }
      const token = jwt.sign(payload, key.privateKey!, {
        algorithm: key.alg,
        header: { alg: key.alg, kid: key.kid, typ: 'at+jwt' },
      })
      return { token, expiresIn: ttlS }
    },

    verify(token) {
      if (token.length > MAX_TOKEN_LENGTH) return null
      const parts = token.split('.')
      if (parts.length !== 3 || !B64URL.test(parts[0]!) || !B64URL.test(parts[1]!) || !B64URL.test(parts[2]!)) return null
      // base64url leaves spare bits in the last character: several spellings decode to the same
      // signature. Only the one we issue is accepted, so a token has exactly one text.
      if (Buffer.from(parts[2]!, 'base64url').toString('base64url') !== parts[2]) return null
      let header: unknown
      try {
        header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8'))
      } catch {
        return null
      }
      if (typeof header !== 'object' || header === null) return null
      const { alg, kid, typ, crit } = header as Record<string, unknown>
      // RFC 7515 4.1.11: a critical extension we do not implement (we implement none) must be refused
      if (crit !== undefined) return null
      // jsonwebtoken ignores typ: check it, so an ID token or other JWS of ours is not accepted
      if (typ !== 'at+jwt' || typeof kid !== 'string' || typeof alg !== 'string') return null
      const key = deps.keyring.verifying(kid)
      // the algorithm is pinned to the key named by kid: no "none", no HS256 with a public key
      if (key === undefined || alg !== key.alg) return null
      const nowS = Math.floor(deps.now() / 1000)
      let payload: unknown
      try {
        payload = jwt.verify(token, key.publicKey, {
          algorithms: [key.alg],
          issuer: deps.issuer,
          audience: deps.audience,
          clockTolerance: toleranceS,
          clockTimestamp: nowS,
        })
      } catch {
        // includes the plain TypeError jsonwebtoken throws for some malformed ES256 signatures
        return null
      }
      if (typeof payload !== 'object' || payload === null) return null
      const c = payload as Record<string, unknown>
      // jsonwebtoken accepts a token without exp: ours always have one, within the configured TTL
      if (typeof c.exp !== 'number' || typeof c.iat !== 'number') return null
      if (c.iat > nowS + toleranceS || c.exp - c.iat > ttlS) return null
      if (typeof c.sub !== 'string' || typeof c.sid !== 'string' || typeof c.email !== 'string' || typeof c.jti !== 'string') return null
      return { sub: c.sub, email: c.email, sid: c.sid, jti: c.jti, iat: c.iat, exp: c.exp }
    },
  }
}
