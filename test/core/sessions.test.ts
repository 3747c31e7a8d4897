/**
 * Refresh tokens and the rotation decision, without HTTP or a store: token shape, what the
 * store may hold, and every branch of decideRefresh at its boundaries.
 */
import { createHash } from 'node:crypto'
import t from 'tap'
import { decideRefresh, familyHashOf, GRACE_ROTATIONS_KEPT, hashToken, isLive, newRefreshToken, newSessionId, openSuccessor, REFRESH_TOKEN, sealSuccessor, tokenFamily, type SessionPolicy } from '../../src/core/sessions.js'
import fc from 'fast-check'
import { liveUnder, type SessionRecord } from '../../src/store/store.js'

const policy: SessionPolicy = { idleTtlMs: 3_600_000, absoluteTtlMs: 86_400_000, reuseGraceMs: 10_000 }
const T0 = 1_700_000_000_000

function session(token: string, over: Partial<SessionRecord> = {}): SessionRecord {
  return {
    id: 'sid',
    userId: 'uid',
    createdAt: T0,
    lastUsedAt: T0,
    expiresAt: T0 + policy.absoluteTtlMs,
    ip: '127.0.0.1',
    userAgent: '',
    refreshHash: hashToken(token),
    previousHash: null,
    rotatedAt: null,
    generation: 0,
    familyHash: familyHashOf(token),
    amr: ['pwd'],
    ...over,
  }
}

const present = (token: string) => ({ token, hash: hashToken(token) })
const ctx = (now: number) => ({ now, policy })

t.test('refresh tokens are a 128-bit family and a 256-bit secret from the CSPRNG, base64url, all different', async (t) => {
  const seen = new Set<string>()
  const families = new Set<string>()
  for (let i = 0; i < 1000; i++) {
    const tok = newRefreshToken()
    t.match(tok, REFRESH_TOKEN)
    const [family, secret] = tok.split('.')
    if (Buffer.from(family!, 'base64url').length !== 16) t.fail('family not 16 bytes')
    if (Buffer.from(secret!, 'base64url').length !== 32) t.fail('secret not 32 bytes')
    t.equal(tokenFamily(tok), family)
    seen.add(tok)
    families.add(family!)
  }
  t.equal(seen.size, 1000)
  t.equal(families.size, 1000, 'every new session its own family')
  const next = newRefreshToken('f'.repeat(22))
  t.match(next, /^f{22}\.[A-Za-z0-9_-]{43}$/, 'a rotation keeps the family')
  t.equal(familyHashOf(next), hashToken('f'.repeat(22)), 'the store is given the family only hashed')
  // a secret alone, without its family, is not a refresh token
  for (const bad of ['a'.repeat(43), 'a'.repeat(42), 'a'.repeat(44), `${'a'.repeat(21)}.${'b'.repeat(43)}`, `${'a'.repeat(22)}.${'b'.repeat(42)}`, `${'a'.repeat(22)}:${'b'.repeat(43)}`]) {
    t.notMatch(bad, REFRESH_TOKEN, bad)
  }
  t.match(newSessionId(), /^[A-Za-z0-9_-]{22}$/)
  t.equal(Buffer.from(newSessionId(), 'base64url').length, 16)
})

t.test('the store form of a token is its SHA-256, which does not replay', async (t) => {
  const tok = newRefreshToken()
  t.equal(hashToken(tok), createHash('sha256').update(tok).digest('base64url'))
  // a stored hash has the shape of a token, but presented as one it is hashed again, to a
  // hash the store does not hold (test/store/refresh-session.test.ts presents one)
  t.not(hashToken(hashToken(tok)), hashToken(tok))
})

t.test('a sealed successor opens only with the token it replaced', async (t) => {
  const previous = newRefreshToken()
  // a successor is of its predecessor's family: only its secret is sealed
  const successor = newRefreshToken(tokenFamily(previous))
  const sealed = sealSuccessor(previous, successor)
  t.notOk(sealed.includes(successor.slice(23)), 'the sealed form does not hold the secret in the clear')
  t.equal(sealed.length, 80, 'IV, the 32-byte secret and the tag, base64url')
  t.equal(openSuccessor(previous, sealed), successor)
  t.equal(openSuccessor(newRefreshToken(), sealed), null, 'another token cannot open it')
  t.equal(openSuccessor(hashToken(previous), sealed), null, 'nor can the stored hash of the previous token')
  const tampered = Buffer.from(sealed, 'base64url')
  tampered[14] ^= 1
  t.equal(openSuccessor(previous, tampered.toString('base64url')), null, 'a tampered seal does not open')
  t.equal(openSuccessor(previous, 'short'), null)
  t.not(sealSuccessor(previous, successor), sealed, 'each seal has its own IV')
})

