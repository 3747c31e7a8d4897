/**
 * Several instances on one PostgreSQL database (README, "Several instances on PostgreSQL"): each
 * store here has a pool of its own, as separate authd processes would, and the races between
 * them are settled by the database: one schema, one active key, one refresh successor, gapless
 * audit seqs.
 */
import t, { type Test } from 'tap'
import pg from 'pg'
import { decideRefresh, familyHashOf, hashToken, newRefreshToken, type RefreshOutcome, type SessionPolicy } from '../../src/core/sessions.js'
import { chainHash } from '../../src/store/audit-chain.js'
import { openPgStore } from '../../src/store/pg/pg-store.js'
import { PG_SCHEMA_VERSION } from '../../src/store/pg/schema.js'
import type { AuditDraft, AuditEvent, KeyRecord, Store } from '../../src/store/store.js'
import { pgDatabase } from '../helpers/pg.js'

const T0 = 1_700_000_000_000
const policy: SessionPolicy = { idleTtlMs: 3_600_000, absoluteTtlMs: 86_400_000, reuseGraceMs: 10_000 }

/** `n` stores on the database at `url`, each with its own pool, closed when `t` ends */
async function instances(t: Test, url: string, n = 3): Promise<Store[]> {
  const opened = await Promise.all(Array.from({ length: n }, () => openPgStore({ url, poolSize: 8 })))
  t.teardown(() => Promise.all(opened.map(({ store }) => store.close())))
  return opened.map(({ store }) => store)
}

const draft = (event: string, i: number): AuditDraft => ({
  at: T0 + i,
  event,
  actor: 'api',
  userId: null,
  email: null,
  sessionId: null,
  ip: null,
  userAgent: null,
  detail: { i },
})

const key = (kid: string): KeyRecord => ({
  kid,
  alg: 'ES256',
  state: 'active',
  privateKeyPem: `private ${kid}`,
  publicKeyPem: `public ${kid}`,
  createdAt: T0,
  activatedAt: T0,
  retiringAt: null,
  retiredAt: null,
})

t.test('three instances migrating an empty database at once: one schema, each opens', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const stores = await instances(t, db.url)
  t.same(await Promise.all(stores.map((s) => s.schemaVersion())), [PG_SCHEMA_VERSION, PG_SCHEMA_VERSION, PG_SCHEMA_VERSION])
  const admin = new pg.Client({ connectionString: db.url })
  await admin.connect()
  t.teardown(() => admin.end())
  const { rows } = await admin.query(`SELECT (SELECT count(*)::int FROM authd_counters) AS counters, (SELECT count(*)::int FROM authd_audit_head) AS heads`)
  t.same(rows[0], { counters: 2, heads: 1 }, 'the first rows were written once')
  // and each works on it
  t.equal(await stores[0]!.createUser({ id: 'u1', email: 'ann@example.com', passwordHash: 'x', createdAt: T0, updatedAt: T0, disabled: false }), true)
  t.equal((await stores[2]!.getUser('u1'))?.email, 'ann@example.com')
})

t.test('three instances starting together on an empty database make one active key', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const stores = await instances(t, db.url)
  let made = 0
  const keys = await Promise.all(stores.flatMap((s, i) => Array.from({ length: 4 }, (_, j) => s.ensureActiveKey(() => key(`k-${i}-${j}-${++made}`)))))
  t.equal(new Set(keys.map((k) => k.kid)).size, 1, 'all twelve calls answer the same key')
  t.equal(made, 1, 'made once')
  for (const s of stores) {
    const listed = await s.listKeys()
    t.same(
      listed.map((k) => [k.kid, k.state]),
      [[keys[0]!.kid, 'active']],
    )
  }
})

