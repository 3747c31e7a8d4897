/**
 * core/me-view.ts, the one owner of /me's reads: the lookups of one turn of the event loop are
 * one store.meRead, sessions read at the store's current version are not read again, the keyring
 * is loaded again only when the keys version moves (and then a token of a key another process
 * just added verifies at once), and a read that fails fails every /me of its turn, not the next.
 */
import t, { type Test } from 'tap'
import { createAccessTokens } from '../../src/core/access-tokens.js'
import { createKeyring, generateKey } from '../../src/core/keys.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { AppError, isAppError } from '../../src/errors.js'
import type { Store } from '../../src/store/store.js'
import { addUser, buildApp, type TestApp } from '../helpers/app.js'
import { signIn } from '../helpers/sign-in.js'

const PASSWORD = 'correct horse battery'
const client = { ip: '198.51.100.9', ipKey: '198.51.100.9', userAgent: 'me-view-test' }

interface Watched {
  app: TestApp
  reads: Array<{ sids: readonly string[]; known: number; cached: ReadonlySet<string>; left: number; version: number }>
  listKeys: number
  fail: Error | null
}

/** the app on a real LMDB store whose meRead and listKeys calls are recorded */
async function watched(t: Test): Promise<Watched> {
  const dir = t.testdir()
  const real = await openLmdbStore({ path: dir })
  t.teardown(() => real.close())
  const w = { reads: [], listKeys: 0, fail: null } as unknown as Watched
  const store: Store = Object.create(real) as Store
  store.meRead = async (sids, known, cached) => {
    if (w.fail !== null) throw w.fail
    const read = await real.meRead(sids, known, cached)
    w.reads.push({ sids: [...sids], known, cached: new Set(cached), left: sids.length - read.records.size, version: read.version })
    return read
  }
  store.listKeys = () => {
    w.listKeys++
    return real.listKeys()
  }
  w.app = await buildApp(t, { store, dir })
  return w
}

t.test('the /me lookups of one turn are one read of the store', async (t) => {
  const w = await watched(t)
  await addUser(w.app, 'ann@example.com', PASSWORD)
  await addUser(w.app, 'bob@example.com', PASSWORD)
  const ann = await Promise.all(Array.from({ length: 5 }, () => signIn(w.app, { email: 'ann@example.com', password: PASSWORD }, client)))
  const bob = await signIn(w.app, { email: 'bob@example.com', password: PASSWORD }, client)
  w.reads.length = 0
  const headers = [...ann, bob].flatMap((s) => Array.from({ length: 10 }, () => `Bearer ${s.accessToken}`))
  const answers = await Promise.all(headers.map((h) => w.app.auth.me(h)))
  t.equal(w.reads.length, 1, `${headers.length} lookups in one turn, one read`)
  t.equal(w.reads[0]!.sids.length, 6, 'each session asked for once')
  t.same(new Set(answers.map((a) => a.user.email)), new Set(['ann@example.com', 'bob@example.com']))
  t.equal(answers[0]!.body, JSON.stringify({ success: true, data: answers[0]!.user }), 'the body comes made')
  t.equal(answers[0]!.bytes, Buffer.byteLength(answers[0]!.body))
  t.equal(answers[0]!.user, answers[1]!.user, 'one frozen user object while it is unchanged')
})

t.test('a session read at the store version still current is not read again; a write makes every one read again', async (t) => {
  const w = await watched(t)
  await addUser(w.app, 'ann@example.com', PASSWORD)
  const s = await signIn(w.app, { email: 'ann@example.com', password: PASSWORD }, client)
  const me = (): Promise<unknown> => w.app.auth.me(`Bearer ${s.accessToken}`)
  await me()
  await me()
  const [first, second] = w.reads.slice(-2)
  t.equal(second!.known, first!.version, 'the second turn names the version the first read')
  t.ok(second!.cached.has(s.sessionId), 'and tells the store it holds the session as read then')
  t.equal(second!.left, 1, 'and the store leaves it out')
  await addUser(w.app, 'bob@example.com', PASSWORD)
  await me()
  t.equal(w.reads.at(-1)!.left, 0, 'after a write (any write) it is read again')
})

