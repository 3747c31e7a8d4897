/**
 * The second factor's arithmetic: RFC 6238 codes (checked against the RFC's own vectors), the ±1
 * step window, a step accepted once, the otpauth URL, recovery codes and mfaTokens.
 */
import fc from 'fast-check'
import t from 'tap'
import { HOTP, Secret, TOTP } from 'otpauth'
import { createMfaTokens, MFA_TOKEN_TTL_MS, newMfaKey } from '../../src/core/mfa-tokens.js'
import {
  codeAt,
  hashRecoveryCode,
  matchRecoveryCode,
  matchTotp,
  newRecoveryCodes,
  newTotpSecret,
  normalRecoveryCode,
  otpauthUrl,
  stepAt,
} from '../../src/core/totp.js'

// RFC 6238 appendix B, SHA-1: the secret is the ASCII "12345678901234567890", codes truncated to 6 digits
const RFC_SECRET = new Secret({ buffer: new Uint8Array(Buffer.from('12345678901234567890')).buffer }).base32
const RFC_VECTORS: Array<[number, string]> = [
  [59, '287082'],
  [1111111109, '081804'],
  [1111111111, '050471'],
  [1234567890, '005924'],
  [2000000000, '279037'],
  [20000000000, '353130'],
]

t.test('codes match the RFC 6238 SHA-1 test vectors', async (t) => {
  for (const [seconds, code] of RFC_VECTORS) {
    t.equal(codeAt(RFC_SECRET, stepAt(seconds * 1000)), code, `T=${seconds}`)
    t.equal(matchTotp(RFC_SECRET, code, seconds * 1000, -1), stepAt(seconds * 1000))
  }
})

t.test('a new secret is 160 random bits in base32', async (t) => {
  const a = newTotpSecret()
  t.match(a, /^[A-Z2-7]{32}$/)
  t.equal(Secret.fromBase32(a).bytes.length, 20)
  t.not(newTotpSecret(), a)
})

t.test('the otpauth URL has its parameters in order, issuer and email encoded', async (t) => {
  t.equal(
    otpauthUrl('My Co & Sons', 'ann+x@bücher.example', 'JBSWY3DPEHPK3PXP'),
    'otpauth://totp/My%20Co%20%26%20Sons:ann%2Bx%40b%C3%BCcher.example?secret=JBSWY3DPEHPK3PXP&issuer=My%20Co%20%26%20Sons&algorithm=SHA1&digits=6&period=30',
  )
  // and an authenticator library reads it back as the same TOTP
  const otp = (await import('otpauth')).URI.parse(otpauthUrl('authd', 'a@b.example', 'JBSWY3DPEHPK3PXP')) as TOTP
  t.equal(otp.issuer, 'authd')
  t.equal(otp.label, 'a@b.example')
  t.equal(otp.secret.base32, 'JBSWY3DPEHPK3PXP')
  t.equal(otp.algorithm, 'SHA1')
  t.equal(otp.digits, 6)
  t.equal(otp.period, 30)
})

const secrets = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => new Secret({ buffer: new Uint8Array(b).buffer }).base32)
// steps from 1970 to past 2100
const steps = fc.integer({ min: 2, max: 140_000_000 })

t.test('property: the code of step t is accepted once within t±1, never outside it, never twice', async (t) => {
  fc.assert(
    fc.property(secrets, steps, fc.integer({ min: -1, max: 1 }), fc.integer({ min: 0, max: 29_999 }), (secret, step, offset, within) => {
      const code = codeAt(secret, step)
      const now = (step + offset) * 30_000 + within
      // what an independent implementation says the window holds: the first step of it with this code
      const expected = [step + offset - 1, step + offset, step + offset + 1].find((s) => HOTP.generate({ secret: Secret.fromBase32(secret), counter: s }) === code)
      const got = matchTotp(secret, code, now, -1)
      if (got === null || got !== expected) return false
      // accepted once: with the step recorded as the last one, the same code is refused
      return matchTotp(secret, code, now, got) === null
    }),
  )
  t.pass('accepted in the window, once')
})

t.test('property: a code is refused two or more steps away (unless another step in the window has the same code)', async (t) => {
  fc.assert(
    fc.property(secrets, steps, fc.integer({ min: 2, max: 100 }), fc.boolean(), (secret, step, distance, later) => {
      const code = codeAt(secret, step)
      const at = later ? step + distance : step - distance
      const s = Secret.fromBase32(secret)
      const collides = [at - 1, at, at + 1].some((x) => HOTP.generate({ secret: s, counter: x }) === code)
      return collides || matchTotp(secret, code, at * 30_000 + 15_000, -1) === null
    }),
  )
  t.pass('never outside the window')
})

t.test('a step at or before the last accepted one is refused', async (t) => {
  const secret = newTotpSecret()
  const now = 1_700_000_000_000
  const step = stepAt(now)
  t.equal(matchTotp(secret, codeAt(secret, step), now, step - 1), step)
  t.equal(matchTotp(secret, codeAt(secret, step), now, step), null)
  t.equal(matchTotp(secret, codeAt(secret, step - 1), now, step), null, 'an older code after a newer one')
  t.equal(matchTotp(secret, codeAt(secret, step + 1), now, step), step + 1, 'the next step still works')
})