t.test('three instances rotating keys at once leave exactly one stored active key', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const stores = await instances(t, db.url)
  await stores[0]!.ensureActiveKey(() => key('k0'))
  await Promise.all(stores.flatMap((s, i) => Array.from({ length: 3 }, (_, j) => s.rotateKey(key(`k-${i}-${j}`), T0 + 1000 + i * 10 + j))))
  const keys = await stores[1]!.listKeys()
  t.equal(keys.length, 10)
  t.equal(keys.filter((k) => k.state === 'active').length, 1, 'one active')
  t.equal(keys.filter((k) => k.state === 'retiring').length, 9, 'every other one retiring')
})

t.test('20 concurrent refreshes of one token over three instances: one successor, all answered it', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const stores = await instances(t, db.url)
  const token = newRefreshToken()
  await stores[0]!.createSession({
    id: 's1',
    userId: 'u1',
    createdAt: T0,
    lastUsedAt: T0,
    expiresAt: T0 + policy.absoluteTtlMs,
    ip: '127.0.0.1',
    userAgent: 'race',
    refreshHash: hashToken(token),
    previousHash: null,
    rotatedAt: null,
    generation: 0,
    familyHash: familyHashOf(token),
    rotations: [],
    amr: ['pwd'],
  })
  const refresh = (store: Store, now: number): Promise<RefreshOutcome> =>
    store.refreshSession(hashToken(token), (s) => decideRefresh(s, { token, hash: hashToken(token) }, { now, policy }), familyHashOf(token))
  const outs = await Promise.all(Array.from({ length: 20 }, (_, i) => refresh(stores[i % 3]!, T0 + 1000 + i)))
  t.equal(outs.filter((o) => o.kind === 'rotated').length, 1, 'one rotation')
  t.equal(outs.filter((o) => o.kind === 'grace').length, 19, 'nineteen inside the grace')
  const successors = new Set(outs.map((o) => ('token' in o ? o.token : '')))
  t.equal(successors.size, 1, 'every one answered the same successor')
  const [successor] = successors
  const stored = await stores[2]!.getSession('s1')
  t.equal(stored?.generation, 1, 'rotated once')
  t.equal(stored?.refreshHash, hashToken(successor!), 'the successor is the live token')
  t.equal(await stores[1]!.findSessionIdByRefreshHash(hashToken(successor!)), 's1')
  // and past the grace the old token is a reuse, on any instance
  t.equal((await refresh(stores[1]!, T0 + 1000 + policy.reuseGraceMs + 5000)).kind, 'reuse')
  t.equal(await stores[0]!.getSession('s1'), undefined, 'the session ended')
})

t.test('concurrent audit appends and audited writes from three instances: seq gapless, the chain verifies', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const stores = await instances(t, db.url)
  const writes: Array<Promise<unknown>> = []
  for (let i = 0; i < 60; i++) {
    const s = stores[i % 3]!
    if (i % 4 === 0) {
      writes.push(s.createUser({ id: `u${i}`, email: `u${i}@example.com`, passwordHash: 'x', createdAt: T0, updatedAt: T0, disabled: false }, [draft('register', i)]))
    } else writes.push(s.appendAudit([draft('login.failure', i), draft('rate_limit.block', i)]))
  }
  await Promise.all(writes)
  const expected = 15 + 45 * 2
  const kept: AuditEvent[] = []
  const anchor = await stores[1]!.auditChain(async (anchor, events) => {
    for await (const e of events) kept.push(e)
    return anchor
  })
  t.same(
    kept.map((e) => e.seq),
    Array.from({ length: expected }, (_, i) => i + 1),
    'seq 1…N without gaps or repeats',
  )
  let previous = anchor
  let broken: number | undefined
  for (const e of kept) {
    if (broken === undefined && e.hash !== chainHash(previous.hash, e)) broken = e.seq
    previous = e
  }
  t.equal(broken, undefined, 'every hash chains to the one before')
  // the two events of one append are consecutive
  for (let i = 0; i < kept.length; i++) {
    if (kept[i]!.event === 'login.failure') t.equal(kept[i + 1]?.event, 'rate_limit.block', `the append at seq ${kept[i]!.seq} is whole`)
  }
})

