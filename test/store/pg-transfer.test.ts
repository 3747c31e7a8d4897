/**
 * Export and import between the backends (README, "Export and import"): an LMDB store moved
 * into PostgreSQL keeps its records as they were and its refresh tokens working, and back; a
 * store larger than one page goes whole. Also what PostgreSQL says of itself: its location
 * without the password, and no backup.
 */
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { decideRefresh, familyHashOf, hashToken, newRefreshToken, type RefreshOutcome, type SessionPolicy } from '../../src/core/sessions.js'
import { chainHash, GENESIS } from '../../src/store/audit-chain.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { redactUrl } from '../../src/config/redact-url.js'
import { openPgStore } from '../../src/store/pg/pg-store.js'
import type { AuditDraft, ExportRecord, KeyRecord, Store, UserRecord } from '../../src/store/store.js'
import { pgDatabase } from '../helpers/pg.js'
import { keyPairOf } from '../helpers/records.js'

const T0 = 1_700_000_000_000
const MIN = 60_000
const policy: SessionPolicy = { idleTtlMs: 60 * MIN, absoluteTtlMs: 24 * 60 * MIN, reuseGraceMs: 10_000 }

const user = (id: string, extra: Partial<UserRecord> = {}): UserRecord => ({
  id,
  email: `${id}@example.com`,
  passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g',
  createdAt: T0,
  updatedAt: T0,
  disabled: false,
  ...extra,
})
const key = (kid: string, state: KeyRecord['state'], activatedAt: number | null): KeyRecord => ({
  kid,
  alg: 'ES256',
  state,
  ...keyPairOf(kid),
  createdAt: T0,
  activatedAt,
  retiringAt: null,
  retiredAt: null,
})
const draft = (event: string, at: number, extra: Partial<AuditDraft> = {}): AuditDraft => ({
  at,
  event,
  actor: 'api',
  userId: null,
  email: null,
  sessionId: null,
  ip: '203.0.113.7',
  userAgent: 'test',
  detail: {},
  ...extra,
})

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const x of it) out.push(x)
  return out
}
async function* fromArray<T>(xs: readonly T[]): AsyncGenerator<T> {
  for (const x of xs) yield x
}
/** the records without meta, as they travel through a file */
const exported = async (store: Store): Promise<ExportRecord[]> => (await collect(store.exportRecords())).filter((r) => r.type !== 'meta').map((r) => JSON.parse(JSON.stringify(r)) as ExportRecord)

const refresh = (store: Store, token: string, now: number): Promise<RefreshOutcome> =>
  store.refreshSession(hashToken(token), (s) => decideRefresh(s, { token, hash: hashToken(token) }, { now, policy }), familyHashOf(token))

async function pgStore(t: Test): Promise<Store | null> {
  const db = await pgDatabase(t)
  if (!db) return null
  const { store } = await openPgStore({ url: db.url, poolSize: 4 })
  t.teardown(() => store.close())
  return store
}

async function lmdbStore(t: Test, name: string): Promise<Store> {
  const store = await openLmdbStore({ path: join(t.testdir(), name) })
  t.teardown(() => store.close())
  return store
}

t.test('an LMDB store exported and imported into PostgreSQL: the same records, refresh tokens go on working', async (t) => {
  const target = await pgStore(t)
  if (!target) return
  const source = await lmdbStore(t, 'lmdb')
  await source.appendAudit([draft('login.failure', T0 - 5000), draft('login.failure', T0 - 4000)])
  await source.sweepAudit(T0 - 4500)
  await source.createUser(user('u1', { mfa: { secret: 'JBSWY3DPEHPK3PXP', enabledAt: T0, lastStep: 7, recoveryCodes: ['a', 'b'] } }), [draft('register', T0, { userId: 'u1' })])
  const first = newRefreshToken()
  await source.createSession({
    id: 's1',
    userId: 'u1',
    createdAt: T0,
    lastUsedAt: T0,
    expiresAt: T0 + policy.absoluteTtlMs,
    ip: '203.0.113.7',
    userAgent: 'test',
    refreshHash: hashToken(first),
    previousHash: null,
    rotatedAt: null,
    generation: 0,
    familyHash: familyHashOf(first),
    rotations: [],
    amr: ['pwd', 'otp', 'mfa'],
  })
  const replaced = await refresh(source, first, T0 + 1000).then((o) => (o.kind === 'rotated' ? o.token : ''))
  const live = await refresh(source, replaced, T0 + 2000).then((o) => (o.kind === 'rotated' ? o.token : ''))
  await source.ensureActiveKey(() => key('k1', 'active', T0))
  await source.rotateKey(key('k2', 'next', T0 + 10 * MIN), T0 + MIN)
  await source.ensureDeviceKey(() => 'device-key')
  await source.ensureMfaKey(() => 'mfa-key')

  const records = await exported(source)
  t.same(await target.importRecords(source.exportRecords()), { users: 1, sessions: 1, keys: 2, replacedAuditEvents: 0 })
  t.same(await exported(target), records, 'PostgreSQL exports what LMDB did, record for record')

  t.equal(await target.ensureDeviceKey(() => 'new'), 'device-key')
  t.equal(await target.ensureMfaKey(() => 'new'), 'mfa-key')
  const grace = await refresh(target, replaced, T0 + 3000)
  t.equal(grace.kind === 'grace' ? grace.token : grace.kind, live, 'the token replaced before the move answers the live one')
  const rotated = await refresh(target, live, T0 + 4000)
  t.equal(rotated.kind, 'rotated', 'the live token rotates on PostgreSQL')
  t.equal((await refresh(target, first, T0 + 20 * MIN)).kind, 'reuse', 'the first one is a reuse, found by its family')

  await target.appendAudit([draft('admin.import', T0 + 5000, { actor: 'authctl:root' })])
  await target.auditChain(async (anchor, events) => {
    let previous = anchor
    t.not(previous, GENESIS, 'the anchor came along')
    for await (const e of events) {
      t.equal(e.hash, chainHash(previous.hash, e), `event ${e.seq} chains`)
      previous = e
    }
  })
})