t.test('malformed codes are refused, spaces are ignored', async (t) => {
  const secret = newTotpSecret()
  const now = 1_700_000_000_000
  const code = codeAt(secret, stepAt(now))
  t.equal(matchTotp(secret, `${code.slice(0, 3)} ${code.slice(3)}`, now, -1), stepAt(now))
  for (const bad of ['', '12345', '1234567', 'abcdef', `${code}0`, `+${code.slice(1)}`, '١٢٣٤٥٦']) t.equal(matchTotp(secret, bad, now, -1), null, JSON.stringify(bad))
})

t.test('recovery codes: ten distinct, 50 bits each, stored hashed, matched in any case and spacing', async (t) => {
  const { codes, hashes } = newRecoveryCodes('user-1')
  t.equal(codes.length, 10)
  t.equal(new Set(codes).size, 10)
  for (const c of codes) t.match(c, /^[a-z2-7]{5}-[a-z2-7]{5}$/)
  for (const h of hashes) t.notOk(codes.some((c) => h.includes(c.replace('-', ''))), 'no code inside its hash')
  t.equal(matchRecoveryCode('user-1', hashes, codes[3]!), 3)
  t.equal(matchRecoveryCode('user-1', hashes, codes[3]!.toUpperCase().replace('-', ' ')), 3)
  t.equal(matchRecoveryCode('user-2', hashes, codes[3]!), -1, 'the hash is bound to the user')
  t.equal(matchRecoveryCode('user-1', hashes, 'aaaaa-aaaaa'), -1)
  t.equal(matchRecoveryCode('user-1', hashes, ''), -1)
  t.equal(matchRecoveryCode('user-1', [hashRecoveryCode('user-1', '')], ''), -1, 'an empty code never matches')
  t.equal(normalRecoveryCode('ABCDE-FGHIJ'), 'abcdefghij')
  t.equal(normalRecoveryCode('abcde-fghi1'), null)
})

t.test('mfaTokens: verify what was issued until five minutes pass; refuse a forged, altered or foreign one', async (t) => {
  let now = 1_700_000_000_000
  const key = newMfaKey()
  const tokens = createMfaTokens(key, () => now)
  const { token, expiresIn } = tokens.issue('user-1', '$argon2id$hash', 'SECRET')
  t.equal(expiresIn, 300)
  const ticket = tokens.verify(token)
  t.match(ticket, { userId: 'user-1', issuedAt: now, expiresAt: now + MFA_TOKEN_TTL_MS })
  t.ok(tokens.binds(ticket!, '$argon2id$hash', 'SECRET'), 'bound to the hash and the factor')
  t.not(tokens.issue('user-1', '$argon2id$hash', 'SECRET').token, token, 'each token has its own id')
  t.equal(createMfaTokens(newMfaKey(), () => now).verify(token), null, 'another store key')
  const [payload, mac] = token.split('.') as [string, string]
  const forged = Buffer.from(Buffer.from(payload, 'base64url').toString().replace('user-1', 'user-2')).toString('base64url')
  t.equal(tokens.verify(`${forged}.${mac}`), null, 'another user')
  for (const bad of ['', '.', 'x', `${payload}.`, `${payload}.${mac}x`, `${token}.x`, 'a'.repeat(600)]) t.equal(tokens.verify(bad), null, bad.slice(0, 20))
  now += MFA_TOKEN_TTL_MS - 1
  t.ok(tokens.verify(token), 'still good just before five minutes')
  now += 1
  t.equal(tokens.verify(token), null, 'expired at five minutes')
})

t.test('the store records a used mfaToken and its user change in one transaction, once', async (t) => {
  const { openLmdbStore } = await import('../../src/store/lmdb-store.js')
  const dir = t.testdir()
  const [a, b] = await Promise.all([openLmdbStore({ path: dir }), openLmdbStore({ path: dir })])
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  const now = Date.now()
  await a.createUser({ id: 'u1', email: 'u1@example.com', passwordHash: 'h', createdAt: now, updatedAt: now, disabled: false, mfa: { secret: 'S', enabledAt: now, lastStep: 0, recoveryCodes: [] } })
  const token = { id: 'tok', expiresAt: now + 300_000 }
  // ten concurrent second steps with one token, from two handles: exactly one wins
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      (i % 2 === 0 ? a : b).finishMfaStep(token, 'u1', now, (user, used) =>
        used || user?.mfa === undefined ? { action: 'none', result: 'used' } : { action: 'use', user: { ...user, mfa: { ...user.mfa, lastStep: user.mfa.lastStep + 1 } }, result: 'won' },
      ),
    ),
  )
  t.equal(results.filter((r) => r === 'won').length, 1)
  t.equal((await a.getUser('u1'))!.mfa!.lastStep, 1)
  t.ok(await b.mfaTokenUsed('tok', token.expiresAt))
  t.notOk(await b.mfaTokenUsed('other', token.expiresAt))
  // once expired, its record is dropped by the next step
  await a.finishMfaStep({ id: 'tok2', expiresAt: now + 900_000 }, 'u1', token.expiresAt + 1, () => ({ action: 'none', result: null }))
  t.notOk(await a.mfaTokenUsed('tok', token.expiresAt), 'expired records are dropped')
  t.equal(new Set(await Promise.all([a.ensureMfaKey(() => 'k1'), b.ensureMfaKey(() => 'k2')])).size, 1, 'one mfa key')
})