t.test('the keyring is loaded again only when the keys version moves; a token of a key added by another process verifies at once', async (t) => {
  const w = await watched(t)
  await addUser(w.app, 'ann@example.com', PASSWORD)
  const s = await signIn(w.app, { email: 'ann@example.com', password: PASSWORD }, client)
  const before = w.listKeys
  for (let i = 0; i < 5; i++) await w.app.auth.me(`Bearer ${s.accessToken}`)
  t.equal(w.listKeys, before, 'no key read while the keys version stands')

  // another process (authctl keys rotate --now, or another instance) adds a key and signs with it
  const other = await openLmdbStore({ path: w.app.dir })
  t.teardown(() => other.close())
  await other.rotateKey(generateKey('ES256', Date.now()), Date.now())
  const c = w.app.config.tokens
  const ring = await createKeyring({ store: other, now: Date.now, verifyWindowMs: c.accessTtlMs + c.clockToleranceMs })
  const tokens = createAccessTokens({ keyring: ring, now: Date.now, issuer: c.issuer, audience: c.audience, ttlMs: c.accessTtlMs, clockToleranceMs: c.clockToleranceMs })
  const fresh = tokens.sign({ sub: (await w.app.store.getUser(s.user.id))!.id, email: s.user.email, sid: s.sessionId }).token
  await new Promise((r) => setTimeout(r, 5))
  const answer = await w.app.auth.me(`Bearer ${fresh}`)
  t.equal(answer.user.email, 'ann@example.com', 'accepted on its first /me')
  t.equal(w.listKeys, before + 1, 'the keys read once, when their version moved')
  t.equal((await w.app.auth.me(`Bearer ${s.accessToken}`)).sessionId, s.sessionId, 'tokens of the retiring key still verify')
  t.equal(w.listKeys, before + 1)
})

t.test('a read that fails fails every /me of its turn, and the next turn reads again', async (t) => {
  const w = await watched(t)
  await addUser(w.app, 'ann@example.com', PASSWORD)
  const s = await signIn(w.app, { email: 'ann@example.com', password: PASSWORD }, client)
  w.fail = new AppError('STORE_UNAVAILABLE', { message: 'the store is unavailable' })
  const failed = await Promise.allSettled(Array.from({ length: 3 }, () => w.app.auth.me(`Bearer ${s.accessToken}`)))
  t.same(failed.map((r) => r.status), ['rejected', 'rejected', 'rejected'])
  t.ok(failed.every((r) => r.status === 'rejected' && isAppError(r.reason) && r.reason.code === 'STORE_UNAVAILABLE'), 'with the store’s error (answered 503)')
  w.fail = null
  t.equal((await w.app.auth.me(`Bearer ${s.accessToken}`)).user.email, 'ann@example.com')
})

t.test('a revoked session and a disabled user are refused by the next /me of this process', async (t) => {
  const w = await watched(t)
  const ann = await addUser(w.app, 'ann@example.com', PASSWORD)
  const a = await signIn(w.app, { email: 'ann@example.com', password: PASSWORD }, client)
  const b = await signIn(w.app, { email: 'ann@example.com', password: PASSWORD }, client)
  await w.app.auth.me(`Bearer ${a.accessToken}`)
  await w.app.store.revokeSession(a.sessionId)
  await t.rejects(w.app.auth.me(`Bearer ${a.accessToken}`), { code: 'INVALID_ACCESS_TOKEN' })
  await w.app.auth.me(`Bearer ${b.accessToken}`)
  await w.app.store.updateUser(ann.id, (u) => ({ ...u, disabled: true }))
  await t.rejects(w.app.auth.me(`Bearer ${b.accessToken}`), { code: 'INVALID_ACCESS_TOKEN' })
})
