/**
 * The mfaToken a login answers with when the user's second factor is on (docs/api.md, "Second
 * factor"): proof that the password of this user was checked just now, good for one second step
 * within MFA_TOKEN_TTL_MS. It is signed, not stored: HMAC-SHA256 under a key kept in the store
 * (so every process on the store accepts it), over the user id, a fingerprint of the password
 * hash that was checked (a password changed since voids it), the issue time and a random id. That
 * a token was used is recorded in the store by its id (Store.finishMfaStep), so every process
 * agrees it was.
 *
 * Value: base64url("<userId>.<issuedAt ms>.<id>.<fingerprint>") "." base64url(HMAC).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

export const MFA_TOKEN_TTL_MS = 5 * 60_000

export interface MfaTicket {
  /** 128 random bits, base64url: what the store records once the token is used */
  id: string
  userId: string
  issuedAt: number
  /** issuedAt + MFA_TOKEN_TTL_MS */
  expiresAt: number
  /** passwordFingerprint of the hash the password was checked against */
  fingerprint: string
}

export interface MfaTokens {
  issue(userId: string, passwordHash: string): { token: string; expiresIn: number }
  /** what a token says, or null when it does not verify or has expired */
  verify(token: string): MfaTicket | null
}

/** A new key for mfaTokens (32 random bytes, base64url), for the store to keep. */
export const newMfaKey = (): string => randomBytes(32).toString('base64url')

/** A short digest of a password hash: binds a token to the password it was issued for. */
export const passwordFingerprint = (passwordHash: string): string =>
  createHash('sha256').update(passwordHash).digest().toString('base64url', 0, 16)

// far longer than any token we issue: not read at all
const MAX_TOKEN = 512
const MAC_BYTES = 32
const PAYLOAD = /^([A-Za-z0-9_-]{1,128})\.(\d{1,15})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{22})$/

/** the clock may be this far behind the issuing process's */
const SKEW_MS = 5_000

export function createMfaTokens(key: string, now: () => number): MfaTokens {
  const secret = Buffer.from(key, 'base64url')
  const mac = (payload: string): Buffer => createHmac('sha256', secret).update(`authd mfa token\0${payload}`).digest()
  return {
    issue(userId, passwordHash) {
      const payload = `${userId}.${now()}.${randomBytes(16).toString('base64url')}.${passwordFingerprint(passwordHash)}`
      return { token: `${Buffer.from(payload).toString('base64url')}.${mac(payload).toString('base64url')}`, expiresIn: MFA_TOKEN_TTL_MS / 1000 }
    },
    verify(token) {
      const dot = token.length > MAX_TOKEN ? -1 : token.indexOf('.')
      if (dot === -1) return null
      const payload = Buffer.from(token.slice(0, dot), 'base64url').toString('utf8')
      const given = Buffer.from(token.slice(dot + 1), 'base64url')
      // constant-time: the comparison must not tell a forger how much of the MAC was right
      if (given.length !== MAC_BYTES || !timingSafeEqual(given, mac(payload))) return null
      // one text per token: base64url decoding skips what is not of its alphabet (a `=`, a BOM, a
      // second dot), so a copy altered that way decodes the same and is refused here
      if (token !== `${Buffer.from(payload).toString('base64url')}.${given.toString('base64url')}`) return null
      const m = PAYLOAD.exec(payload)
      if (m === null) return null
      const issuedAt = Number(m[2])
      const t = now()
      if (issuedAt > t + SKEW_MS || t >= issuedAt + MFA_TOKEN_TTL_MS) return null
      return { userId: m[1]!, issuedAt, expiresAt: issuedAt + MFA_TOKEN_TTL_MS, id: m[3]!, fingerprint: m[4]! }
    },
  }
}