t.test('a PostgreSQL store larger than a page exported and imported into LMDB, whole', async (t) => {
  const source = await pgStore(t)
  if (!source) return
  for (let i = 0; i < 1201; i += 100) {
    await Promise.all(Array.from({ length: Math.min(100, 1201 - i) }, (_, j) => source.createUser(user(`u${String(i + j).padStart(5, '0')}`))))
  }
  await source.appendAudit(Array.from({ length: 1001 }, (_, i) => draft('login.failure', T0 + i, { detail: { n: i } })))
  // 1001 second steps' mfaTokens, used (one per user, some expiring at the same moment)
  for (let i = 0; i < 1001; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, 1001 - i) }, (_, j) =>
        source.finishMfaStep({ id: `m${i + j}`, expiresAt: T0 + 5 * MIN + ((i + j) % 7) }, `u${String(i + j).padStart(5, '0')}`, T0, (u) => ({ action: 'use', user: u!, result: null })),
      ),
    )
  }
  const records = await exported(source)
  t.equal(records.filter((r) => r.type === 'user').length, 1201)
  t.equal(records.filter((r) => r.type === 'mfa_used').length, 1001, 'every used mfaToken, read in pages')
  t.equal(records.filter((r) => r.type === 'audit').length, 1001)
  t.same(
    records.filter((r) => r.type === 'user').map((r) => (r.type === 'user' ? r.user.id : '')),
    Array.from({ length: 1201 }, (_, i) => `u${String(i).padStart(5, '0')}`),
    'every user once, in id order',
  )

  const target = await lmdbStore(t, 'lmdb')
  t.same(await target.importRecords(source.exportRecords()), { users: 1201, sessions: 0, keys: 0, replacedAuditEvents: 0 })
  t.same(await exported(target), records, 'LMDB exports what PostgreSQL did')
  t.equal(await target.mfaTokenUsed('m1000', T0 + 5 * MIN + (1000 % 7)), true)
  const chain = await source.auditChain((_, events) => collect(events))
  t.same(
    chain.map((e) => e.seq),
    Array.from({ length: 1001 }, (_, i) => i + 1),
    'the chain read in pages',
  )
})

t.test('an export left half read ends its transaction: the store goes on', async (t) => {
  const store = await pgStore(t)
  if (!store) return
  for (let i = 0; i < 3; i++) await store.createUser(user(`u${i}`))
  for await (const r of store.exportRecords()) if (r.type === 'user') break
  // with a pool of 4, four walks left half read would have taken every connection
  for (let i = 0; i < 6; i++) for await (const r of store.exportRecords()) if (r.type === 'user') break
  t.equal((await store.listUsers()).length, 3)
})

t.test('location hides the password; backup is refused with a sentence naming pg_dump and authctl export', async (t) => {
  t.equal(redactUrl('postgresql://authd:s3cr%40t@db.internal:5432/authd?sslmode=require'), 'postgresql://authd:***@db.internal:5432/authd?sslmode=require')
  t.equal(redactUrl('postgres://authd@localhost/authd?host=/run/postgresql&password=s3cret'), 'postgres://authd@localhost/authd?host=/run/postgresql&password=***')
  t.equal(redactUrl('postgres://localhost/authd'), 'postgres://localhost/authd')
  t.equal(redactUrl("host=db user=authd password='s3 cret' dbname=authd"), 'host=db user=authd password=*** dbname=authd')
  const store = await pgStore(t)
  if (!store) return
  t.equal(store.backend, 'postgres')
  t.notMatch(store.location, /password=(?!\*\*\*)/)
  await t.rejects(store.backup('/tmp/nowhere'), { name: 'AppError', code: 'NO_BACKUP', message: /pg_dump.*authctl export/ })
})
