/**
 * sessions.max_per_user: a login beyond it ends the user's session with the oldest last use
 * (login or refresh), inside the write that creates the new one, so racing logins never leave
 * more; the ended session's refresh and access tokens stop working; expired sessions don't count.
 */
import t from 'tap'
import type { SessionLimit, SessionRecord } from '../../src/store/store.js'
import { addUser, buildApp } from '../helpers/app.js'
import { signIn } from '../helpers/sign-in.js'
import { newSession, openStore, policy, T0 } from '../helpers/refresh-store.js'

const PASSWORD = 'saffron-heron-77'
const ROOMY = {
  AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1000/1m',
  AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '1000/1m',
  AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '1000/1m',
  AUTHD_RATE_LIMIT_LOGIN_PER_DEVICE: '1000/1m',
}
const client = { ip: '203.0.113.9', ipKey: '203.0.113.9', userAgent: 'test' }

function clock() {
  let now = 1_700_000_000_000
  return { now: () => now, advance: (ms: number) => (now += ms) }
}

t.test('a login beyond max_per_user ends the session with the oldest last use, a refresh counting as use', async (t) => {
  const c = clock()
  const app = await buildApp(t, { now: c.now, env: { ...ROOMY, AUTHD_SESSIONS_MAX_PER_USER: '3' } })
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  const login = () => signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)
  const first = await login()
  c.advance(1000)
  const second = await login()
  c.advance(1000)
  const third = await login()
  c.advance(1000)
  // the first is refreshed: now the second has the oldest last use
  const firstRefreshed = await app.auth.refresh(first.refreshToken, client)
  c.advance(1000)
  t.same(app.logs.lines.filter((l) => l.event === 'session_evict'), [], 'nothing ended up to the max')

  const fourth = await login()
  t.equal(await app.store.countSessions(ann.id), 3, 'still three')
  t.equal(await app.store.getSession(second.sessionId), undefined, 'the least recently used one ended')
  for (const s of [firstRefreshed, third, fourth]) t.ok(await app.store.getSession(s.sessionId), 'the others live')

  await t.rejects(app.auth.me(`Bearer ${second.accessToken}`), { code: 'INVALID_ACCESS_TOKEN' }, "the ended session's access token stops working")
  await t.rejects(app.auth.refresh(second.refreshToken, client), { code: 'INVALID_REFRESH_TOKEN' }, 'and its refresh token')
  t.same((await app.auth.me(`Bearer ${fourth.accessToken}`)).user, { id: ann.id, email: 'ann@example.com', mfaEnabled: false })
  t.same((await app.auth.me(`Bearer ${firstRefreshed.accessToken}`)).user, { id: ann.id, email: 'ann@example.com', mfaEnabled: false })

  const evicts = app.logs.lines.filter((l) => l.event === 'session_evict')
  t.match(evicts, [{ level: 'info', event: 'session_evict', sessionId: second.sessionId, userId: ann.id }], 'one info line names the session and the user')
  for (const token of [second.refreshToken, second.accessToken, fourth.refreshToken]) t.notOk(app.logs.text().includes(token), 'never a token')

  // a second user's sessions are their own
  const bob = await addUser(app, 'bob@example.com', PASSWORD)
  await signIn(app, { email: 'bob@example.com', password: PASSWORD }, client)
  t.equal(await app.store.countSessions(bob.id), 1)
  t.equal(await app.store.countSessions(ann.id), 3)
})

t.test('expired sessions do not count as live: no live session ends for them', async (t) => {
  const c = clock()
  const app = await buildApp(t, { now: c.now, env: { ...ROOMY, AUTHD_SESSIONS_MAX_PER_USER: '2', AUTHD_SESSIONS_IDLE_TTL: '1h' } })
  await addUser(app, 'ann@example.com', PASSWORD)
  const login = () => signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)
  const stale = await login()
  c.advance(2 * 3_600_000) // past idle_ttl
  const live = await login()
  c.advance(1000)
  const next = await login()
  t.same(app.logs.lines.filter((l) => l.event === 'session_evict'), [], 'the expired one is not evicted, and no live one is')
  t.same((await app.auth.me(`Bearer ${live.accessToken}`)).user.email, 'ann@example.com')
  t.same((await app.auth.me(`Bearer ${next.accessToken}`)).user.email, 'ann@example.com')
  await t.rejects(app.auth.refresh(stale.refreshToken, client), { code: 'INVALID_REFRESH_TOKEN' })
})

