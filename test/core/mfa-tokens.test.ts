/**
 * The mfaToken of a login with a second factor (core/mfa-tokens.ts): signed, not stored; bound to
 * the user and the password hash checked; good for MFA_TOKEN_TTL_MS; anything else verifies to null.
 */
import t from 'tap'
import { createMfaTokens, MFA_TOKEN_TTL_MS, newMfaKey, passwordFingerprint } from '../../src/core/mfa-tokens.js'

const T0 = Date.UTC(2025, 4, 1)

t.test('a token verifies to its user, issue time, expiry, id and the fingerprint of the password hash', async (t) => {
  const tokens = createMfaTokens(newMfaKey(), () => T0)
  const { token, expiresIn } = tokens.issue('user-1', '$argon2id$hash-a')
  t.equal(expiresIn, MFA_TOKEN_TTL_MS / 1000)
  const ticket = tokens.verify(token)
  t.match(ticket, { userId: 'user-1', issuedAt: T0, expiresAt: T0 + MFA_TOKEN_TTL_MS, fingerprint: passwordFingerprint('$argon2id$hash-a') })
  t.match(ticket!.id, /^[A-Za-z0-9_-]{22}$/)
  t.not(tokens.verify(tokens.issue('user-1', '$argon2id$hash-a').token)!.id, ticket!.id, 'each token has its own id')
  t.not(passwordFingerprint('$argon2id$hash-b'), ticket!.fingerprint, 'another hash, another fingerprint')
})

t.test('valid from a little before its issue time until the TTL has run out', async (t) => {
  let now = T0
  const tokens = createMfaTokens(newMfaKey(), () => now)
  const { token } = tokens.issue('user-1', 'h')
  now = T0 + MFA_TOKEN_TTL_MS - 1
  t.ok(tokens.verify(token), 'just before expiry')
  now = T0 + MFA_TOKEN_TTL_MS
  t.equal(tokens.verify(token), null, 'at expiry')
  now = T0 - 5_000
  t.ok(tokens.verify(token), 'a clock 5 s behind the issuer')
  now = T0 - 5_001
  t.equal(tokens.verify(token), null, 'further behind: issued in the future')
})

t.test('a token of another key, a changed payload or MAC, and junk verify to null', async (t) => {
  const key = newMfaKey()
  const tokens = createMfaTokens(key, () => T0)
  const { token } = tokens.issue('user-1', 'h')
  const [payload, mac] = token.split('.') as [string, string]
  t.equal(createMfaTokens(newMfaKey(), () => T0).verify(token), null, 'another key')
  const other = Buffer.from(Buffer.from(payload, 'base64url').toString('utf8').replace('user-1', 'user-2')).toString('base64url')
  t.equal(tokens.verify(`${other}.${mac}`), null, 'another user under the same MAC')
  t.equal(tokens.verify(`${payload}.${mac.slice(0, -2)}`), null, 'a short MAC')
  // a character in the middle (the last one carries two unused bits)
  t.equal(tokens.verify(`${payload}.${mac.slice(0, 10)}${mac[10] === 'A' ? 'B' : 'A'}${mac.slice(11)}`), null, 'a changed MAC')
  for (const junk of ['', '.', 'abc', `${payload}.`, `.${mac}`, `${payload}.${mac}.x`, 'x'.repeat(600)]) t.equal(tokens.verify(junk), null, JSON.stringify(junk.slice(0, 20)))
})

t.test('one text per token: copies that decode the same (a `=`, a BOM, a second dot) verify to null', async (t) => {
  const tokens = createMfaTokens(newMfaKey(), () => T0)
  const { token } = tokens.issue('user-1', 'h')
  t.ok(tokens.verify(token), 'the token as issued')
  for (const altered of [`${token}=`, `\ufeff${token}`, token.replace('.', '..'), `${token.slice(0, 10)}=${token.slice(10)}`, ` ${token}`, token.replace('.', '.\n')]) {
    t.equal(tokens.verify(altered), null, JSON.stringify(altered.slice(0, 12)))
  }
})
