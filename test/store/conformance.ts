/**
 * The Store's behaviour, as every backend must have it: run by lmdb-conformance.test.ts on LMDB
 * and by pg-conformance.test.ts on PostgreSQL. Written to the interface in src/store/store.ts
 * alone (and the core functions that decide refreshes and verify the audit chain), never to a
 * backend's insides.
 *
 * `open()` must give a fresh, empty store each call, with the limiter the daemon counts in beside
 * it (the store's own on PostgreSQL, one in process on LMDB); the suite closes every store it opens.
 */
import type { Test } from 'tap'
import { keyPairOf } from '../helpers/records.js'
import { chainHash, GENESIS } from '../../src/store/audit-chain.js'
import { verifyChain } from '../../src/core/audit.js'
import { decideRefresh, familyHashOf, hashToken, newRefreshToken, type RefreshOutcome, type SessionPolicy } from '../../src/core/sessions.js'
import type { RateLimiter } from '../../src/store/rate-limit.js'
import type {
  AuditAnchor,
  AuditDraft,
  AuditEvent,
  ExportRecord,
  ImportCounts,
  KeyRecord,
  MfaRecord,
  SessionLimit,
  SessionRecord,
  Store,
  StoreCharge,
  UserRecord,
} from '../../src/store/store.js'

const T0 = 1_700_000_000_000
const MIN = 60_000
const HASH_T2 = '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g'
const HASH_T3 = '$argon2id$v=19$m=19456,t=3,p=1$c2FsdHNhbHQ$aGFzaGhhc2g'
const T2 = '$argon2id$v=19$m=19456,t=2,p=1'
const T3 = '$argon2id$v=19$m=19456,t=3,p=1'
const policy: SessionPolicy = { idleTtlMs: 60 * MIN, absoluteTtlMs: 24 * 60 * MIN, reuseGraceMs: 10_000 }

const user = (id: string, email: string, extra: Partial<UserRecord> = {}): UserRecord => ({
  id,
  email,
  passwordHash: HASH_T2,
  createdAt: T0,
  updatedAt: T0,
  disabled: false,
  ...extra,
})

const session = (id: string, userId: string, extra: Partial<SessionRecord> = {}): SessionRecord => ({
  id,
  userId,
  createdAt: T0,
  lastUsedAt: T0,
  expiresAt: T0 + policy.absoluteTtlMs,
  ip: '127.0.0.1',
  userAgent: 'conformance',
  refreshHash: `h-${id}`,
  previousHash: null,
  rotatedAt: null,
  generation: 0,
  familyHash: `f-${id}`,
  amr: ['pwd'],
  ...extra,
})

const key = (kid: string, state: KeyRecord['state'], activatedAt: number | null, extra: Partial<KeyRecord> = {}): KeyRecord => ({
  kid,
  alg: 'ES256',
  state,
  ...keyPairOf(kid),
  createdAt: T0,
  activatedAt,
  retiringAt: null,
  retiredAt: null,
  ...extra,
})

/** the mfaToken populate's second step used */
const USED_MFA_TOKEN = { id: 'used-mfa-token', expiresAt: T0 + 5 * MIN }

const mfa: MfaRecord = { secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP', enabledAt: T0, lastStep: 100, recoveryCodes: ['rc-hash-1', 'rc-hash-2'] }

const draft = (event: string, extra: Partial<AuditDraft> = {}): AuditDraft => ({
  at: T0,
  event,
  actor: 'api',
  userId: null,
  email: null,
  sessionId: null,
  ip: null,
  userAgent: null,
  detail: {},
  ...extra,
})

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const x of it) out.push(x)
  return out
}

async function chainOf(store: Store): Promise<{ anchor: AuditAnchor; events: AuditEvent[] }> {
  return store.auditChain(async (anchor, events) => ({ anchor, events: await collect(events) }))
}

/** the seq of the first kept event that does not chain (seq or hash), or undefined */
function brokenAt(anchor: AuditAnchor, events: readonly AuditEvent[]): number | undefined {
  let previous = anchor
  for (const e of events) {
    if (e.seq !== previous.seq + 1 || e.hash !== chainHash(previous.hash, e)) return e.seq
    previous = e
  }
  return undefined
}

/** the names of the events after seq `after`, oldest first */
async function eventsAfter(store: Store, after: number): Promise<string[]> {
  const { events } = await chainOf(store)
  return events.filter((e) => e.seq > after).map((e) => e.event)
}

const lastSeq = async (store: Store): Promise<number> => (await store.auditEvents({ limit: 1 }))[0]?.seq ?? (await store.auditChain(async (anchor) => anchor)).seq

