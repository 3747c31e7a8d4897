/**
 * The admin operations (core/admin.ts) in-process, on a real temp store, with a movable clock;
 * what authctl prints of them is tested in test/cli. Runs on PostgreSQL too (ON_BOTH, test/suite.mjs).
 */
import t, { type Test } from 'tap'
import { loadConfig } from '../../src/config/load.js'
import { createAdmin, lazyPasswordTools, type Admin } from '../../src/core/admin.js'
import { hashToken } from '../../src/core/sessions.js'
import { openTestStore } from '../helpers/app.js'
import type { SessionRecord, Store } from '../../src/store/store.js'

const MIN = 60_000
const DAY = 24 * 60 * MIN

async function setup(t: Test, env: Record<string, string> = {}): Promise<{ admin: Admin; store: Store; clock: { now: number } }> {
  const dir = t.testdir()
  const config = loadConfig({ flags: { data: dir }, env, cwd: dir }).config
  const store = await openTestStore(t, config.store.path)
  const clock = { now: Date.UTC(2025, 0, 1) }
  const admin = createAdmin({ store, config, now: () => clock.now, passwords: lazyPasswordTools(config) })
  return { admin, store, clock }
}

let n = 0
function session(userId: string, at: number, extra: Partial<SessionRecord> = {}): SessionRecord {
  const id = `session-${++n}`
  return {
    id,
    userId,
    createdAt: at,
    lastUsedAt: at,
    expiresAt: at + 30 * DAY,
    ip: '127.0.0.1',
    userAgent: 'test',
    refreshHash: hashToken(id),
    previousHash: null,
    rotatedAt: null,
    generation: 0,
    familyHash: hashToken(`family-${id}`),
    amr: ['pwd'],
    ...extra,
  }
}

t.test('a user is found by id or by any case and Unicode form of its email', async (t) => {
  const { admin } = await setup(t)
  const ann = await admin.addUser('  Ann@Example.com', 'correct horse battery')
  t.equal(ann.email, 'ann@example.com')
  t.equal((await admin.findUser(ann.id))?.id, ann.id)
  t.equal((await admin.findUser('ＡＮＮ@EXAMPLE.COM'))?.id, ann.id)
  t.equal(await admin.findUser('bob@example.com'), undefined)
  t.equal(await admin.findUser(''), undefined)
  await t.rejects(admin.resolveUser('x'.repeat(3000)), { name: 'AppError', code: 'USER_NOT_FOUND' })
  await t.rejects(admin.addUser('ann@EXAMPLE.com', 'correct horse battery'), { code: 'USER_EXISTS', message: 'A user with email ann@example.com already exists.' })
  await t.rejects(admin.addUser('two@@example.com', 'correct horse battery'), { code: 'USER_EMAIL_INVALID' })
})

t.test('user add keeps the register rules: no look-alike accounts, the domain compared in ASCII', async (t) => {
  const { admin } = await setup(t)
  const ann = await admin.addUser('ann@b\u00fccher.example', 'correct horse battery')
  t.equal(ann.email, 'ann@xn--bcher-kva.example')
  await t.rejects(admin.checkNewEmail('ann@xn--bcher-kva.example'), { code: 'USER_EXISTS' })
  t.equal((await admin.findUser('ann@b\u00fccher.example'))?.id, ann.id, 'found by the U-label too')
  await t.rejects(admin.checkNewEmail('ann\u200b@example.com'), {
    code: 'USER_EMAIL_INVALID',
    message: '"ann\\u200b@example.com" is not a valid email address: it contains an invisible or direction-changing character (U+200B).',
  })
  await t.rejects(admin.checkNewEmail('ann@example.com.'), { code: 'USER_EMAIL_INVALID', message: /its domain ends in a dot\.$/ })
  await t.rejects(admin.checkNewEmail('an\u00adn@example.com'), { code: 'USER_EMAIL_INVALID', message: /\(U\+00AD\)\.$/ })
  await t.rejects(admin.checkNewEmail('ann@example\u202e.com'), { code: 'USER_EMAIL_INVALID', message: /\(U\+202E\)\.$/ })
  await t.rejects(admin.checkNewEmail('ann@xn--zz.example'), { code: 'USER_EMAIL_INVALID', message: /its domain is not a valid domain name\.$/ })
  await t.rejects(admin.addUser('c@example.com', 'x'.repeat(257)), { code: 'PASSWORD_TOO_LONG', message: 'Password must be at most 256 characters' })
})

