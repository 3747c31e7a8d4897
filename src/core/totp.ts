/**
 * The second factor's arithmetic (docs/api.md, "Second factor"): TOTP secrets, the otpauth URL an
 * authenticator app reads, code checks, and recovery codes. RFC 6238 with SHA-1, 6 digits and
 * 30-second steps; the step before and after the current one are accepted too (a phone's clock a
 * little off, a code typed as it changed). HOTP and base32 come from `otpauth`: no hand-written
 * HMAC truncation here.
 */
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto'
import { HOTP, Secret } from 'otpauth'

export const TOTP_PERIOD_S = 30
export const TOTP_DIGITS = 6
/** steps either side of the current one that are accepted */
export const TOTP_WINDOW = 1
export const RECOVERY_CODE_COUNT = 10

/** A new TOTP secret: 160 random bits (RFC 4226's recommended length), base32 without padding. */
export function newTotpSecret(): string {
  return new Secret({ buffer: randomBytes(20).buffer }).base32
}

/**
 * `otpauth://totp/<issuer>:<email>?secret=…&issuer=<issuer>&algorithm=SHA1&digits=6&period=30`,
 * built by hand: the parameters in this order, issuer and email each encodeURIComponent-ed.
 * (otpauth's own URI writer orders the parameters differently.)
 */
export function otpauthUrl(issuer: string, email: string, secret: string): string {
  const i = encodeURIComponent(issuer)
  return `otpauth://totp/${i}:${encodeURIComponent(email)}?secret=${secret}&issuer=${i}&algorithm=SHA1&digits=${TOTP_DIGITS}&period=${TOTP_PERIOD_S}`
}

/** The TOTP time step of `nowMs`. */
export const stepAt = (nowMs: number): number => Math.floor(nowMs / 1000 / TOTP_PERIOD_S)

/** The code of `step` for `secret` (base32): what an authenticator app shows during that step. */
export function codeAt(secret: string, step: number): string {
  return HOTP.generate({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: TOTP_DIGITS, counter: step })
}

const CODE = /^\d{6}$/

/**
 * The step whose code `code` is, among the current step ±1 at `nowMs`, counting only steps after
 * `lastStep` (a step is accepted at most once per user: its code, once used, is refused); null if
 * none. Spaces in the code are ignored ("123 456", as some apps show it).
 */
export function matchTotp(secret: string, code: string, nowMs: number, lastStep: number): number | null {
  const given = code.replace(/ /g, '')
  // the same work for a malformed code: all three steps are computed and compared either way
  const input = Buffer.from(CODE.test(given) ? given : '------')
  const now = stepAt(nowMs)
  let found: number | null = null
  for (let step = now - TOTP_WINDOW; step <= now + TOTP_WINDOW; step++) {
    // constant-time, and every candidate compared: how long a check takes tells nothing about
    // how many digits were right, nor which step matched
    const same = timingSafeEqual(input, Buffer.from(codeAt(secret, step)))
    if (same && step > lastStep && found === null) found = step
  }
  return found
}

// RFC 4648 base32 in lower case (no 0, 1, 8, 9: nothing to confuse with O, l, B, g)
const RECOVERY_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'
const RECOVERY_CODE = /^[a-z2-7]{10}$/

/**
 * A new recovery code: 10 base32 characters (50 random bits, from the OS CSPRNG), shown as
 * `xxxxx-xxxxx`.
 */
export function newRecoveryCode(): string {
  let s = ''
  for (let i = 0; i < 10; i++) s += RECOVERY_ALPHABET[randomInt(32)]
  return `${s.slice(0, 5)}-${s.slice(5)}`
}

/** A recovery code as typed, in the form that is hashed: lower case, without spaces or hyphens; null if it cannot be one. */
export function normalRecoveryCode(code: string): string | null {
  const s = code.toLowerCase().replace(/[\s-]/g, '')
  return RECOVERY_CODE.test(s) ? s : null
}

/**
 * The stored form of a recovery code: SHA-256 over the user's id and the code. A fast hash is
 * enough here, unlike for passwords: the code is 50 random bits, not something a person chose,
 * so there is no dictionary to run, online guessing is held by rate_limit.mfa.per_user, and
 * whoever has the store has the TOTP secret (kept as it is, since codes are computed from it)
 * anyway. The hash keeps a usable code out of the store and its copies; the user id makes each
 * user's hashes their own.
 */
export function hashRecoveryCode(userId: string, code: string): string {
  return createHash('sha256').update(`authd recovery code\0${userId}\0${code}`).digest('base64url')
}

/** Ten new recovery codes: the codes (to show once) and their hashes (to store). */
export function newRecoveryCodes(userId: string): { codes: string[]; hashes: string[] } {
  const codes: string[] = []
  while (codes.length < RECOVERY_CODE_COUNT) {
    const c = newRecoveryCode()
    if (!codes.includes(c)) codes.push(c)
  }
  return { codes, hashes: codes.map((c) => hashRecoveryCode(userId, normalRecoveryCode(c)!)) }
}

/**
 * Which of `hashes` the recovery code `code` is (its index), or -1. Every stored hash is compared,
 * in constant time, whatever matched.
 */
export function matchRecoveryCode(userId: string, hashes: readonly string[], code: string): number {
  const normal = normalRecoveryCode(code)
  const given = Buffer.from(hashRecoveryCode(userId, normal ?? ''))
  let found = -1
  hashes.forEach((h, i) => {
    const stored = Buffer.from(h)
    if (stored.length === given.length && timingSafeEqual(stored, given) && normal !== null && found === -1) found = i
  })
  return found
}