t.test('a database set up by a newer authd is refused with SCHEMA_TOO_NEW and a sentence', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const { store } = await openPgStore({ url: db.url, poolSize: 2 })
  await store.close()
  const admin = new pg.Client({ connectionString: db.url })
  await admin.connect()
  await admin.query(`UPDATE authd_meta SET value = $1 WHERE name = 'schema_version'`, [String(PG_SCHEMA_VERSION + 1)])
  await admin.end()
  await t.rejects(openPgStore({ url: db.url, poolSize: 2 }), {
    name: 'AppError',
    code: 'SCHEMA_TOO_NEW',
    message: `the database was set up by a newer authd (schema ${PG_SCHEMA_VERSION + 1}; this version understands up to ${PG_SCHEMA_VERSION}): upgrade authd`,
  })
})

t.test('20 concurrent logins of one user over three instances with a bound of 3: 3 sessions left, each other one ended once', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const stores = await instances(t, db.url)
  const limit = { max: 3, now: T0, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs }
  const login = (store: Store, i: number): Promise<Array<{ id: string }>> => {
    const token = newRefreshToken()
    return store.createSession(
      {
        id: `s${String(i).padStart(2, '0')}`,
        userId: 'u1',
        createdAt: T0 + i,
        lastUsedAt: T0 + i,
        expiresAt: T0 + policy.absoluteTtlMs,
        ip: '127.0.0.1',
        userAgent: 'race',
        refreshHash: hashToken(token),
        previousHash: null,
        rotatedAt: null,
        generation: 0,
        familyHash: familyHashOf(token),
        rotations: [],
        amr: ['pwd'],
      },
      limit,
      { events: [draft('login.success', i)], evicted: (e) => ({ ...draft('session.evict', i), sessionId: e.id }) },
    )
  }
  const ended = (await Promise.all(Array.from({ length: 20 }, (_, i) => login(stores[i % 3]!, i)))).flat().map((e) => e.id)
  t.equal(await stores[0]!.countSessions('u1'), 3, 'the bound holds')
  t.equal(ended.length, 17, 'every other session ended')
  t.equal(new Set(ended).size, 17, 'each once')
  const left = (await stores[1]!.listSessions('u1')).map((s) => s.id)
  t.same(ended.filter((id) => left.includes(id)), [], 'none of the ended is left')
  const events = await stores[2]!.auditEvents({ limit: 100 })
  t.equal(events.filter((e) => e.event === 'session.evict').length, 17, 'one session.evict per ended session')
  t.equal(events.filter((e) => e.event === 'login.success').length, 20)
})