t.test('isLive: idle and absolute expiry, both exclusive', async (t) => {
  const s = session('x'.repeat(43))
  t.ok(isLive(s, T0, policy))
  t.ok(isLive(s, T0 + policy.idleTtlMs - 1, policy))
  t.notOk(isLive(s, T0 + policy.idleTtlMs, policy), 'idle')
  const used = { ...s, lastUsedAt: s.expiresAt - 1000 }
  t.ok(isLive(used, s.expiresAt - 1, policy))
  t.notOk(isLive(used, s.expiresAt, policy), 'absolute, however recently used')
})

t.test("the store's sessions-per-user bound counts a session live exactly when isLive does", async (t) => {
  // createSession's limit is data (a backend may count in its database): the same test as isLive
  const time = fc.integer({ min: T0 - 1000, max: T0 + policy.absoluteTtlMs + 1000 })
  fc.assert(
    fc.property(time, time, time, time, (createdAt, lastUsedAt, expiresAt, now) => {
      const s = { createdAt, lastUsedAt, expiresAt }
      return liveUnder(s, { max: 1, now, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs }) === isLive(s, now, policy)
    }),
    { numRuns: 2000 },
  )
  const s = session('x'.repeat(43))
  t.ok(liveUnder(s, { max: 1, now: T0 + policy.idleTtlMs - 1, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs }))
  t.notOk(liveUnder(s, { max: 1, now: T0 + policy.idleTtlMs, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs }), 'idle, exclusive')
})

t.test('decideRefresh: unknown hash', async (t) => {
  t.same(decideRefresh(undefined, present(newRefreshToken()), ctx(T0)), { action: 'none', result: { kind: 'unknown' } })
})

t.test('decideRefresh: the live token rotates to its successor', async (t) => {
  const rt0 = newRefreshToken()
  const s = session(rt0)
  const d = decideRefresh(s, present(rt0), ctx(T0 + 5000))
  t.equal(d.action, 'rotate')
  if (d.action !== 'rotate' || d.result.kind !== 'rotated') throw new Error('not rotated')
  const rt1 = d.result.token
  t.match(rt1, REFRESH_TOKEN)
  t.not(rt1, rt0)
  t.equal(tokenFamily(rt1), tokenFamily(rt0), 'the same family')
  t.same(d.session, {
    ...s,
    lastUsedAt: T0 + 5000,
    previousHash: hashToken(rt0),
    refreshHash: hashToken(rt1),
    rotatedAt: T0 + 5000,
    generation: 1,
    familyHash: familyHashOf(rt0),
    rotations: [{ at: T0 + 5000, sealed: d.session.rotations![0]!.sealed }],
  })
  t.equal(openSuccessor(rt0, d.session.rotations![0]!.sealed), rt1, 'the successor is sealed under the token it replaced')
  t.notOk(JSON.stringify(d.session).includes(rt1), 'the new record holds no token')
  t.notOk(JSON.stringify(d.session).includes(rt0))
})

t.test('decideRefresh: within the grace the previous token gets the same successor, without a write', async (t) => {
  const rt0 = newRefreshToken()
  const first = decideRefresh(session(rt0), present(rt0), ctx(T0))
  if (first.action !== 'rotate' || first.result.kind !== 'rotated') throw new Error('not rotated')
  const rt1 = first.result.token
  const s1 = first.session
  for (const dt of [0, 1, policy.reuseGraceMs]) {
    const d = decideRefresh(s1, present(rt0), ctx(T0 + dt))
    t.same(d, { action: 'none', result: { kind: 'grace', session: s1, token: rt1 } }, `+${dt} ms`)
  }
  const late = decideRefresh(s1, present(rt0), ctx(T0 + policy.reuseGraceMs + 1))
  t.same(late, { action: 'revoke', result: { kind: 'reuse', session: s1 } }, 'one millisecond after the grace: reuse')
})

t.test('decideRefresh: with a zero grace any second presentation is a reuse', async (t) => {
  const rt0 = newRefreshToken()
  const zero = { ...policy, reuseGraceMs: 0 }
  const first = decideRefresh(session(rt0), present(rt0), { now: T0, policy: zero })
  if (first.action !== 'rotate') throw new Error('not rotated')
  t.equal(decideRefresh(first.session, present(rt0), { now: T0 + 1, policy: zero }).result.kind, 'reuse')
  t.equal(decideRefresh(first.session, present(rt0), { now: T0, policy: zero }).result.kind, 'reuse', 'in the very millisecond of the rotation too')
})