t.test('disable and a new password revoke every session of the user; counts and lists show live sessions only', async (t) => {
  const { admin, store, clock } = await setup(t)
  const ann = await admin.addUser('ann@example.com', 'correct horse battery')
  const bob = await admin.addUser('bob@example.com', 'correct horse battery')
  const now = clock.now
  await store.createSession(session(ann.id, now - 2 * MIN))
  await store.createSession(session(ann.id, now - MIN))
  await store.createSession(session(bob.id, now))
  // unused for longer than sessions.idle_ttl (7d): dead, not listed or counted
  await store.createSession(session(bob.id, now - 8 * DAY))

  t.same((await admin.listUsers()).map((u) => [u.email, u.sessions]), [['ann@example.com', 2], ['bob@example.com', 1]])
  const bobs = await admin.listSessions('BOB@example.com')
  t.equal(bobs.length, 1)
  t.equal(bobs[0]!.email, 'bob@example.com')
  t.equal(bobs[0]!.expiresAt, now + 7 * DAY, 'expires is the idle expiry when it comes first')
  t.equal(bobs[0]!.absoluteExpiresAt, now + 30 * DAY)
  t.same((await admin.listSessions()).map((s) => s.userId), [bob.id, ann.id, ann.id], 'newest first')

  const pw = await admin.setPassword(ann.id, 'a different passphrase')
  t.equal(pw.revokedSessions, 2)
  t.equal((await store.listSessions(ann.id)).length, 0)
  await t.rejects(admin.setPassword(ann.id, 'password'), { code: 'PASSWORD_TOO_COMMON' })

  const off = await admin.disableUser('bob@example.com')
  t.equal(off.revokedSessions, 2, 'the dead session is deleted too')
  t.equal(off.user.disabled, true)
  t.equal((await store.getUser(bob.id))?.disabled, true)
  t.equal((await admin.enableUser(bob.id)).user.disabled, false)

  await store.createSession(session(bob.id, now))
  const rm = await admin.removeUser(bob.id)
  t.equal(rm.revokedSessions, 1)
  t.equal(await store.getUser(bob.id), undefined)
  t.equal((await store.listSessions(bob.id)).length, 0)
  await t.rejects(admin.removeUser(bob.id), { code: 'USER_NOT_FOUND' })
})

t.test('sessions list under a lowered sessions.absolute_ttl: what each session has left by it, and older ones not listed', async (t) => {
  // sessions started under 30d, listed by an authctl whose config now says 2d
  const { admin, store, clock } = await setup(t, { AUTHD_SESSIONS_ABSOLUTE_TTL: '2d' })
  const ann = await admin.addUser('ann@example.com', 'correct horse battery')
  const now = clock.now
  await store.createSession(session(ann.id, now - DAY, { expiresAt: now - DAY + 30 * DAY }))
  await store.createSession(session(ann.id, now - 3 * DAY, { lastUsedAt: now - MIN, expiresAt: now - 3 * DAY + 30 * DAY }))
  const listed = await admin.listSessions(ann.id)
  t.equal(listed.length, 1, 'the one started three days ago is over: not listed')
  t.equal(listed[0]!.absoluteExpiresAt, now + DAY, 'two days after its login, not the thirty it was given')
  t.equal(listed[0]!.expiresAt, now + DAY, 'which comes before its idle expiry')
  t.equal((await admin.listUsers())[0]!.sessions, 1)
})

t.test('revoking sessions: one, a user’s, all', async (t) => {
  const { admin, store, clock } = await setup(t)
  const ann = await admin.addUser('ann@example.com', 'correct horse battery')
  const s1 = session(ann.id, clock.now)
  const s2 = session(ann.id, clock.now)
  const s3 = session('someone-deleted', clock.now)
  for (const s of [s1, s2, s3]) await store.createSession(s)
  const one = await admin.revokeSession(s1.id)
  t.equal(one.id, s1.id)
  t.equal(await store.getSession(s1.id), undefined)
  t.equal(await store.findSessionIdByRefreshHash(s1.refreshHash), undefined, 'its refresh token is gone with it')
  await t.rejects(admin.revokeSession(s1.id), { code: 'SESSION_ID_NOT_FOUND', message: `No session with id "${s1.id}".` })
  t.equal((await admin.listSessions()).find((s) => s.id === s3.id)?.email, null, 'a session of a deleted user shows no email')
  t.equal((await admin.revokeUserSessions(ann.id)).revoked, 1)
  t.equal((await admin.revokeAllSessions()).revoked, 1)
  t.equal((await store.listSessions()).length, 0)
})