t.test('logins racing a password change over three instances: no session written for the old password outlives the change', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const stores = await instances(t, db.url)
  const OLD = '$argon2id$v=19$m=19456,t=2,p=1$b2xkc2FsdA$b2xkaGFzaA'
  const NEW = '$argon2id$v=19$m=19456,t=2,p=1$bmV3c2FsdA$bmV3aGFzaA'
  const session = (id: string, userId: string, at: number): Parameters<Store['createSession']>[0] => {
    const token = newRefreshToken()
    return { id, userId, createdAt: at, lastUsedAt: at, expiresAt: T0 + policy.absoluteTtlMs, ip: '127.0.0.1', userAgent: 'race', refreshHash: hashToken(token), previousHash: null, rotatedAt: null, generation: 0, familyHash: familyHashOf(token), rotations: [], amr: ['pwd'] }
  }
  // at room (max 50) and at the bound (max 2: the user starts with two live sessions, so every
  // login decides an eviction in the locked transaction)
  for (const max of [50, 2]) {
    for (let round = 0; round < 10; round++) {
      const uid = `u-${max}-${round}`
      await stores[0]!.createUser({ id: uid, email: `${uid}@example.com`, passwordHash: OLD, createdAt: T0, updatedAt: T0, disabled: false })
      await stores[0]!.createSession(session(`${uid}-keep`, uid, T0 + 1))
      await stores[0]!.createSession(session(`${uid}-other`, uid, T0 + 2))
      const limit = { max, now: T0 + 10, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs }
      // 12 logins that checked the old password, over three instances, and the change among them
      const logins = Array.from({ length: 12 }, (_, i) => stores[i % 3]!.createSessionFor({ passwordHash: OLD }, session(`${uid}-login-${i}`, uid, T0 + 10), limit))
      const change = stores[round % 3]!.updateUserEndingSessions(uid, (u) => ({ ...u, passwordHash: NEW }), `${uid}-keep`)
      const [results] = await Promise.all([Promise.all(logins), change])
      const left = (await stores[1]!.listSessions(uid)).map((s) => s.id)
      // (at the bound, a login written before the change may have ended the changing session too)
      t.same(left.filter((id) => id !== `${uid}-keep`), [], `max ${max}, round ${round}: no login's session is left (${results.filter((r) => r !== undefined).length} of 12 wrote before the change)`)
      t.equal((await stores[2]!.createSessionFor({ passwordHash: OLD }, session(`${uid}-late`, uid, T0 + 20), limit)), undefined, `max ${max}, round ${round}: a login with the old password after it writes nothing`)
    }
  }
})

t.test('a login at the bound racing a refresh of the oldest session over two instances: a session refreshed (200) is never the one the login ends', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const stores = await instances(t, db.url, 2)
  const HASH = '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g'
  const record = (id: string, userId: string, at: number, token: string): Parameters<Store['createSession']>[0] => ({
    id, userId, createdAt: at, lastUsedAt: at, expiresAt: T0 + policy.absoluteTtlMs, ip: '127.0.0.1', userAgent: 'race',
    refreshHash: hashToken(token), previousHash: null, rotatedAt: null, generation: 0, familyHash: familyHashOf(token), rotations: [], amr: ['pwd'],
  })
  let refreshed = 0
  for (let round = 0; round < 60; round++) {
    const uid = `u${round}`
    await stores[0]!.createUser({ id: uid, email: `${uid}@example.com`, passwordHash: HASH, createdAt: T0, updatedAt: T0, disabled: false })
    const oldest = newRefreshToken()
    await stores[0]!.createSession(record(`${uid}-oldest`, uid, T0 + 1, oldest))
    await stores[0]!.createSession(record(`${uid}-next`, uid, T0 + 2, newRefreshToken()))
    const now = T0 + 100
    // the refresh sent a little after the login, by a different delay each round, so that it
    // lands somewhere in the login's write (which reads the user's sessions, then ends the oldest)
    const delay = (round % 10) * 0.4
    const [out] = await Promise.all([
      new Promise((r) => setTimeout(r, delay)).then(() =>
        stores[round % 2]!.refreshSession(hashToken(oldest), (s) => decideRefresh(s, { token: oldest, hash: hashToken(oldest) }, { now, policy }), familyHashOf(oldest)),
      ),
      stores[(round + 1) % 2]!.createSessionFor({ passwordHash: HASH }, record(`${uid}-login`, uid, now, newRefreshToken()), { max: 2, now, idleTtlMs: policy.idleTtlMs, absoluteTtlMs: policy.absoluteTtlMs }),
    ])
    const left = (await stores[0]!.listSessions(uid)).map((s) => s.id).sort()
    t.equal(left.length, 2, `round ${round}: the bound holds`)
    if (out.kind === 'rotated') {
      refreshed++
      t.ok(left.includes(`${uid}-oldest`), `round ${round}: refreshed (200), so not ended: ${left.join(', ')}`)
    }
  }
  t.ok(refreshed > 0, `some refreshes won the race (${refreshed} of 60)`)
})
