/**
 * The mfaToken a login answers with when the user's second factor is on (docs/api.md, "Second
 * factor"): proof that the password of this user was checked just now, good for one second step
 * within MFA_TOKEN_TTL_MS. It is signed, not stored: HMAC-SHA256 under a key kept in the store
 * (so every process on the store accepts it), over the user id, the issue time, a random id and
 * a binding: an HMAC under the same key of that id, the password hash that was checked and the
 * factor's secret. A password changed or a factor reset since (even one set up again) voids it;
 * the binding tells nothing of either without the key, and differs from token to token. That a
 * token was used is recorded in the store by its id (Store.finishMfaStep), so every process
 * agrees it was.
 *
 * Value: base64url("<userId>.<issuedAt ms>.<id>.<binding>") "." base64url(HMAC).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

export const MFA_TOKEN_TTL_MS = 5 * 60_000

export interface MfaTicket {
  /** 128 random bits, base64url: what the store records once the token is used */
  id: string
  userId: string
  issuedAt: number
  /** issuedAt + MFA_TOKEN_TTL_MS */
  expiresAt: number
  /** what binds it to the password hash checked and the factor it was issued for (see binds) */
  binding: string
}

export interface MfaTokens {
  /** a token for `userId`, whose password was checked against `passwordHash`, and whose factor has `factorSecret` */
  issue(userId: string, passwordHash: string, factorSecret: string): { token: string; expiresIn: number }
  /** what a token says, or null when it does not verify or has expired */
  verify(token: string): MfaTicket | null
  /** whether a ticket was issued for this password hash and this factor (both unchanged since) */
  binds(ticket: MfaTicket, passwordHash: string, factorSecret: string): boolean
}

/** A new key for mfaTokens (32 random bytes, base64url), for the store to keep. */
export const newMfaKey = (): string => randomBytes(32).toString('base64url')

// far longer than any token we issue: not read at all
const MAX_TOKEN = 512
const MAC_BYTES = 32
const PAYLOAD = /^([A-Za-z0-9_-]{1,128})\.(\d{1,15})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{22})$/

/** the clock may be this far behind the issuing process's */
const SKEW_MS = 5_000

export function createMfaTokens(key: string, now: () => number): MfaTokens {
  const secret = Buffer.from(key, 'base64url')
  const mac = (payload: string): Buffer => createHmac('sha256', secret).update(`authd mfa token\0${payload}`).digest()
  const binding = (id: string, passwordHash: string, factorSecret: string): Buffer =>
    createHmac('sha256', secret).update(`authd mfa binding\0${id}\0${passwordHash}\0${factorSecret}`).digest().subarray(0, 16)
  return {
    issue(userId, passwordHash, factorSecret) {
      const id = randomBytes(16).toString('base64url')
      const payload = `${userId}.${now()}.${id}.${binding(id, passwordHash, factorSecret).toString('base64url')}`
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
      return { userId: m[1]!, issuedAt, expiresAt: issuedAt + MFA_TOKEN_TTL_MS, id: m[3]!, binding: m[4]! }
    },
    binds(ticket, passwordHash, factorSecret) {
      const given = Buffer.from(ticket.binding, 'base64url')
      const expected = binding(ticket.id, passwordHash, factorSecret)
      return given.length === expected.length && timingSafeEqual(given, expected)
    },
  }
}