t.test('keys: rotation at once, the effective state of a retiring key, and the active key kept', async (t) => {
  const { admin, store, clock } = await setup(t, { AUTHD_TOKENS_ACCESS_TTL: '10m', AUTHD_TOKENS_CLOCK_TOLERANCE: '5s' })
  const window = 10 * MIN + 5000
  const first = await admin.rotateKey()
  t.equal(first.active.state, 'active')
  t.same(first.retiring, [])
  clock.now += 1000
  const second = await admin.rotateKey('RS256', { now: true })
  t.equal(second.key.kid, second.active.kid, 'with now, the new key is the one signing')
  t.same(second.retiring.map((k) => [k.kid, k.state, k.verifiesUntil]), [[first.active.kid, 'retiring', clock.now + window]])
  t.equal(await store.keysVersion() > 0, true)

  clock.now += window
  t.same((await admin.listKeys()).map((k) => [k.kid, k.state]), [[second.active.kid, 'active'], [first.active.kid, 'retiring']], 'still verifying at the end of its window')
  t.equal((await store.getKey(first.active.kid))?.state, 'retiring')

  clock.now += 1
  const version = await store.keysVersion()
  const later = await admin.listKeys()
  t.same(later.map((k) => [k.kid, k.state]), [[second.active.kid, 'active'], [first.active.kid, 'retired']])
  const stored = (await store.getKey(first.active.kid))!
  t.equal(later[1]!.retiredAt, stored.retiringAt! + window, 'retired when its last token expired')
  // the end of a retiring key is this program's access-token lifetime: not recorded, since the
  // daemon's may be longer (a key recorded retired stops verifying its tokens everywhere)
  t.equal(stored.state, 'retiring', 'not recorded')
  t.equal(await store.keysVersion(), version, 'nothing written')

  t.equal((await admin.checkRevokeKey(second.active.kid)).kid, second.active.kid, 'the active key may be revoked')
  t.ok(await store.getKey(second.active.kid), 'checking changes nothing')
  t.equal((await admin.checkRevokeKey(first.active.kid)).kid, first.active.kid)
  await admin.revokeKey(first.active.kid)
  t.equal(await store.getKey(first.active.kid), undefined)
  await t.rejects(admin.revokeKey(first.active.kid), { code: 'KEY_NOT_FOUND' })

  // the active key goes with a replacement, made first
  const swap = await admin.revokeKey(second.active.kid)
  t.equal(swap.revoked.kid, second.active.kid)
  t.equal(swap.active?.alg, 'RS256', 'the replacement keeps the algorithm')
  t.same((await store.listKeys()).map((k) => [k.kid, k.state]), [[swap.active!.kid, 'active']])
})

t.test('keys: a rotated key is next for tokens.key_lead, then signs by itself and the old one retires; list records it', async (t) => {
  const { admin, store, clock } = await setup(t, { AUTHD_TOKENS_ACCESS_TTL: '10m', AUTHD_TOKENS_CLOCK_TOLERANCE: '5s', AUTHD_TOKENS_KEY_LEAD: '2m' })
  const first = await admin.rotateKey()
  t.equal(first.key.state, 'active', 'no key signed yet: the first one signs at once')
  clock.now += 1000
  const start = clock.now
  const second = await admin.rotateKey('RS256')
  t.match(second, { key: { state: 'next', alg: 'RS256', activatedAt: start + 2 * MIN }, active: { kid: first.key.kid, state: 'active' }, retiring: [] })
  t.same((await admin.listKeys()).map((k) => [k.kid, k.state]), [[second.key.kid, 'next'], [first.key.kid, 'active']])

  clock.now = start + 2 * MIN
  const version = await store.keysVersion()
  const listed = await admin.listKeys()
  t.same(listed.map((k) => [k.kid, k.state, k.retiringAt]), [[second.key.kid, 'active', null], [first.key.kid, 'retiring', start + 2 * MIN]])
  t.equal(listed[1]!.verifiesUntil, start + 2 * MIN + 10 * MIN + 5000)
  t.same([(await store.getKey(second.key.kid))?.state, (await store.getKey(first.key.kid))?.state], ['active', 'retiring'], 'the transition is recorded')
  t.ok((await store.keysVersion()) > version)
  const unchanged = await store.keysVersion()
  await admin.listKeys()
  t.equal(await store.keysVersion(), unchanged, 'recorded once')

  // a second scheduled rotation replaces a key still next; revoking a next key needs no replacement
  const third = await admin.rotateKey()
  const fourth = await admin.rotateKey()
  t.equal(await store.getKey(third.key.kid), undefined, 'the pending key is replaced')
  t.same(fourth.replaced.map((k) => [k.kid, k.state]), [[third.key.kid, 'next']], 'and said so')
  t.same(third.replaced, [])
  t.equal((await admin.checkRevokeKey(fourth.key.kid)).state, 'next')
  t.same(await admin.revokeKey(fourth.key.kid), { revoked: { ...(await admin.checkRevokeKey(second.key.kid)), kid: fourth.key.kid, alg: 'ES256', state: 'next', createdAt: fourth.key.createdAt, activatedAt: fourth.key.activatedAt }, active: null, replaced: [] })
  t.equal(await store.getKey(fourth.key.kid), undefined)
})