const byId = <T extends { id: string }>(xs: T[]): T[] => [...xs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
const byKid = (xs: KeyRecord[]): KeyRecord[] => [...xs].sort((a, b) => (a.kid < b.kid ? -1 : 1))
/** through JSON and back, as a record travels through an export file */
const asJson = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T

async function* fromArray<T>(xs: readonly T[]): AsyncGenerator<T> {
  for (const x of xs) yield x
}

export async function storeConformance(t: Test, open: () => Promise<{ store: Store; limiter: RateLimiter }>): Promise<void> {
  const opened = async (t: Test): Promise<{ store: Store; limiter: RateLimiter }> => {
    const o = await open()
    t.teardown(() => o.store.close())
    return o
  }
  const fresh = async (t: Test): Promise<Store> => (await opened(t)).store

  /** a session made as the login endpoint makes it, with a real refresh token */
  const login = async (store: Store, id: string, userId: string, at = T0): Promise<string> => {
    const token = newRefreshToken()
    await store.createSession(session(id, userId, { createdAt: at, lastUsedAt: at, refreshHash: hashToken(token), familyHash: familyHashOf(token), rotations: [] }))
    return token
  }
  const refresh = (store: Store, token: string, now = T0): Promise<RefreshOutcome> =>
    store.refreshSession(hashToken(token), (s) => decideRefresh(s, { token, hash: hashToken(token) }, { now, policy }), familyHashOf(token))
  const rotate = async (store: Store, token: string, now = T0): Promise<string> => {
    const out = await refresh(store, token, now)
    if (out.kind !== 'rotated') throw new Error(`expected a rotation, got ${out.kind}`)
    return out.token
  }

  await t.test('identity: backend, location, ping, schema, an empty store', async (t) => {
    const store = await fresh(t)
    t.ok(store.backend === 'lmdb' || store.backend === 'postgres')
    t.type(store.location, 'string')
    t.ok(store.location.length > 0)
    await store.ping()
    t.ok((await store.schemaVersion()) >= 1)
    t.same(await store.listUsers(), [])
    t.same(await store.listSessions(), [])
    t.same(await store.listKeys(), [])
    t.same(await store.hashTally(), {})
    t.same(await chainOf(store), { anchor: GENESIS, events: [] })
    await store.flushed()
  })

  await t.test("updateUser and updateUserEndingSessions for a caller: written only while the caller's session of this user is stored", async (t) => {
    const store = await fresh(t)
    await store.createUser(user('u1', 'ann@example.com'))
    await store.createUser(user('u2', 'bob@example.com'))
    await store.createSession(session('mine', 'u1'))
    await store.createSession(session('other', 'u1'))
    await store.createSession(session('bobs', 'u2'))
    const rename = (u: UserRecord): UserRecord => ({ ...u, updatedAt: u.updatedAt + 1 })
    t.equal((await store.updateUser('u1', rename, [draft('mfa.disable')], 'mine'))?.updatedAt, T0 + 1, 'the caller is there: written')
    t.equal(await store.updateUser('u1', rename, [draft('mfa.disable')], 'bobs'), undefined, "another user's session is no caller of this one")
    t.equal(await store.updateUser('u1', rename, [draft('mfa.disable')], 'nobody'), undefined, 'no such session')
    t.equal((await store.getUser('u1'))!.updatedAt, T0 + 1, 'written once')
    t.equal((await store.auditEvents({ limit: 10 })).length, 1, 'one event')
    await store.revokeSession('mine')
    t.equal(await store.updateUser('u1', rename, [], 'mine'), undefined, 'the caller ended: nothing written')
    t.equal(await store.updateUserEndingSessions('u1', rename, 'mine', [], 'mine'), undefined, 'nor with the sessions ended')
    t.ok(await store.getSession('other'), 'and no session ended')
    t.equal((await store.getUser('u1'))!.updatedAt, T0 + 1)
    t.same(await store.updateUserEndingSessions('u1', rename, 'mine', []), { user: { ...user('u1', 'ann@example.com'), updatedAt: T0 + 2 }, ended: 1 }, 'no caller (an admin\'s change): written, the other sessions end')
  })

  await t.test("createUser with register's first session: both in one write, or neither when the email is taken", async (t) => {
    const store = await fresh(t)
    t.equal(await store.createUser(user('u1', 'ann@example.com'), [draft('register', { userId: 'u1', sessionId: 's1' })], session('s1', 'u1')), true)
    t.same(await store.getUser('u1'), user('u1', 'ann@example.com'))
    t.same(await store.getSession('s1'), session('s1', 'u1'), 'the session with it')
    t.equal(await store.findSessionIdByRefreshHash('h-s1'), 's1', 'with its token entry')
    t.equal(await store.countSessions('u1'), 1)
    t.same((await store.auditEvents({ limit: 10 })).map((e) => [e.event, e.sessionId]), [['register', 's1']])
    t.equal(await store.createUser(user('u2', 'ann@example.com'), [draft('register', { userId: 'u2', sessionId: 's2' })], session('s2', 'u2')), false, 'the email is taken')
    t.equal(await store.getSession('s2'), undefined, "the loser's session is not written")
    t.equal(await store.findSessionIdByRefreshHash('h-s2'), undefined)
    t.equal((await store.auditEvents({ limit: 10 })).length, 1, 'nor its event')
  })

  await t.test('users: create, look up, refuse a second of one email, update, delete', async (t) => {
    const store = await fresh(t)
    const ann = user('u1', 'ann@example.com', { mfa })
    t.equal(await store.createUser(ann), true)
    t.same(await store.getUser('u1'), ann)
    t.same(await store.getUserByEmail('ann@example.com'), ann)
    t.equal(await store.getUser('nobody'), undefined)
    t.equal(await store.getUserByEmail('nobody@example.com'), undefined)
    t.equal(await store.createUser(user('u2', 'ann@example.com')), false, 'the email is taken')
    t.equal(await store.getUser('u2'), undefined, 'and the loser left no record')
    t.equal(await store.createUser(user('u2', 'bob@example.com')), true)
    t.same(byId(await store.listUsers()).map((u) => u.id), ['u1', 'u2'])

    const updated = await store.updateUser('u1', (u) => ({ ...u, disabled: true, updatedAt: T0 + 1 }))
    t.equal(updated?.disabled, true)
    t.same(await store.getUser('u1'), { ...ann, disabled: true, updatedAt: T0 + 1 })
    t.equal(await store.updateUser('nobody', (u) => u), undefined, 'an unknown user')
    await t.rejects(
      store.updateUser('u1', () => {
        throw new Error('changed meanwhile')
      }),
      { message: 'changed meanwhile' },
    )
    t.equal((await store.getUser('u1'))?.disabled, true, 'a change that throws writes nothing')

    // an email change moves the lookup with it
    await store.updateUser('u2', (u) => ({ ...u, email: 'robert@example.com' }))
    t.equal((await store.getUserByEmail('robert@example.com'))?.id, 'u2')
    t.equal(await store.getUserByEmail('bob@example.com'), undefined)

    await store.createSession(session('s1', 'u1'))
    await store.createSession(session('s2', 'u1'))
    await store.createSession(session('s3', 'u2'))
    t.equal(await store.deleteUser('u1'), true)
    t.equal(await store.getUser('u1'), undefined)
    t.equal(await store.getUserByEmail('ann@example.com'), undefined)
    t.same(await store.listSessions('u1'), [], 'its sessions went with it')
    t.equal(await store.getSession('s1'), undefined)
    t.equal(await store.findSessionIdByRefreshHash('h-s1'), undefined, 'with their token entries')
    t.equal(await store.countSessions('u1'), 0)
    t.ok(await store.getSession('s3'), "another user's session stays")
    t.equal(await store.deleteUser('u1'), false, 'twice is harmless')
    t.equal(await store.createUser(user('u3', 'ann@example.com')), true, 'the email is free again')
  })

  await t.test('users: 30 concurrent creations of one email, exactly one wins', async (t) => {
    const store = await fresh(t)
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => store.createUser(user(`u${i}`, 'race@example.com'))))
    t.equal(results.filter(Boolean).length, 1)
    const winner = results.indexOf(true)
    t.equal((await store.getUserByEmail('race@example.com'))?.id, `u${winner}`)
    t.same((await store.listUsers()).map((u) => u.id), [`u${winner}`])
  })

  await t.test('updateUserEndingSessions: the user changes and every other session of theirs ends, in one write', async (t) => {
    const store = await fresh(t)
    await store.createUser(user('u1', 'ann@example.com'))
    await store.createUser(user('u2', 'bob@example.com'))
    for (const id of ['s1', 's2', 's3']) await store.createSession(session(id, 'u1'))
    await store.createSession(session('b1', 'u2'))
    const r = await store.updateUserEndingSessions('u1', (u) => ({ ...u, passwordHash: HASH_T3, updatedAt: T0 + 9 }), 's2')
    t.equal(r?.ended, 2)
    t.equal(r?.user.passwordHash, HASH_T3)
    t.equal((await store.getUser('u1'))?.updatedAt, T0 + 9)
    t.same((await store.listSessions('u1')).map((s) => s.id), ['s2'])
    t.same((await store.sessionEntries({ userId: 'u1', limit: 10 })).map((e) => e.id), ['s2'])
    t.equal(await store.findSessionIdByRefreshHash('h-s1'), undefined)
    t.equal(await store.findSessionIdByRefreshHash('h-s2'), 's2')
    t.same((await store.listSessions('u2')).map((s) => s.id), ['b1'])
    t.same(await store.hashTally(), { [T2]: 1, [T3]: 1 })
    t.equal(await store.updateUserEndingSessions('nobody', (u) => u, 's2'), undefined)
    await t.rejects(
      store.updateUserEndingSessions('u1', () => {
        throw new Error('changed meanwhile')
      }, 'none'),
      { message: 'changed meanwhile' },
    )
    t.same((await store.listSessions('u1')).map((s) => s.id), ['s2'], 'a change that throws ends no session')
  })

  await t.test('hashTally: counted by create, re-hash and delete, not by a refused create', async (t) => {
    const store = await fresh(t)
    await store.createUser(user('u1', 'a@example.com'))
    await store.createUser(user('u2', 'b@example.com', { passwordHash: HASH_T3 }))
    await store.createUser(user('u3', 'c@example.com', { passwordHash: HASH_T3 }))
    t.same(await store.hashTally(), { [T2]: 1, [T3]: 2 })
    await store.updateUser('u2', (u) => ({ ...u, passwordHash: HASH_T2 }))
    t.same(await store.hashTally(), { [T2]: 2, [T3]: 1 }, 're-hashed')
    await store.updateUser('u1', (u) => ({ ...u, disabled: true }))
    t.same(await store.hashTally(), { [T2]: 2, [T3]: 1 }, 'another change leaves it')
    t.equal(await store.createUser(user('u4', 'a@example.com', { passwordHash: HASH_T3 })), false)
    t.same(await store.hashTally(), { [T2]: 2, [T3]: 1 }, 'a refused creation counts nothing')
    await store.deleteUser('u3')
    t.same(await store.hashTally(), { [T2]: 2 }, 'a set with no hash left is gone')
  })

  await t.test('sessions: create, read, list, count and walk the index in pages', async (t) => {
    const store = await fresh(t)
    for (const id of ['s1', 's2', 's3', 's4', 's5']) await store.createSession(session(id, 'u1', { lastUsedAt: T0 + Number(id.slice(1)) }))
    await store.createSession(session('t1', 'u2'))
    t.same(await store.getSession('s3'), session('s3', 'u1', { lastUsedAt: T0 + 3 }))
    t.equal(await store.getSession('nope'), undefined)
    t.same((await store.getSessions(['s2', 'nope', 't1'])).map((s) => s?.id), ['s2', undefined, 't1'])
    t.same(byId(await store.listSessions('u1')).map((s) => s.id), ['s1', 's2', 's3', 's4', 's5'])
    t.same(byId(await store.listSessions()).map((s) => s.id), ['s1', 's2', 's3', 's4', 's5', 't1'])
    t.equal(await store.countSessions('u1'), 5)
    t.equal(await store.countSessions('u9'), 0)

    const walked: string[] = []
    let after: { userId: string; id: string } | undefined
    for (let page = 0; page < 10; page++) {
      const entries = await store.sessionEntries({ limit: 2, ...(after === undefined ? {} : { after }) })
      if (entries.length === 0) break
      t.ok(entries.length <= 2, 'a page holds at most its limit')
      walked.push(...entries.map((e) => `${e.userId}/${e.id}`))
      after = entries[entries.length - 1]!
    }
    t.same(walked, ['u1/s1', 'u1/s2', 'u1/s3', 'u1/s4', 'u1/s5', 'u2/t1'], 'by user, then id, each once')
    const first = (await store.sessionEntries({ userId: 'u1', limit: 1 }))[0]
    t.same(first, { id: 's1', userId: 'u1', createdAt: T0, lastUsedAt: T0 + 1, expiresAt: T0 + policy.absoluteTtlMs, sealed: false })
    t.same((await store.sessionEntries({ userId: 'u1', after: { userId: 'u1', id: 's3' }, limit: 10 })).map((e) => e.id), ['s4', 's5'])
    t.same(await store.sessionEntries({ userId: 'u2', after: { userId: 'u2', id: 't1' }, limit: 10 }), [])
  })

  await t.test('sessions: createSession with a limit ends the oldest live ones beyond it, not the expired', async (t) => {
    const store = await fresh(t)
    const now = T0 + 10
    const limit = (max: number): SessionLimit => ({ max, now, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs })
    await store.createSession(session('s1', 'u1', { lastUsedAt: T0 + 1 }))
    await store.createSession(session('s2', 'u1', { lastUsedAt: T0 + 2 }))
    await store.createSession(session('old', 'u1', { lastUsedAt: T0, expiresAt: T0 + 5 }))
    await store.createSession(session('x1', 'u2', { lastUsedAt: T0 }))
    const ended = await store.createSession(session('s3', 'u1', { lastUsedAt: now }), limit(2))
    t.same(ended, [{ id: 's1', userId: 'u1', createdAt: T0, lastUsedAt: T0 + 1, expiresAt: T0 + policy.absoluteTtlMs, sealed: false }])
    t.equal(await store.getSession('s1'), undefined)
    t.equal(await store.findSessionIdByRefreshHash('h-s1'), undefined, 'with its token entries')
    t.ok(await store.getSession('old'), 'an expired session neither counts nor is ended')
    t.ok(await store.getSession('x1'), "another user's session stays")
    const more = await store.createSession(session('s4', 'u1', { lastUsedAt: now }), limit(1))
    t.same(more.map((e) => e.id).sort(), ['s2', 's3'])
    t.same(byId(await store.listSessions('u1')).map((s) => s.id), ['old', 's4'])
    t.same(await store.createSession(session('s5', 'u2'), limit(5)), [], 'under the limit nothing ends')
  })

  await t.test('sessions: createSession with room under its limit writes the session and its events, ending none; idle and expired ones do not count', async (t) => {
    const store = await fresh(t)
    const now = T0 + policy.idleTtlMs + 10
    const limit: SessionLimit = { max: 2, now, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs }
    await store.createSession(session('idle', 'u1', { lastUsedAt: T0 }))
    await store.createSession(session('gone', 'u1', { lastUsedAt: now - 1, expiresAt: now }))
    await store.createSession(session('live', 'u1', { lastUsedAt: now - 1 }))
    const ended = await store.createSession(session('new', 'u1', { lastUsedAt: now }), limit, {
      events: [draft('login.success')],
      evicted: (e) => draft('session.evict', { sessionId: e.id }),
    })
    t.same(ended, [], 'one live session and a limit of 2: room for the new one')
    t.same(byId(await store.listSessions('u1')).map((s) => s.id), ['gone', 'idle', 'live', 'new'], 'nothing ended')
    t.equal(await store.findSessionIdByRefreshHash('h-new'), 'new', 'with its token entry')
    t.same((await store.auditEvents({ limit: 10 })).map((e) => e.event), ['login.success'], 'its event, no eviction')
    const full = await store.createSession(session('newer', 'u1', { lastUsedAt: now }), limit)
    t.same(full.map((e) => e.id), ['live'], 'at the limit the oldest live one ends')
  })

  await t.test('createSessionFor writes only while the user is there, enabled and holds the password checked; else nothing, at room and at the bound alike', async (t) => {
    const store = await fresh(t)
    const now = T0 + 10
    const holder = { passwordHash: HASH_T2 }
    const audit = { events: [draft('login.success')], evicted: (e: { id: string }) => draft('session.evict', { sessionId: e.id }) }
    for (const max of [5, 1]) {
      // max 1 with a live session already there: the path that decides evictions
      const limit: SessionLimit = { max, now, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs }
      const tag = `max ${max}`
      await store.createUser(user(`u-${max}`, `ann-${max}@example.com`))
      await store.createSession(session(`first-${max}`, `u-${max}`, { lastUsedAt: now - 1 }))
      const ended = await store.createSessionFor(holder, session(`ok-${max}`, `u-${max}`, { lastUsedAt: now }), limit, audit)
      t.same(ended?.map((e) => e.id), max === 1 ? [`first-${max}`] : [], `${tag}: held, written (at the bound, the oldest ended)`)
      t.ok(await store.getSession(`ok-${max}`), `${tag}: the session is there`)

      const before = (await store.auditEvents({ limit: 100 })).length
      await store.updateUser(`u-${max}`, (u) => ({ ...u, passwordHash: HASH_T3 }))
      t.equal(await store.createSessionFor(holder, session(`changed-${max}`, `u-${max}`, { lastUsedAt: now }), limit, audit), undefined, `${tag}: the password changed: refused`)
      t.equal(await store.getSession(`changed-${max}`), undefined, `${tag}: no session written`)
      t.equal(await store.findSessionIdByRefreshHash(`h-changed-${max}`), undefined, `${tag}: no token entry`)
      t.ok(await store.getSession(`ok-${max}`), `${tag}: no session ended`)
      t.equal((await store.auditEvents({ limit: 100 })).length, before, `${tag}: no event`)

      await store.updateUser(`u-${max}`, (u) => ({ ...u, passwordHash: HASH_T2, disabled: true }))
      t.equal(await store.createSessionFor(holder, session(`disabled-${max}`, `u-${max}`, { lastUsedAt: now }), limit, audit), undefined, `${tag}: disabled: refused`)
      t.equal(await store.getSession(`disabled-${max}`), undefined, `${tag}: disabled: none written`)

      await store.updateUser(`u-${max}`, (u) => ({ ...u, disabled: false }))
      t.same(await store.createSessionFor(holder, session(`again-${max}`, `u-${max}`, { lastUsedAt: now }), { ...limit, max: 10 }, audit), [], `${tag}: held again, written`)
    }
    t.equal(await store.createSessionFor(holder, session('nobody', 'u-none'), { max: 5, now, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs }, audit), undefined, 'no such user: refused')
    t.equal(await store.getSession('nobody'), undefined)
  })

  await t.test('refreshSession: the decision sees the session by its token hash, a predecessor or its family', async (t) => {
    const store = await fresh(t)
    await store.createSession(session('s1', 'u1', { familyHash: 'f-s1' }))
    await store.createSession(session('s2', 'u1'))
    const seen: Array<string | undefined> = []
    const none = async (hash: string, family?: string): Promise<void> => {
      await store.refreshSession(hash, (s) => (seen.push(s?.id), { action: 'none', result: undefined }), family)
    }
    await none('h-s1')
    await none('unknown')
    await none('unknown', 'f-s1')
    await none('unknown', 'f-unknown')
    t.same(seen, ['s1', undefined, 's1', undefined])

    const rotated = await store.refreshSession('h-s1', (s) => ({
      action: 'rotate',
      session: { ...s!, refreshHash: 'h-s1b', previousHash: s!.refreshHash, rotatedAt: T0 + 1, lastUsedAt: T0 + 1, generation: 1 },
      result: 'rotated',
    }))
    t.equal(rotated, 'rotated')
    t.equal((await store.getSession('s1'))?.refreshHash, 'h-s1b')
    t.equal(await store.findSessionIdByRefreshHash('h-s1b'), 's1', 'the new token')
    t.equal(await store.findSessionIdByRefreshHash('h-s1'), 's1', 'the one it replaced (a recent predecessor)')
    t.equal(await store.findSessionIdByRefreshHash('nope', 'f-s1'), 's1', 'the family')
    t.equal((await store.sessionEntries({ userId: 'u1', limit: 1 }))[0]?.lastUsedAt, T0 + 1, 'the index follows')

    await t.rejects(
      store.refreshSession('h-s1b', () => {
        throw new Error('boom')
      }),
      { message: 'boom' },
    )
    t.equal((await store.getSession('s1'))?.refreshHash, 'h-s1b', 'a decision that throws changes nothing')

    t.equal(await store.refreshSession('h-s1', () => ({ action: 'revoke', result: 'reuse' })), 'reuse')
    t.equal(await store.getSession('s1'), undefined, 'revoke ends the session')
    for (const h of ['h-s1', 'h-s1b']) t.equal(await store.findSessionIdByRefreshHash(h), undefined, 'and every token entry of it')
    t.equal(await store.findSessionIdByRefreshHash('nope', 'f-s1'), undefined, 'its family too')
    t.same((await store.listSessions('u1')).map((s) => s.id), ['s2'])
    t.equal(await store.refreshSession('h-s1', () => ({ action: 'revoke', result: 'gone' })), 'gone', 'a revoke of nothing is harmless')
  })

  await t.test("refreshSession: the decision is given the session's user, read with it", async (t) => {
    const store = await fresh(t)
    await store.createUser(user('u1', 'ann@example.com'))
    await store.createSession(session('s1', 'u1'))
    await store.createSession(session('s9', 'u-gone'))
    const given: Array<[string | undefined, string | undefined]> = []
    const look = (hash: string) => store.refreshSession(hash, (s, u) => (given.push([s?.id, u?.email]), { action: 'none', result: undefined }))
    await look('h-s1')
    await look('h-s9')
    await look('unknown')
    t.same(given, [['s1', 'ann@example.com'], ['s9', undefined], [undefined, undefined]], 'the user, none for a session whose user is gone, none without a session')
    await store.updateUser('u1', (u) => ({ ...u, email: 'ann.b@example.com', disabled: true }))
    const rotated = await store.refreshSession('h-s1', (s, u) => ({ action: 'rotate', session: { ...s!, refreshHash: 'h-s1b', generation: 1 }, result: [u?.email, u?.disabled] }))
    t.same(rotated, ['ann.b@example.com', true], 'as stored now')
  })

  await t.test('refreshSession with the real decision: grace by hash and by family, reuse ends the session, concurrency', async (t) => {
    const store = await fresh(t)
    const rt0 = await login(store, 'sa', 'u1')
    const other = await login(store, 'sb', 'u1')
    const rt1 = await rotate(store, rt0, T0 + 1000)
    const grace = await refresh(store, rt0, T0 + 2000)
    t.equal(grace.kind, 'grace', 'the replaced token within the grace')
    t.equal(grace.kind === 'grace' ? grace.token : '', rt1, 'answers the live one')

    const chain = [rt1]
    for (let i = 0; i < 40; i++) chain.push(await rotate(store, chain[chain.length - 1]!, T0 + 3000 + i))
    t.equal((await store.getSession('sa'))?.generation, 41)
    t.equal(await store.findSessionIdByRefreshHash(hashToken(rt0), familyHashOf(rt0)), 'sa', 'the login token is known by its family')
    t.equal((await refresh(store, rt0, T0 + 10 * MIN)).kind, 'reuse', 'presented again, 41 rotations on')
    t.equal(await store.getSession('sa'), undefined)
    t.equal((await refresh(store, chain[40]!, T0 + 10 * MIN)).kind, 'unknown', 'the live token went with it')
    t.ok(await store.getSession('sb'), 'another session untouched')

    const outs = await Promise.all(Array.from({ length: 20 }, () => refresh(store, other, T0 + 5000)))
    t.equal(outs.filter((o) => o.kind === 'rotated').length, 1, 'twenty at once: one rotation')
    t.equal(outs.filter((o) => o.kind === 'grace').length, 19, 'the rest inside the grace')
    t.equal(new Set(outs.map((o) => ('token' in o ? o.token : ''))).size, 1, 'one successor for all')
  })

  await t.test('refreshSession with a charge: counted where the limiter counts, before the decision; refused, nothing is decided or written', async (t) => {
    const { store, limiter } = await opened(t)
    const rule = { count: 2, windowMs: 60_000, text: '2/1m' }
    const entries = [{ key: 'refresh_ip:conformance', rule }]
    type Charged = RefreshOutcome | { kind: 'refused'; retryAfterS: number; firstBlock: boolean }
    const charge: StoreCharge<Charged> = { limiter, entries, refused: (r) => ({ kind: 'refused', retryAfterS: r.retryAfterS, firstBlock: r.firstBlock }) }
    let decided = 0
    const charged = (token: string, now: number): Promise<Charged> =>
      store.refreshSession<Charged>(
        hashToken(token),
        (s) => {
          decided++
          return decideRefresh(s, { token, hash: hashToken(token) }, { now, policy })
        },
        familyHashOf(token),
        charge,
      )
    const successor = (out: Charged): string => (out.kind === 'rotated' ? out.token : '')

    const rt0 = await login(store, 'sc', 'u1')
    const rt1 = successor(await charged(rt0, T0 + 1000))
    t.not(rt1, '', 'the first charge made: the token rotates')
    t.equal((await charged(newRefreshToken(), T0 + 1100)).kind, 'unknown', 'an unknown token is charged too, and decided as unknown')
    t.equal(decided, 2)
    const direct = await limiter.consume(entries)
    t.ok(!direct.ok && direct.firstBlock, "the two charges were counted where the limiter counts: its own consume is refused, the window's first block")

    const refused = await charged(rt1, T0 + 2000)
    t.ok(refused.kind === 'refused' && !refused.firstBlock, 'a charge over the limit is refused (not a first block: the consume above was)')
    t.equal(decided, 2, 'nothing was decided')
    t.equal((await store.getSession('sc'))?.refreshHash, hashToken(rt1), 'the session is as the first refresh left it')

    // a new window: the charge's own refusal is the first block, with a Retry-After within it
    await limiter.reset(entries[0]!.key)
    const rt2 = successor(await charged(rt1, T0 + 3000))
    t.not(rt2, '', 'once the limit is cleared, the same token rotates')
    t.equal((await charged(newRefreshToken(), T0 + 3100)).kind, 'unknown')
    const first = await charged(rt2, T0 + 4000)
    t.equal(first.kind, 'refused', 'the third charge of a limit of two: refused')
    t.ok(first.kind === 'refused' && first.firstBlock, "the charge's refusal says it is the window's first block")
    t.ok(first.kind === 'refused' && first.retryAfterS >= 1 && first.retryAfterS <= 60, 'with a Retry-After within the window')
    t.equal(decided, 4, 'the refused one decided nothing')
    t.equal((await store.getSession('sc'))?.refreshHash, hashToken(rt2))
  })

  await t.test('updateSession, sweepSessions and the revocations', async (t) => {
    const store = await fresh(t)
    for (const id of ['s1', 's2', 's3']) await store.createSession(session(id, 'u1'))
    for (const id of ['t1', 't2']) await store.createSession(session(id, 'u2'))
    const touched = await store.updateSession('s1', (s) => ({ ...s, lastUsedAt: T0 + 7, amr: ['pwd', 'otp', 'mfa'] }))
    t.equal(touched?.lastUsedAt, T0 + 7)
    t.same((await store.getSession('s1'))?.amr, ['pwd', 'otp', 'mfa'])
    t.equal((await store.sessionEntries({ userId: 'u1', limit: 1 }))[0]?.lastUsedAt, T0 + 7, 'the index follows')
    t.equal((await store.updateSession('s1', () => undefined))?.lastUsedAt, T0 + 7, 'undefined leaves it as it is')
    t.equal(await store.updateSession('nope', (s) => s), undefined)
    t.equal(await store.findSessionIdByRefreshHash('h-s1'), 's1', 'its token entry stays')

    const swept = await store.sweepSessions(['s1', 's2', 's3', 'nope'], (s) =>
      s.id === 's1' ? 'delete' : s.id === 's2' ? { ...s, rotations: [{ at: T0, sealed: 'y' }] } : undefined,
    )
    t.equal(swept, 1)
    t.equal(await store.getSession('s1'), undefined)
    t.equal(await store.findSessionIdByRefreshHash('h-s1'), undefined)
    t.equal((await store.sessionEntries({ userId: 'u1', limit: 1 }))[0]?.sealed, true, 'the index says s2 holds seals')

    t.equal(await store.revokeSession('s2'), true)
    t.equal(await store.revokeSession('s2'), false, 'twice is harmless')
    t.equal(await store.findSessionIdByRefreshHash('h-s2'), undefined)
    t.equal(await store.revokeUserSessions('u2'), 2)
    t.equal(await store.revokeUserSessions('u2'), 0)
    t.equal(await store.countSessions('u2'), 0)
    t.equal(await store.findSessionIdByRefreshHash('h-t1'), undefined)
    await store.createSession(session('t3', 'u2'))
    t.equal(await store.revokeAllSessions(), 2)
    t.same(await store.listSessions(), [])
    t.same(await store.sessionEntries({ limit: 10 }), [])
  })

  await t.test('keys: ensureActiveKey, rotateKey next and now, putKey, deleteKey, keysVersion', async (t) => {
    const store = await fresh(t)
    const versions = [await store.keysVersion()]
    const moved = async (what: string): Promise<void> => {
      const v = await store.keysVersion()
      t.notOk(versions.includes(v), `${what} moves keysVersion`)
      versions.push(v)
    }
    let made = 0
    const k1 = await store.ensureActiveKey(() => (made++, key('k1', 'active', T0)))
    t.equal(k1.kid, 'k1')
    await moved('ensureActiveKey')
    const again = await Promise.all([store.ensureActiveKey(() => (made++, key('kx', 'active', T0))), store.ensureActiveKey(() => (made++, key('ky', 'active', T0)))])
    t.same(again.map((k) => k.kid), ['k1', 'k1'], 'an active key exists: it is kept')
    t.equal(made, 1)
    t.equal(await store.keysVersion(), versions.at(-1), 'and nothing moved')

    const next = await store.rotateKey(key('k2', 'next', T0 + 5 * MIN), T0)
    t.equal(next.state, 'next', 'a next key waits while a key signs')
    t.equal(next.activatedAt, T0 + 5 * MIN)
    await moved('rotateKey (next)')
    t.same(byKid(await store.listKeys()).map((k) => `${k.kid}:${k.state}`), ['k1:active', 'k2:next'])

    const now = await store.rotateKey(key('k3', 'active', null), T0 + MIN)
    t.equal(now.state, 'active')
    t.equal(now.activatedAt, T0 + MIN)
    await moved('rotateKey (now)')
    const keys = byKid(await store.listKeys())
    t.same(keys.map((k) => `${k.kid}:${k.state}`), ['k1:retiring', 'k3:active'], 'the signer retires and the waiting next key is replaced')
    t.equal(keys[0]!.retiringAt, T0 + MIN)
    t.same(await store.getKey('k3'), now)
    t.equal(await store.getKey('k2'), undefined)

    await store.putKey({ ...keys[0]!, state: 'retired', retiredAt: T0 + 2 * MIN })
    await moved('putKey')
    t.equal((await store.getKey('k1'))?.state, 'retired')
    t.equal(await store.deleteKey('k1'), true)
    await moved('deleteKey')
    t.equal(await store.deleteKey('k1'), false)
    t.equal(await store.getKey('k1'), undefined)
  })

  await t.test('keys: a next key on a store where nothing signs is active at once; many first starts make one key', async (t) => {
    const store = await fresh(t)
    const first = await store.rotateKey(key('k1', 'next', T0 + 5 * MIN), T0)
    t.equal(first.state, 'active')
    t.equal(first.activatedAt, T0)
    const other = await fresh(t)
    let made = 0
    const keys = await Promise.all(Array.from({ length: 10 }, (_, i) => other.ensureActiveKey(() => (made++, key(`k${i}`, 'active', T0)))))
    t.equal(new Set(keys.map((k) => k.kid)).size, 1)
    t.equal((await other.listKeys()).length, 1)
  })

  await t.test('meRead: records, the version after each kind of write, and the cached sessions', async (t) => {
    const store = await fresh(t)
    await store.createUser(user('u1', 'ann@example.com'))
    await store.createSession(session('s1', 'u1', { lastUsedAt: T0 + 1 }))
    await store.createSession(session('s2', 'u9'))
    const all = new Set<string>()
    const read = await store.meRead(['s1', 's2', 'nope'], NaN, all)
    t.same(read.records.get('s1'), {
      userId: 'u1',
      createdAt: T0,
      expiresAt: T0 + policy.absoluteTtlMs,
      lastUsedAt: T0 + 1,
      user: { id: 'u1', email: 'ann@example.com', disabled: false, mfaEnabled: false },
    })
    t.same(read.records.get('s2'), { userId: 'u9', createdAt: T0, expiresAt: T0 + policy.absoluteTtlMs, lastUsedAt: T0, user: undefined }, 'a session whose user is gone')
    t.ok(read.records.has('nope'), 'an unknown session is answered')
    t.equal(read.records.get('nope'), undefined)
    t.equal(read.keysVersion, await store.keysVersion())

    // unchanged: the cached sessions may be left out, the others never are
    const same = await store.meRead(['s1', 's2'], read.version, new Set(['s1']))
    t.ok(same.records.has('s2'), 'a session not cached is read')
    if (same.version === read.version && same.records.has('s1')) t.same(same.records.get('s1'), read.records.get('s1'))

    let known = (await store.meRead([], NaN, all)).version
    let k = 0
    const writes: Array<[string, () => Promise<unknown>, (r: Awaited<ReturnType<Store['meRead']>>) => void]> = [
      ['updateUser', () => store.updateUser('u1', (u) => ({ ...u, disabled: true })), (r) => t.equal(r.records.get('s1')?.user?.disabled, true)],
      ['finishMfaStep', () => store.finishMfaStep({ id: 'm1', expiresAt: T0 + MIN }, 'u1', T0, (u) => ({ action: 'use', user: { ...u!, mfa }, result: 1 })), (r) => t.equal(r.records.get('s1')?.user?.mfaEnabled, true)],
      ['updateSession', () => store.updateSession('s1', (s) => ({ ...s, lastUsedAt: T0 + 50 })), (r) => t.equal(r.records.get('s1')?.lastUsedAt, T0 + 50)],
      [
        'refreshSession',
        () => store.refreshSession('h-s1', (s) => ({ action: 'rotate', session: { ...s!, refreshHash: 'h-s1b', generation: 1, lastUsedAt: T0 + 60 }, result: 1 })),
        (r) => t.equal(r.records.get('s1')?.lastUsedAt, T0 + 60),
      ],
      ['createUser', () => store.createUser(user('u9', 'zed@example.com')), (r) => t.equal(r.records.get('s2')?.user?.email, 'zed@example.com')],
      ['rotateKey', () => store.rotateKey(key(`k${++k}`, 'active', null), T0), (r) => t.ok(r.keysVersion > 0)],
      ['createSession', () => store.createSession(session('s3', 'u1')), (r) => t.equal(r.records.get('s3')?.userId, 'u1')],
      ['revokeSession', () => store.revokeSession('s1'), (r) => t.equal(r.records.get('s1'), undefined)],
      ['deleteUser', () => store.deleteUser('u9'), (r) => t.equal(r.records.get('s2')?.user, undefined)],
      ['revokeAllSessions', () => store.revokeAllSessions(), (r) => t.equal(r.records.get('s2'), undefined)],
    ]
    for (const [name, write, check] of writes) {
      const before = await store.meRead(['s1', 's2', 's3'], known, all)
      known = before.version
      await write()
      // the caller holds every session as read at `known`: after a write none may be left out
      const after = await store.meRead(['s1', 's2', 's3'], known, new Set(['s1', 's2', 's3']))
      t.not(after.version, known, `${name} moves the version`)
      t.same([...after.records.keys()].sort(), ['s1', 's2', 's3'], `after ${name} every session is read again`)
      check(after)
      t.equal(after.keysVersion, await store.keysVersion())
      known = after.version
    }
  })

  await t.test('mfa: the second step uses a token once; expired token records go; the keys are made once', async (t) => {
    const store = await fresh(t)
    await store.createUser(user('u1', 'ann@example.com', { mfa }))
    const token = { id: 'm1', expiresAt: T0 + 5 * MIN }
    const step = (now = T0, tok = token) =>
      store.finishMfaStep(tok, 'u1', now, (u, used) =>
        u === undefined ? { action: 'none', result: 'no user' } : used ? { action: 'none', result: 'used' } : { action: 'use', user: { ...u, mfa: { ...u.mfa!, lastStep: u.mfa!.lastStep + 1 } }, result: 'ok' },
      )
    t.equal(await store.mfaTokenUsed('m1', token.expiresAt), false)
    const results = await Promise.all([step(), step(), step()])
    t.same(results.sort(), ['ok', 'used', 'used'], 'three at once: one wins')
    t.equal((await store.getUser('u1'))?.mfa?.lastStep, 101, 'the winner stored the user')
    t.equal(await store.mfaTokenUsed('m1', token.expiresAt), true)
    t.equal(await store.finishMfaStep(token, 'nobody', T0, (u) => ({ action: 'none', result: u === undefined })), true, 'an unknown user is undefined')
    await step(T0 + 6 * MIN, { id: 'm2', expiresAt: T0 + 11 * MIN })
    t.equal(await store.mfaTokenUsed('m1', token.expiresAt), false, 'the record of a token expired by now is dropped')
    t.equal(await store.mfaTokenUsed('m2', T0 + 11 * MIN), true)

    let made = 0
    const device = await Promise.all([store.ensureDeviceKey(() => `device-${++made}`), store.ensureDeviceKey(() => `device-${++made}`)])
    t.equal(new Set(device).size, 1)
    t.equal(made, 1)
    t.equal(await store.ensureDeviceKey(() => 'another'), device[0], 'and kept')
    const mfaKey = await store.ensureMfaKey(() => 'mfa-key-1')
    t.equal(mfaKey, 'mfa-key-1')
    t.equal(await store.ensureMfaKey(() => 'mfa-key-2'), 'mfa-key-1')
    t.equal(await store.ensureDeviceKey(() => 'x'), device[0], 'the two keys are apart')
  })

  await t.test('limit clears: numbered requests, read after a seq', async (t) => {
    const store = await fresh(t)
    t.same(await store.limitClearsAfter(0), [])
    t.equal(await store.addLimitClear({ email: 'ann@example.com' }, T0), 1)
    t.equal(await store.addLimitClear({ ipKey: '203.0.113.7' }, T0 + 1), 2)
    t.equal(await store.addLimitClear({ email: 'bob@example.com' }, T0 + 2), 3)
    t.same(await store.limitClearsAfter(1), [
      { seq: 2, target: { ipKey: '203.0.113.7' }, at: T0 + 1 },
      { seq: 3, target: { email: 'bob@example.com' }, at: T0 + 2 },
    ])
    t.same(await store.limitClearsAfter(3), [])
  })

  await t.test('audit: a write given events writes them if and only if it changed something', async (t) => {
    const store = await fresh(t)
    const cases: Array<[string, () => Promise<unknown>, string[]]> = [
      ['createUser', () => store.createUser(user('u1', 'ann@example.com'), [draft('register')]), ['register']],
      ['createUser of a taken email', () => store.createUser(user('u2', 'ann@example.com'), [draft('admin.user.add')]), []],
      ['updateUser', () => store.updateUser('u1', (u) => ({ ...u, disabled: true }), [draft('admin.user.disable')]), ['admin.user.disable']],
      ['updateUser of a gone user', () => store.updateUser('nobody', (u) => u, [draft('admin.user.disable')]), []],
      ['createSession', () => store.createSession(session('s1', 'u1'), undefined, { events: [draft('login.success')] }), ['login.success']],
      ['createSession', () => store.createSession(session('s2', 'u1', { lastUsedAt: T0 + 1 }), undefined, { events: [] }), []],
      [
        'createSession ending two',
        () =>
          store.createSession(session('s3', 'u1', { lastUsedAt: T0 + 2 }), { max: 1, now: T0 + 2, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs }, {
            events: [draft('login.success')],
            evicted: (e) => draft('session.evict', { sessionId: e.id, userId: e.userId }),
          }),
        ['login.success', 'session.evict', 'session.evict'],
      ],
      ['updateSession', () => store.updateSession('s3', (s) => ({ ...s, amr: ['pwd'] }), [draft('mfa.enable')]), ['mfa.enable']],
      ['updateSession left as it is', () => store.updateSession('s3', () => undefined, [draft('mfa.enable')]), []],
      ['updateSession of a gone session', () => store.updateSession('nope', (s) => s, [draft('mfa.enable')]), []],
      [
        'refreshSession rotate',
        () => store.refreshSession('h-s3', (s) => ({ action: 'rotate', session: { ...s!, refreshHash: 'h-s3b', generation: 1 }, result: 0, audit: [draft('refresh')] })),
        ['refresh'],
      ],
      ['refreshSession none', () => store.refreshSession('nope', () => ({ action: 'none', result: 0, audit: [draft('refresh.unknown')] })), ['refresh.unknown']],
      ['refreshSession none without events', () => store.refreshSession('nope', () => ({ action: 'none', result: 0 })), []],
      ['refreshSession revoke', () => store.refreshSession('h-s3b', () => ({ action: 'revoke', result: 0, audit: [draft('refresh.reuse')] })), ['refresh.reuse']],
      [
        'finishMfaStep use',
        () => store.finishMfaStep({ id: 'm1', expiresAt: T0 + MIN }, 'u1', T0, (u) => ({ action: 'use', user: u!, result: 0, audit: [draft('mfa.success')] })),
        ['mfa.success'],
      ],
      [
        'finishMfaStep none',
        () => store.finishMfaStep({ id: 'm2', expiresAt: T0 + MIN }, 'u1', T0, () => ({ action: 'none', result: 0, audit: [draft('mfa.failure')] })),
        ['mfa.failure'],
      ],
      ['updateUserEndingSessions that changes nothing', () => store.updateUserEndingSessions('u1', (u) => u, 'none', [draft('password.change')]), []],
      ['updateUserEndingSessions', () => store.updateUserEndingSessions('u1', (u) => ({ ...u, updatedAt: u.updatedAt + 1 }), 'none', [draft('password.change')]), ['password.change']],
      ['updateUser that changes nothing', () => store.updateUser('u1', (u) => u, [draft('admin.user.enable')]), []],
      ['updateUserEndingSessions of a gone user', () => store.updateUserEndingSessions('nobody', (u) => u, 'none', [draft('password.change')]), []],
      ['revokeSession of a missing session', () => store.revokeSession('nope', [draft('session.revoke')]), []],
      ['revokeSession', async () => (await store.createSession(session('s4', 'u1')), store.revokeSession('s4', [draft('logout')])), ['logout']],
      ['revokeUserSessions of none', () => store.revokeUserSessions('u1', [draft('admin.sessions.revoke')]), []],
      ['revokeUserSessions', async () => (await store.createSession(session('s5', 'u1')), store.revokeUserSessions('u1', [draft('admin.sessions.revoke')])), ['admin.sessions.revoke']],
      ['revokeAllSessions of none', () => store.revokeAllSessions([draft('admin.sessions.revoke')]), []],
      ['revokeAllSessions', async () => (await store.createSession(session('s6', 'u1')), store.revokeAllSessions([draft('admin.sessions.revoke')])), ['admin.sessions.revoke']],
      ['putKey', () => store.putKey(key('k0', 'retired', null), [draft('admin.keys.put')]), ['admin.keys.put']],
      ['rotateKey', () => store.rotateKey(key('k1', 'active', null), T0, [draft('admin.keys.rotate')]), ['admin.keys.rotate']],
      ['deleteKey of a missing key', () => store.deleteKey('nope', [draft('admin.keys.revoke')]), []],
      ['deleteKey', () => store.deleteKey('k0', [draft('admin.keys.revoke')]), ['admin.keys.revoke']],
      ['addLimitClear', () => store.addLimitClear({ email: 'ann@example.com' }, T0, [draft('admin.limits.clear')]), ['admin.limits.clear']],
      ['appendAudit', () => store.appendAudit([draft('login.failure'), draft('rate_limit.block')]), ['login.failure', 'rate_limit.block']],
      ['appendAudit of nothing', () => store.appendAudit([]), []],
      ['deleteUser of a gone user', () => store.deleteUser('nobody', [draft('admin.user.rm')]), []],
      ['deleteUser', () => store.deleteUser('u1', [draft('admin.user.rm')]), ['admin.user.rm']],
    ]
    let seq = 0
    for (const [name, write, expected] of cases) {
      await write()
      t.same(await eventsAfter(store, seq), expected, name)
      seq += expected.length
      t.equal(await lastSeq(store), seq, `${name}: the seqs go on without a gap`)
    }
    const { anchor, events } = await chainOf(store)
    t.same(anchor, GENESIS)
    t.same(
      events.map((e) => e.seq),
      Array.from({ length: seq }, (_, i) => i + 1),
      'seq 1, 2, 3… without gaps',
    )
    t.equal(brokenAt(anchor, events), undefined, 'the chain verifies')
    const evictions = events.filter((e) => e.event === 'session.evict')
    t.same(evictions.map((e) => e.sessionId).sort(), ['s1', 's2'], 'one event per ended session, made by `evicted`')
  })

  await t.test('audit: an event as kept, and a chain that breaks where an event is changed', async (t) => {
    const store = await fresh(t)
    await store.appendAudit([
      draft('login.failure', { at: T0 + 5, email: 'ann@example.com', ip: '203.0.113.7', userAgent: 'curl/8', detail: { reason: 'bad_password', nested: { b: 1, a: [1, 'x'] } } }),
      draft('register', { at: T0 + 6, actor: 'authctl:root', userId: 'u1', sessionId: 's1' }),
    ])
    const { anchor, events } = await chainOf(store)
    const [first, second] = events
    t.same(first, {
      seq: 1,
      time: new Date(T0 + 5).toISOString(),
      event: 'login.failure',
      actor: 'api',
      userId: null,
      email: 'ann@example.com',
      sessionId: null,
      ip: '203.0.113.7',
      userAgent: 'curl/8',
      detail: { reason: 'bad_password', nested: { b: 1, a: [1, 'x'] } },
      hash: first!.hash,
    })
    t.match(first!.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    t.equal(first!.hash, chainHash(GENESIS.hash, first!), 'the first chains to 64 zeros')
    t.equal(second!.hash, chainHash(first!.hash, second!))
    t.equal(second!.actor, 'authctl:root')
    t.equal(brokenAt(anchor, [{ ...first!, detail: { reason: 'unknown_user' } }, second!]), 1, 'a changed event breaks the chain')
    t.equal(brokenAt(anchor, [second!]), 2, 'so does a removed one')
    t.same(await store.auditEvents({ limit: 10 }), [second, first], 'auditEvents gives the events as kept, newest first')
  })

  await t.test('audit: auditEvents pages newest first, with before, limit and the filters', async (t) => {
    const store = await fresh(t)
    const plan: Array<[string, string | null, number]> = [
      ['login.success', 'u1', T0],
      ['login.failure', null, T0 + 1000],
      ['login.success', 'u2', T0 + 2000],
      ['logout', 'u1', T0 + 3000],
      ['login.success', 'u1', T0 + 4000],
      ['login.failure', 'u1', T0 + 5000],
    ]
    for (const [event, userId, at] of plan) await store.appendAudit([draft(event, { userId, at })])
    const seqs = async (q: Parameters<Store['auditEvents']>[0]): Promise<number[]> => (await store.auditEvents(q)).map((e) => e.seq)
    t.same(await seqs({ limit: 100 }), [6, 5, 4, 3, 2, 1])
    t.same(await seqs({ limit: 2 }), [6, 5])
    t.same(await seqs({ limit: 2, before: 5 }), [4, 3])
    t.same(await seqs({ limit: 10, before: 1 }), [])
    t.same(await seqs({ limit: 0 }), [])
    t.same(await seqs({ limit: 10, userId: 'u1' }), [6, 5, 4, 1])
    t.same(await seqs({ limit: 2, userId: 'u1', before: 5 }), [4, 1])
    t.same(await seqs({ limit: 10, event: 'login.success' }), [5, 3, 1])
    t.same(await seqs({ limit: 10, userId: 'u1', event: 'login.success' }), [5, 1])
    t.same(await seqs({ limit: 10, since: T0 + 3000 }), [6, 5, 4])
    t.same(await seqs({ limit: 10, userId: 'u1', since: T0 + 3000 }), [6, 5, 4])
    t.same(await seqs({ limit: 10, event: 'login.success', since: T0 + 1 }), [5, 3])
    t.same(await seqs({ limit: 10, userId: 'nobody' }), [])
    t.same(await seqs({ limit: 10, event: 'nothing' }), [])
  })

  await t.test('audit: sweepAudit removes the old events and keeps the last one removed as the anchor', async (t) => {
    const store = await fresh(t)
    for (let i = 0; i < 5; i++) await store.appendAudit([draft(`e${i + 1}`, { at: T0 + i * 1000, userId: 'u1' })])
    const before = await chainOf(store)
    t.equal(await store.sweepAudit(T0 + 2000), 2, 'the two older than the cut')
    const after = await chainOf(store)
    t.same(after.anchor, { seq: 2, hash: before.events[1]!.hash })
    t.same(after.events, before.events.slice(2))
    t.equal(brokenAt(after.anchor, after.events), undefined, 'what remains still verifies')
    t.same((await store.auditEvents({ limit: 10, userId: 'u1' })).map((e) => e.seq), [5, 4, 3], 'nor are they found by a filter')
    t.equal(await store.sweepAudit(T0 + 2000), 0, 'twice removes nothing')
    await store.appendAudit([draft('e6', { at: T0 + 9000 })])
    t.equal(await lastSeq(store), 6, 'the seqs go on')
    t.equal(await store.sweepAudit(T0 + 60 * MIN), 4, 'everything')
    const empty = await chainOf(store)
    t.equal(empty.anchor.seq, 6)
    t.same(empty.events, [])
    await store.appendAudit([draft('e7', { at: T0 + 61 * MIN })])
    const last = await chainOf(store)
    t.same(last.events.map((e) => e.seq), [7], 'after a sweep of all, the next event is 7')
    t.equal(brokenAt(last.anchor, last.events), undefined, 'and chains to the anchor')
  })

  await t.test('audit: sweepAudit takes a backlog longer than one chunk whole, and stops at the first event to keep', async (t) => {
    const store = await fresh(t)
    // events 2501 to 2550 are newer than the cut, those after them older again (a clock stepped
    // back): only the run before the first newer one goes
    const at = (n: number): number => (n >= 2550 ? T0 : T0 + n)
    for (let i = 0; i < 2600; i += 500) await store.appendAudit(Array.from({ length: Math.min(500, 2600 - i) }, (_, j) => draft('login.failure', { at: at(i + j) })))
    const before = await chainOf(store)
    t.equal(await store.sweepAudit(T0 + 2500), 2500, 'the 2500 older than the cut, in chunks')
    const after = await chainOf(store)
    t.same(after.anchor, { seq: 2500, hash: before.events[2499]!.hash }, 'the last one removed is the anchor')
    t.same(after.events.map((e) => e.seq), Array.from({ length: 100 }, (_, i) => 2501 + i))
    t.equal(brokenAt(after.anchor, after.events), undefined)
  })

  await t.test('audit: auditChain reads the anchor and every page in one snapshot: sweeps during the walk are not in it', async (t) => {
    const store = await fresh(t)
    // more than two pages of either backend
    for (let i = 0; i < 1200; i += 100) await store.appendAudit(Array.from({ length: 100 }, (_, j) => draft('login.failure', { at: T0 + i + j })))
    const walked = await store.auditChain(async (anchor, events) => {
      // a sweep right after the anchor was read, and another between pages, past the events read
      await store.sweepAudit(T0 + 10)
      const seen: AuditEvent[] = []
      for await (const e of events) {
        seen.push(e)
        if (seen.length === 520) await store.sweepAudit(T0 + 1100)
      }
      return { anchor, seen }
    })
    t.same(walked.anchor, GENESIS, 'the anchor as it was when the walk began')
    t.same(walked.seen.map((e) => e.seq), Array.from({ length: 1200 }, (_, i) => i + 1), 'and every event of that moment')
    t.equal(brokenAt(walked.anchor, walked.seen), undefined, 'so the chain verifies: no break the store does not have')
    const after = await chainOf(store)
    t.equal(after.anchor.seq, 1100, 'the sweeps took effect')
    t.same(after.events.map((e) => e.seq), Array.from({ length: 100 }, (_, i) => 1101 + i))
    t.equal(brokenAt(after.anchor, after.events), undefined)
  })

  /** a store with something of everything, and the tokens its sessions were given */
  const populate = async (store: Store): Promise<{ live: string; replaced: string; first: string }> => {
    // old events, half of them past retention: the chain starts at an anchor
    for (let i = 0; i < 4; i++) await store.appendAudit([draft('login.failure', { at: T0 - 10_000 + i, detail: { reason: 'bad_password', n: i } })])
    await store.sweepAudit(T0 - 10_000 + 2)
    await store.createUser(user('u1', 'ann@example.com', { mfa }), [draft('register', { userId: 'u1' })])
    await store.createUser(user('u2', 'bob@example.com', { passwordHash: HASH_T3, mfaSetup: { secret: 'KRSXG5DSN5XW4ZLP', createdAt: T0 } }))
    await store.createUser(user('u3', 'cat@xn--bcher-kva.example', { disabled: true }))
    const first = await login(store, 's1', 'u1')
    const replaced = await rotate(store, first, T0 + 1000)
    const live = await rotate(store, replaced, T0 + 2000)
    // a second session, rotated by hand: its replaced token is known by its own hash too
    await store.createSession(session('s2', 'u2'))
    await store.refreshSession('h-s2', (s) => ({ action: 'rotate', session: { ...s!, refreshHash: 'h-s2b', previousHash: 'h-s2', rotatedAt: T0, generation: 1 }, result: 0 }))
    await store.ensureActiveKey(() => key('k1', 'active', T0))
    await store.rotateKey(key('k2', 'next', T0 + 10 * MIN), T0 + MIN)
    await store.ensureDeviceKey(() => 'the-device-key')
    await store.ensureMfaKey(() => 'the-mfa-key')
    // a second step's mfaToken, used: it may not be used again, here or after an import
    await store.finishMfaStep(USED_MFA_TOKEN, 'u1', T0, (u) => ({ action: 'use', user: u!, result: null }))
    await store.addLimitClear({ email: 'ann@example.com' }, T0)
    await store.appendAudit([draft('login.success', { at: T0 + 3000, userId: 'u1', sessionId: 's1', email: 'ann@example.com' })])
    return { live, replaced, first }
  }

  const exportOf = async (store: Store): Promise<ExportRecord[]> => (await collect(store.exportRecords())).map(asJson)
  const withoutMeta = (records: ExportRecord[]): ExportRecord[] => records.filter((r) => r.type !== 'meta')
  const sortKey = (r: ExportRecord): string =>
    r.type === 'user'
      ? r.user.id
      : r.type === 'session'
        ? r.session.id
        : r.type === 'key'
          ? r.key.kid
          : r.type === 'secret'
            ? r.name
            : r.type === 'mfa_used'
              ? `${r.expiresAt} ${r.id}`
              : r.type === 'audit'
                ? String(r.event.seq).padStart(12, '0')
                : ''
  const order = ['meta', 'user', 'session', 'key', 'secret', 'mfa_used', 'audit_anchor', 'audit']
  const canonical = (records: ExportRecord[]): ExportRecord[] =>
    [...withoutMeta(records)].sort((a, b) => order.indexOf(a.type) - order.indexOf(b.type) || (sortKey(a) < sortKey(b) ? -1 : sortKey(a) > sortKey(b) ? 1 : 0))

  await t.test('export: meta first, then users, sessions, keys, secrets, the anchor and the events', async (t) => {
    const store = await fresh(t)
    await populate(store)
    const records = await exportOf(store)
    const meta = records[0]
    t.equal(meta?.type, 'meta')
    if (meta?.type === 'meta') {
      t.equal(meta.format, 2, 'the format with the used mfaTokens')
      t.equal(meta.backend, store.backend)
      t.equal(meta.schema, await store.schemaVersion())
      t.match(meta.exportedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    }
    const types = records.map((r) => r.type)
    t.same(types, [...types].sort((a, b) => order.indexOf(a) - order.indexOf(b)), 'in that order')
    t.same(
      Object.fromEntries(order.map((o) => [o, types.filter((x) => x === o).length])),
      { meta: 1, user: 3, session: 2, key: 2, secret: 2, mfa_used: 1, audit_anchor: 1, audit: 4 },
    )
    t.same(records.find((r) => r.type === 'mfa_used'), { type: 'mfa_used', ...USED_MFA_TOKEN }, 'the used mfaToken')
    t.same(
      records.filter((r) => r.type === 'secret'),
      [
        { type: 'secret', name: 'device_key', value: 'the-device-key' },
        { type: 'secret', name: 'mfa_key', value: 'the-mfa-key' },
      ],
    )
    const { anchor, events } = await chainOf(store)
    t.equal(anchor.seq, 2, 'populate swept two events')
    t.same(records.find((r) => r.type === 'audit_anchor'), { type: 'audit_anchor', anchor })
    t.same(records.filter((r) => r.type === 'audit').map((r) => (r.type === 'audit' ? r.event : null)), events)
    t.same(byId(records.flatMap((r) => (r.type === 'user' ? [r.user] : []))), byId(await store.listUsers()))
  })

  await t.test('import: an export loads into a fresh store whole, and everything works on from it', async (t) => {
    const source = await fresh(t)
    const tokens = await populate(source)
    const records = await exportOf(source)
    const target = await fresh(t)
    t.same(await target.importRecords(fromArray(records)), { users: 3, sessions: 2, keys: 2, replacedAuditEvents: 0 })

    t.same(canonical(await exportOf(target)), canonical(records), 'the same records')
    t.same(byId(await target.listUsers()), byId(await source.listUsers()))
    t.same(byId(await target.listSessions()), byId(await source.listSessions()))
    t.same(byKid(await target.listKeys()), byKid(await source.listKeys()))
    t.same(await target.hashTally(), await source.hashTally(), 'the hash tally is rebuilt')
    const chain = await chainOf(target)
    t.same(chain, await chainOf(source), 'an equal audit chain')
    t.equal(brokenAt(chain.anchor, chain.events), undefined)

    // the indexes are rebuilt: lookups by email, per user, by token hash and family
    t.equal((await target.getUserByEmail('cat@xn--bcher-kva.example'))?.id, 'u3')
    t.equal(await target.countSessions('u1'), 1)
    t.same((await target.sessionEntries({ userId: 'u2', limit: 5 })).map((e) => e.id), ['s2'])
    t.equal(await target.findSessionIdByRefreshHash(hashToken(tokens.live)), 's1')
    t.equal(await target.findSessionIdByRefreshHash('h-s2b'), 's2')
    t.equal(await target.findSessionIdByRefreshHash('h-s2'), 's2', 'a replaced token, by its own hash')
    t.equal(await target.findSessionIdByRefreshHash('nope', familyHashOf(tokens.first)), 's1', 'a family')
    const read = await target.meRead(['s1'], NaN, new Set())
    t.equal(read.records.get('s1')?.user?.mfaEnabled, true)
    t.equal(read.keysVersion, await target.keysVersion())

    // a second step used before the export cannot be used again after the import
    t.equal(await target.mfaTokenUsed(USED_MFA_TOKEN.id, USED_MFA_TOKEN.expiresAt), true, 'the used mfaToken came along')
    t.equal(
      await target.finishMfaStep(USED_MFA_TOKEN, 'u1', T0 + 1000, (u, used) => (used ? { action: 'none', result: 'used' } : { action: 'use', user: u!, result: 'used again' })),
      'used',
      'and a second step with it is refused',
    )

    // the secrets came along: nothing new is made
    t.equal(await target.ensureDeviceKey(() => 'made anew'), 'the-device-key')
    t.equal(await target.ensureMfaKey(() => 'made anew'), 'the-mfa-key')
    t.equal(await target.ensureActiveKey(() => key('new', 'active', T0)).then((k) => k.kid), 'k1', 'nor a key')

    // refresh goes on where it was: the replaced token is inside its grace, the first is reused
    const grace = await refresh(target, tokens.replaced, T0 + 3000)
    t.equal(grace.kind, 'grace')
    t.equal(grace.kind === 'grace' ? grace.token : '', tokens.live, 'answers the live token issued before the export')
    const next = await rotate(target, tokens.live, T0 + 4000)
    t.equal(await target.findSessionIdByRefreshHash(hashToken(next)), 's1')
    t.equal((await refresh(target, tokens.first, T0 + 10 * MIN)).kind, 'reuse')

    // and the log goes on from the last imported event
    const last = chain.events.at(-1)!.seq
    await target.appendAudit([draft('admin.import', { actor: 'authctl:root' })])
    const after = await chainOf(target)
    t.equal(after.events.at(-1)?.seq, last + 1)
    t.equal(brokenAt(after.anchor, after.events), undefined)
    t.equal(after.events.at(-1)!.event, 'admin.import')
  })

  await t.test('import: the events as they are, each under its seq; the chain breaks where they were changed, removed or swapped, and goes on after the highest seq', async (t) => {
    const source = await fresh(t)
    await source.appendAudit(Array.from({ length: 6 }, (_, i) => draft('login.failure', { at: T0 + i, detail: { n: i + 1 } })))
    const original = await exportOf(source)
    const events = original.flatMap((r) => (r.type === 'audit' ? [r.event] : []))
    const edits: Array<[string, (e: AuditEvent[]) => AuditEvent[], number | undefined]> = [
      ['untouched', (e) => e, undefined],
      ['event 3 changed', (e) => e.map((x) => (x.seq === 3 ? { ...x, detail: { n: 33 } } : x)), 3],
      ['event 4 removed', (e) => e.filter((x) => x.seq !== 4), 4],
      ['the last event removed: the chain cannot tell', (e) => e.filter((x) => x.seq !== 6), undefined],
      ['the contents of events 2 and 5 swapped, each under the other’s seq', (e) => e.map((x) => (x.seq === 2 ? { ...e[4]!, seq: 2 } : x.seq === 5 ? { ...e[1]!, seq: 5 } : x)), 2],
      ['events 2 and 5 swapped whole (lines moved): each goes under its own seq', (e) => e.map((x) => (x.seq === 2 ? e[4]! : x.seq === 5 ? e[1]! : x)), undefined],
    ]
    for (const [name, edit, broken] of edits) {
      const records = original.filter((r) => r.type !== 'audit')
      const edited = edit(events.map((e) => asJson(e)))
      const target = await fresh(t)
      await target.importRecords(fromArray([...records, ...edited.map((event): ExportRecord => ({ type: 'audit', event }))]))
      const chain = await chainOf(target)
      t.same(chain.events.map((e) => e.seq), edited.map((e) => e.seq).sort((a, b) => a - b), `${name}: each kept under its seq`)
      // as `authctl audit verify` finds it
      t.same(await target.auditChain(verifyChain), broken === undefined ? { ok: true, events: edited.length } : { ok: false, brokenAt: broken }, `${name}: ${broken === undefined ? 'verifies' : `breaks at ${broken}`}`)
      const highest = Math.max(...edited.map((e) => e.seq))
      await target.appendAudit([draft('admin.import')])
      const after = await chainOf(target)
      t.equal(after.events.at(-1)?.seq, highest + 1, `${name}: the next event is ${highest + 1}`)
      t.equal(after.events.at(-1)?.hash, chainHash(after.events.find((e) => e.seq === highest)!.hash, after.events.at(-1)!), `${name}: chained to the highest`)
    }
  })

  await t.test("import: the target's own audit events (a store without users may have some) are replaced by the export's log, and counted", async (t) => {
    const source = await fresh(t)
    await populate(source)
    const records = await exportOf(source)
    const imported = await chainOf(source)
    const target = await fresh(t)
    // what authctl leaves on a store without users: a key rotated, limits cleared
    await target.appendAudit([draft('admin.keys.rotate'), draft('admin.limits.clear')])
    const audit = (counts: ImportCounts): AuditDraft[] => [draft('admin.import', { actor: 'authctl:root', detail: { ...counts } })]
    t.same(await target.importRecords(fromArray(records), audit), { users: 3, sessions: 2, keys: 2, replacedAuditEvents: 2 })
    const chain = await chainOf(target)
    t.same(chain.events.slice(0, -1), imported.events, "the export's log, not the target's events")
    t.match(chain.events.at(-1), { event: 'admin.import', detail: { users: 3, sessions: 2, keys: 2, replacedAuditEvents: 2 } }, 'its admin.import says how many were replaced')
    t.equal(brokenAt(chain.anchor, chain.events), undefined, 'one chain')
  })

  await t.test('import: its own event made of the counts, appended after the imported log in the same write; none when refused', async (t) => {
    const source = await fresh(t)
    await populate(source)
    const records = await exportOf(source)
    const imported = await chainOf(source)
    const target = await fresh(t)
    let made = 0
    const audit = (counts: { users: number; sessions: number; keys: number }): AuditDraft[] => (made++, [draft('admin.import', { actor: 'authctl:root', detail: { ...counts } })])
    t.same(await target.importRecords(fromArray(records), audit), { users: 3, sessions: 2, keys: 2, replacedAuditEvents: 0 })
    t.equal(made, 1)
    const chain = await chainOf(target)
    t.same(chain.events.slice(0, -1), imported.events, 'the imported log as it was')
    const last = chain.events.at(-1)!
    t.match(last, { seq: imported.events.at(-1)!.seq + 1, event: 'admin.import', actor: 'authctl:root', detail: { users: 3, sessions: 2, keys: 2 } })
    t.equal(brokenAt(chain.anchor, chain.events), undefined, 'chained on from the last imported event')

    // refused: neither the import nor its event
    await t.rejects(target.importRecords(fromArray(records), audit), { code: 'NOT_EMPTY' })
    const other = await fresh(t)
    await t.rejects(other.importRecords(fromArray([...records, { type: 'group' } as unknown as ExportRecord]), audit), { code: 'BAD_EXPORT' })
    t.same((await chainOf(other)).events, [], 'no event in a store whose import was refused')
    t.equal(made, 1, 'nor was it made')
  })

  await t.test('import: a store without users, whatever a first start left in it, takes the export whole', async (t) => {
    const source = await fresh(t)
    await populate(source)
    const records = await exportOf(source)
    const target = await fresh(t)
    await target.ensureActiveKey(() => key('own', 'active', T0))
    await target.ensureDeviceKey(() => 'own-device-key')
    await target.appendAudit([draft('login.failure', { detail: { reason: 'unknown_user' } })])
    await target.addLimitClear({ ipKey: '203.0.113.9' }, T0)
    await target.importRecords(fromArray(records))
    t.same(byKid(await target.listKeys()).map((k) => k.kid), ['k1', 'k2'], "the export's keys alone")
    t.equal(await target.ensureDeviceKey(() => 'x'), 'the-device-key')
    t.same(await chainOf(target), await chainOf(source), "the export's audit chain alone")
  })

  await t.test('import: into a store that has users, refused with NOT_EMPTY, nothing written', async (t) => {
    const source = await fresh(t)
    await populate(source)
    const records = await exportOf(source)
    const target = await fresh(t)
    await target.createUser(user('z1', 'zoe@example.com'), [draft('register')])
    const before = await exportOf(target)
    await t.rejects(target.importRecords(fromArray(records)), { code: 'NOT_EMPTY' })
    t.same(canonical(await exportOf(target)), canonical(before), 'the store as it was')
  })

  await t.test('import: a record it cannot take is refused with BAD_EXPORT naming its line, nothing written', async (t) => {
    const store = await fresh(t)
    const meta: ExportRecord = { type: 'meta', format: 1, schema: 1, backend: 'lmdb', exportedAt: new Date(T0).toISOString() }
    const u1: ExportRecord = { type: 'user', user: user('u1', 'ann@example.com') }
    const u2: ExportRecord = { type: 'user', user: user('u2', 'bob@example.com') }
    const event = (seq: number, previous: string): AuditEvent => {
      const body = { seq, time: new Date(T0).toISOString(), event: 'register', actor: 'api', userId: null, email: null, sessionId: null, ip: null, userAgent: null, detail: {} }
      return { ...body, hash: chainHash(previous, body) }
    }
    const e1 = event(1, GENESIS.hash)
    const bad: Array<[string, unknown[], number]> = [
      ['an empty export', [], 1],
      ['a user before the meta record', [u1, meta], 1],
      ['an unknown format', [{ ...meta, format: 3 }, u1], 1],
      ['a used mfaToken without its expiry', [meta, u1, { type: 'mfa_used', id: 'm1' }], 3],
      ['a user without an email', [meta, u1, { type: 'user', user: { ...user('u2', 'x'), email: undefined } }], 3],
      ['a user whose createdAt is text', [meta, u1, u2, { type: 'user', user: { ...user('u3', 'c@example.com'), createdAt: 'yesterday' } }], 4],
      ['a second user with one email', [meta, u1, { type: 'user', user: user('u2', 'ann@example.com') }], 3],
      ['a second user with one id', [meta, u1, { type: 'user', user: user('u1', 'other@example.com') }], 3],
      ['a session of a user not in the export', [meta, u1, { type: 'session', session: session('s1', 'u1') }, { type: 'session', session: session('s2', 'u9') }, u2], 4],
      ['a session without its token family', [meta, u1, { type: 'session', session: { ...session('s1', 'u1'), familyHash: undefined } }], 3],
      ['a session without its amr', [meta, u1, { type: 'session', session: { ...session('s1', 'u1'), amr: undefined } }], 3],
      ['a key of an unknown algorithm', [meta, u1, { type: 'key', key: { ...key('k1', 'active', T0), alg: 'HS256' } }], 3],
      ['an unknown secret', [meta, u1, { type: 'secret', name: 'other', value: 'v' }], 3],
      ['an unknown record type', [meta, u1, u2, { type: 'group', group: {} }], 4],
      ['not an object', [meta, 'user'], 2],
      ['a second audit event of one seq', [meta, u1, { type: 'audit_anchor', anchor: GENESIS }, { type: 'audit', event: e1 }, { type: 'audit', event: { ...e1, actor: 'x' } }], 5],
      ['an audit event without its hash', [meta, { type: 'audit', event: { ...e1, hash: undefined } }], 2],
      ['an anchor after the events', [meta, { type: 'audit', event: e1 }, { type: 'audit_anchor', anchor: GENESIS }], 3],
    ]
    for (const [name, records, line] of bad) {
      await t.rejects(store.importRecords(fromArray(records as ExportRecord[])), { code: 'BAD_EXPORT', message: new RegExp(`\\bline ${line}\\b`) }, name)
      t.same(await store.listUsers(), [], `${name}: no user written`)
      t.same((await chainOf(store)).events, [], `${name}: no event written`)
    }
    t.same(await store.importRecords(fromArray([meta, u1, u2, { type: 'audit_anchor', anchor: GENESIS }, { type: 'audit', event: e1 }])), { users: 2, sessions: 0, keys: 0, replacedAuditEvents: 0 }, 'a good export still loads after all that')
    t.same((await chainOf(store)).events, [e1])
  })
}