t.test('concurrent logins never leave more than max_per_user sessions', async (t) => {
  const app = await buildApp(t, { env: { ...ROOMY, AUTHD_SESSIONS_MAX_PER_USER: '3' } })
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  const results = await Promise.all(Array.from({ length: 8 }, () => signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)))
  t.equal(results.length, 8, 'every login succeeded')
  t.equal(await app.store.countSessions(ann.id), 3)
  t.equal(app.logs.lines.filter((l) => l.event === 'session_evict').length, 5, 'each eviction logged once')
})

t.test('store: 40 concurrent createSession with a limit of 5 leave exactly 5, the most recently used', async (t) => {
  const store = await openStore(t)
  const limit: SessionLimit = { max: 5, now: T0 + 100, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs }
  const record = (i: number): SessionRecord => ({
    id: `s${String(i).padStart(2, '0')}`,
    userId: 'u1',
    createdAt: T0 - i,
    lastUsedAt: T0 + i,
    expiresAt: T0 + policy.absoluteTtlMs,
    ip: '127.0.0.1',
    userAgent: 'test',
    refreshHash: `h${i}`,
    previousHash: null,
    rotatedAt: null,
    generation: 0,
    familyHash: `f${i}`,
    amr: ['pwd'],
  })
  // each its own write transaction, all in flight at once
  const evicted = await Promise.all(Array.from({ length: 40 }, (_, i) => store.createSession(record(i), limit)))
  t.equal(await store.countSessions('u1'), 5, 'never more than the max')
  t.equal(evicted.flat().length, 35, 'every other one was ended, once')
  t.same((await store.listSessions('u1')).map((s) => s.id).sort(), ['s35', 's36', 's37', 's38', 's39'], 'the most recently used stay')
  for (let i = 0; i < 35; i++) t.equal(await store.findSessionIdByRefreshHash(`h${i}`), undefined, 'no token entry of an ended session is left')
  // the index entries carry the times: no session record is needed to find the oldest
  t.same((await store.sessionEntries({ userId: 'u1', limit: 2 })).map((e) => [e.id, e.lastUsedAt]), [['s35', T0 + 35], ['s36', T0 + 36]])
  t.same((await store.sessionEntries({ userId: 'u1', after: { userId: 'u1', id: 's36' }, limit: 10 })).map((e) => e.id), ['s37', 's38', 's39'], 'a page resumes after its cursor')
})

t.test('store: a user far beyond the max (lowered since) loses at most 256 sessions per login', async (t) => {
  const store = await openStore(t)
  await Promise.all(Array.from({ length: 600 }, (_, i) => newSession(store, { id: `s${String(i).padStart(3, '0')}`, at: T0 + i })))
  const limit: SessionLimit = { max: 50, now: T0 + 1000, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs }
  const ended = await store.createSession({ ...(await store.getSession('s000'))!, id: 'fresh', lastUsedAt: T0 + 1000, refreshHash: 'fresh', familyHash: 'f-fresh' }, limit)
  t.equal(ended.length, 256, 'one write ends a bounded number')
  t.same(ended.map((e) => e.id).slice(0, 2), ['s000', 's001'], 'the oldest first')
  t.equal(await store.countSessions('u1'), 600 - 256 + 1)
  const again = await store.createSession({ ...(await store.getSession('s599'))!, id: 'fresh2', lastUsedAt: T0 + 1001, refreshHash: 'fresh2', familyHash: 'f-fresh2' }, limit)
  t.equal(again.length, 256)
  t.equal(await store.countSessions('u1'), 600 - 512 + 2)
})