t.test('keys: revoking the active key replaces it at once, even while a rotated key is still next', async (t) => {
  const { admin, store, clock } = await setup(t)
  const first = await admin.rotateKey()
  const pending = await admin.rotateKey()
  t.equal(pending.key.state, 'next')
  clock.now += 1000
  const swap = await admin.revokeKey(first.key.kid)
  t.match(swap, { revoked: { kid: first.key.kid, state: 'active' }, active: { state: 'active', activatedAt: clock.now } })
  t.equal(await store.getKey(pending.key.kid), undefined, 'the pending key is replaced by the one signing now')
  t.same((await store.listKeys()).map((k) => [k.kid, k.state]), [[swap.active!.kid, 'active']])

  // the key that signs by time alone (its stored state still next) is the active one: it is replaced too
  const later = await admin.rotateKey()
  clock.now += 5 * MIN
  t.equal((await store.getKey(later.key.kid))?.state, 'next', 'not recorded yet')
  t.equal((await admin.checkRevokeKey(later.key.kid)).state, 'active')
  const again = await admin.revokeKey(later.key.kid)
  t.ok(again.active, 'a replacement was made')
  t.same((await store.listKeys()).map((k) => k.state).sort(), ['active', 'retiring'])
})

t.test('mfa reset removes the second factor and any unconfirmed setup in one write, and leaves the rest of the user', async (t) => {
  const { admin, store, clock } = await setup(t)
  const ann = await admin.addUser('ann@example.com', 'correct horse battery')
  const bob = await admin.addUser('bob@example.com', 'correct horse battery')
  t.equal(ann.mfaEnabled, false)
  await store.createSession(session(ann.id, clock.now))
  const secret = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP'
  await store.updateUser(ann.id, (u) => ({
    ...u,
    mfa: { secret, enabledAt: clock.now, lastStep: 123, recoveryCodes: ['hash-1', 'hash-2'] },
    mfaSetup: { secret: 'KRSXG5CTMVRXEZLUKRSXG5CTMVRXEZLU', createdAt: clock.now },
  }))
  const before = (await store.getUser(ann.id))!
  t.same((await admin.listUsers()).map((u) => [u.email, u.mfaEnabled]), [['ann@example.com', true], ['bob@example.com', false]])
  t.equal((await admin.showUser('ann@example.com')).mfaEnabled, true)
  t.equal((await admin.overview({ sessions: { limit: 10 } })).users.find((u) => u.id === ann.id)?.mfaEnabled, true, 'the TUI’s read shows it too')
  t.notMatch(JSON.stringify([await admin.listUsers(), await admin.showUser(ann.id)]), secret, 'the secret is in no summary')

  clock.now += MIN
  const reset = await admin.resetMfa('ANN@example.com')
  t.equal(reset.wasEnabled, true)
  t.equal(reset.user.mfaEnabled, false)
  const after = (await store.getUser(ann.id))!
  t.equal(after.mfa, undefined, 'the secret and the recovery codes are gone')
  t.equal(after.mfaSetup, undefined, 'and the unconfirmed setup')
  const { mfa: _m, mfaSetup: _s, ...rest } = before
  t.same({ ...after, updatedAt: 0 }, { ...rest, updatedAt: 0 }, 'the password and everything else stay')
  t.notOk('mfa' in after, 'no key left behind')
  t.equal(after.updatedAt, clock.now)
  t.equal((await store.listSessions(ann.id)).length, 1, 'sessions are left alone')

  const again = await admin.resetMfa(ann.id)
  t.equal(again.wasEnabled, false, 'a second reset finds nothing')
  t.equal((await store.getUser(ann.id))!.updatedAt, clock.now)
  await store.updateUser(bob.id, (u) => ({ ...u, mfaSetup: { secret: 'KRSXG5CTMVRXEZLUKRSXG5CTMVRXEZLU', createdAt: clock.now } }))
  t.equal((await admin.resetMfa(bob.id)).wasEnabled, false)
  t.equal((await store.getUser(bob.id))!.mfaSetup, undefined, 'a setup alone is dropped too')
  await t.rejects(admin.resetMfa('ghost@example.com'), { name: 'AppError', code: 'USER_NOT_FOUND', message: 'No user with email or id "ghost@example.com".' })
})