t.test('decideRefresh: a token several rotations back, within the grace of its own rotation, gets the live token', async (t) => {
  // a page reloaded twice while a third request with the first cookie was still on its way
  const rt0 = newRefreshToken()
  const d1 = decideRefresh(session(rt0), present(rt0), ctx(T0))
  if (d1.action !== 'rotate' || d1.result.kind !== 'rotated') throw new Error('not rotated')
  const rt1 = d1.result.token
  const d2 = decideRefresh(d1.session, present(rt1), ctx(T0 + 4000))
  if (d2.action !== 'rotate' || d2.result.kind !== 'rotated') throw new Error('not rotated')
  const rt2 = d2.result.token
  t.equal(d2.session.rotations!.length, 2, 'both rotations are inside the grace')
  for (const [tok, what] of [[rt0, 'two back'], [rt1, 'one back']] as const) {
    t.same(decideRefresh(d2.session, present(tok), ctx(T0 + policy.reuseGraceMs)), { action: 'none', result: { kind: 'grace', session: d2.session, token: rt2 } }, what)
  }
  // each within the grace of its own rotation: rt0's ran out first
  t.equal(decideRefresh(d2.session, present(rt0), ctx(T0 + policy.reuseGraceMs + 1)).result.kind, 'reuse', 'rt0 after its grace')
  t.equal(decideRefresh(d2.session, present(rt1), ctx(T0 + policy.reuseGraceMs + 1)).result.kind, 'grace', 'rt1 still inside its own')
  // a rotation after the grace keeps only what is still inside it
  const d3 = decideRefresh(d2.session, present(rt2), ctx(T0 + 4000 + policy.reuseGraceMs + 1))
  if (d3.action !== 'rotate') throw new Error('not rotated')
  if (d3.result.kind !== 'rotated') throw new Error('not rotated')
  t.equal(d3.session.rotations!.length, 1, 'the two older rotations were out of the grace')
  t.equal(openSuccessor(rt2, d3.session.rotations![0]!.sealed), d3.result.token, 'the one kept is the rotation just made')
})

t.test('decideRefresh: at most GRACE_ROTATIONS_KEPT rotations are kept, however fast they come', async (t) => {
  let tok = newRefreshToken()
  let s = session(tok)
  const all = [tok]
  for (let i = 0; i < GRACE_ROTATIONS_KEPT + 4; i++) {
    const d = decideRefresh(s, present(tok), ctx(T0 + i))
    if (d.action !== 'rotate' || d.result.kind !== 'rotated') throw new Error('not rotated')
    s = d.session
    tok = d.result.token
    all.push(tok)
  }
  t.equal(s.rotations!.length, GRACE_ROTATIONS_KEPT)
  // the record stays small however fast its holder refreshes (a browser's long user agent too):
  // under PostgreSQL's 2 KB, past which a row's JSON is stored apart and rewritten at every refresh
  t.ok(JSON.stringify({ ...s, userAgent: 'x'.repeat(256) }).length < 1800, `a full record is ${JSON.stringify({ ...s, userAgent: 'x'.repeat(256) }).length} characters`)
  const now = T0 + GRACE_ROTATIONS_KEPT + 5
  t.same(decideRefresh(s, present(all[4]!), ctx(now)).result, { kind: 'grace', session: s, token: tok }, 'the oldest kept walks to the live token')
  t.equal(decideRefresh(s, present(all[3]!), ctx(now)).result.kind, 'reuse', 'one older is no longer kept: reuse')
})

t.test('decideRefresh: the grace does not hold when the record was tampered (successor mismatch)', async (t) => {
  const rt0 = newRefreshToken()
  const d1 = decideRefresh(session(rt0), present(rt0), ctx(T0))
  if (d1.action !== 'rotate') throw new Error('not rotated')
  const other = { ...d1.session, refreshHash: hashToken(newRefreshToken()) }
  t.equal(decideRefresh(other, present(rt0), ctx(T0 + 1)).result.kind, 'reuse')
  const reSealed = { ...d1.session, rotations: [{ ...d1.session.rotations![0]!, sealed: sealSuccessor(newRefreshToken(), newRefreshToken()) }] }
  t.equal(decideRefresh(reSealed, present(rt0), ctx(T0 + 1)).result.kind, 'reuse', 'a seal that does not open with the token is no grace')
  const unsealed = { ...d1.session, rotations: [] }
  t.equal(decideRefresh(unsealed, present(rt0), ctx(T0 + 1)).result.kind, 'reuse', 'nor is a record without its rotation')
})

t.test('decideRefresh: an expired session is revoked whatever token is shown', async (t) => {
  const rt0 = newRefreshToken()
  const s = session(rt0)
  t.same(decideRefresh(s, present(rt0), ctx(T0 + policy.idleTtlMs)), { action: 'revoke', result: { kind: 'expired', session: s } })
  const busy = { ...s, lastUsedAt: s.expiresAt - 1 }
  t.same(decideRefresh(busy, present(rt0), ctx(s.expiresAt)), { action: 'revoke', result: { kind: 'expired', session: busy } })
  t.equal(decideRefresh(s, present(newRefreshToken()), ctx(T0 + policy.idleTtlMs)).result.kind, 'expired')
})
