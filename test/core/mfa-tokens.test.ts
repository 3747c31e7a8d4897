/**
 * The mfaToken of a login with a second factor (core/mfa-tokens.ts): signed, not stored; bound to
 * the user, the password hash checked and the factor; good for MFA_TOKEN_TTL_MS; anything else
 * verifies to null.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { createMfaTokens, MFA_TOKEN_TTL_MS, newMfaKey } from '../../src/core/mfa-tokens.js'

const T0 = Date.UTC(2025, 4, 1)

t.test('a token verifies to its user, issue time, expiry and id, and is bound to the password hash and the factor', async (t) => {
  const tokens = createMfaTokens(newMfaKey(), () => T0)
  const { token, expiresIn } = tokens.issue('user-1', '$argon2id$hash-a', 'SECRETA')
  t.equal(expiresIn, MFA_TOKEN_TTL_MS / 1000)
  const ticket = tokens.verify(token)!
  t.match(ticket, { userId: 'user-1', issuedAt: T0, expiresAt: T0 + MFA_TOKEN_TTL_MS })
  t.match(ticket.id, /^[A-Za-z0-9_-]{22}$/)
  t.not(tokens.verify(tokens.issue('user-1', '$argon2id$hash-a', 'SECRETA').token)!.id, ticket.id, 'each token has its own id')
  t.ok(tokens.binds(ticket, '$argon2id$hash-a', 'SECRETA'), 'the hash and the factor it was issued for')
  t.notOk(tokens.binds(ticket, '$argon2id$hash-b', 'SECRETA'), 'a password changed since')
  t.notOk(tokens.binds(ticket, '$argon2id$hash-a', 'SECRETB'), 'a factor reset and set up again since')
  t.notOk(createMfaTokens(newMfaKey(), () => T0).binds(ticket, '$argon2id$hash-a', 'SECRETA'), 'under another key')
})

t.test('a token tells nothing of the password hash: no digest of it, and no part the same in two tokens', async (t) => {
  const tokens = createMfaTokens(newMfaKey(), () => T0)
  const hash = '$argon2id$hash-a'
  const payloads = [1, 2].map(() => Buffer.from(tokens.issue('user-1', hash, 'SECRETA').token.split('.')[0]!, 'base64url').toString('utf8'))
  const digests = ['sha256', 'sha1', 'md5'].flatMap((alg) => {
    const d = createHash(alg).update(hash).digest()
    return [d.toString('base64url'), d.toString('hex'), d.toString('base64url', 0, 16)]
  })
  for (const p of payloads) for (const d of digests) t.notOk(p.includes(d), `no digest of the hash (${d.slice(0, 8)}…)`)
  t.not(payloads[0]!.split('.')[3], payloads[1]!.split('.')[3], "each token's binding differs")
})

t.test('valid from a little before its issue time until the TTL has run out', async (t) => {
  let now = T0
  const tokens = createMfaTokens(newMfaKey(), () => now)
  const { token } = tokens.issue('user-1', 'h', 'S')
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
  const { token } = tokens.issue('user-1', 'h', 'S')
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
  const { token } = tokens.issue('user-1', 'h', 'S')
  t.ok(tokens.verify(token), 'the token as issued')
  for (const altered of [`${token}=`, `\ufeff${token}`, token.replace('.', '..'), `${token.slice(0, 10)}=${token.slice(10)}`, ` ${token}`, token.replace('.', '.\n')]) {
    t.equal(tokens.verify(altered), null, JSON.stringify(altered.slice(0, 12)))
  }
})
