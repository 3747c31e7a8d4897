/**
 * store/import-records.ts (README, "Export and import"): the check an export goes through before
 * either store writes anything. Each malformed record is refused with BAD_EXPORT, `line N of the
 * export: <why>`, N its 1-based line (the meta record is line 1); a good export comes back whole
 * and in order. test/store/conformance.ts runs a few refusals through both stores (line numbers
 * only); here is every rule with its message, and one store left empty by a refusal at the very
 * end of a full export.
 */
import t from 'tap'
import { generateKey } from '../../src/core/keys.js'
import { earlierTokenHashes, readImport } from '../../src/store/import-records.js'
import { chainHash, GENESIS } from '../../src/store/audit-chain.js'
import type { AuditEvent, ExportRecord, KeyRecord } from '../../src/store/store.js'
import { openTestStore } from '../helpers/app.js'
import { session, user } from '../helpers/records.js'

const T0 = Date.UTC(2025, 2, 4, 9)
const meta = { type: 'meta', format: 1, schema: 3, backend: 'lmdb', exportedAt: new Date(T0).toISOString() }
const u1 = { type: 'user', user: user('u1', 'ann@example.com') }
const u2 = { type: 'user', user: user('u2', 'bob@example.com') }
const s1 = { type: 'session', session: session('s1', 'u1') }
// one real pair for every key record: an import checks that a key's PEMs are one usable pair
const PAIR = generateKey('ES256', T0)
const RSA = generateKey('RS256', T0)
const key = (kid: string): KeyRecord => ({ kid, alg: 'ES256', state: 'active', privateKeyPem: PAIR.privateKeyPem, publicKeyPem: PAIR.publicKeyPem, createdAt: T0, activatedAt: T0, retiringAt: null, retiredAt: null })
const event = (seq: number, previous: string): AuditEvent => {
  const body = { seq, time: new Date(T0 + seq).toISOString(), event: 'register', actor: 'api', userId: 'u1', email: null, sessionId: null, ip: null, userAgent: null, detail: {} }
  return { ...body, hash: chainHash(previous, body) }
}
const e1 = event(1, GENESIS.hash)
const e2 = event(2, e1.hash)

async function* from(records: unknown[]): AsyncIterable<ExportRecord> {
  for (const r of records) yield r as ExportRecord
}

const read = (records: unknown[]) => readImport(from(records))

t.test('a good export comes back whole, in order, with the genesis as anchor when it has none', async (t) => {
  const s2 = { type: 'session', session: { ...session('s2', 'u2'), previousHash: 'p-s2', rotations: [{ at: T0, sealed: 'x' }], generation: 2 } }
  const set = await read([meta, u1, u2, s1, s2, { type: 'key', key: key('k1') }, { type: 'secret', name: 'device_key', value: 'dk' }, { type: 'secret', name: 'mfa_key', value: 'mk' }, { type: 'audit', event: e1 }, { type: 'audit', event: e2 }])
  t.same(set, {
    meta,
    users: [u1.user, u2.user],
    sessions: [s1.session, s2.session],
    keys: [key('k1')],
    secrets: { device_key: 'dk', mfa_key: 'mk' },
    mfaUsed: [],
    anchor: GENESIS,
    events: [e1, e2],
    head: { seq: 2, hash: e2.hash },
  })
  const bare = await read([meta])
  t.same(bare, { meta, users: [], sessions: [], keys: [], secrets: {}, mfaUsed: [], anchor: GENESIS, events: [], head: GENESIS }, 'the meta record alone is an empty store')
  const used = await read([{ ...meta, format: 2 }, u1, { type: 'mfa_used', id: 'm1', expiresAt: T0 + 300_000 }, { type: 'mfa_used', id: 'm2', expiresAt: T0 + 300_000 }])
  t.same(used.mfaUsed, [{ id: 'm1', expiresAt: T0 + 300_000 }, { id: 'm2', expiresAt: T0 + 300_000 }], 'format 2: the used mfaTokens')
  t.equal(set.meta.format, 1, 'format 1, an export of before them, is read as ever')
  const anchored = await read([{ ...meta, backend: 'postgres' }, { type: 'audit_anchor', anchor: { seq: 40, hash: e2.hash } }, { type: 'audit', event: { ...event(41, e2.hash) } }])
  t.same(anchored.anchor, { seq: 40, hash: e2.hash })
  t.same(anchored.events.map((e) => e.seq), [41], 'numbered on from the anchor')
  t.same((await read([meta, { type: 'audit_anchor', anchor: { seq: 40, hash: e2.hash } }])).head, { seq: 40, hash: e2.hash }, 'no event: the log goes on from the anchor')
})

t.test('the events are taken as they are: out of order, with gaps, changed, or before the anchor; the log goes on after the highest seq', async (t) => {
  const e3 = event(3, e2.hash)
  const e5 = event(5, event(4, e3.hash).hash)
  const changed = { ...e2, email: 'someone@example.com' }
  const set = await read([meta, { type: 'audit_anchor', anchor: GENESIS }, { type: 'audit', event: e5 }, { type: 'audit', event: e1 }, { type: 'audit', event: changed }, { type: 'audit', event: e3 }])
  t.same(set.events, [e5, e1, changed, e3], 'in the file’s order, each as it was: whether they chain is for audit verify to say')
  t.same(set.head, { seq: 5, hash: e5.hash }, 'the highest seq, wherever it stood')
  const below = await read([meta, { type: 'audit_anchor', anchor: { seq: 40, hash: e2.hash } }, { type: 'audit', event: e1 }])
  t.same([below.events.map((e) => e.seq), below.head], [[1], { seq: 40, hash: e2.hash }], 'an event the anchor says was removed is taken; the log goes on from the anchor')
})

t.test('a session may come before its user, and a user with its second factor or a pending setup is taken', async (t) => {
  const withMfa = { type: 'user', user: { ...user('u3', 'cy@example.com'), mfa: { secret: 'S', enabledAt: T0, lastStep: 3, recoveryCodes: ['a', 'b'] }, mfaSetup: { secret: 'T', createdAt: T0 } } }
  const set = await read([meta, s1, withMfa, u1, { type: 'key', key: { ...key('k2'), alg: 'RS256', privateKeyPem: RSA.privateKeyPem, publicKeyPem: RSA.publicKeyPem } }])
  t.same(set.users.map((u) => u.id), ['u3', 'u1'])
  t.same(set.sessions.map((s) => s.id), ['s1'])
  t.same(set.keys.map((k) => k.alg), ['RS256'], 'an RS256 key with its RSA pair')
})

/** each case: the records, the line refused, and why */
const refusals: Array<[string, unknown[], number, string]> = [
  ['an empty export', [], 1, 'the export is empty (no meta record)'],
  ['a record before the meta record', [u1, meta], 1, 'the export must begin with its meta record'],
  ['a string', [meta, 'user'], 2, 'not a record (an object with a "type")'],
  ['null', [meta, null], 2, 'not a record (an object with a "type")'],
  ['an array', [meta, [u1]], 2, 'not a record (an object with a "type")'],
  ['a record whose type is no string', [meta, { type: 1 }], 2, 'not a record (an object with a "type")'],
  ['a second meta record', [meta, u1, meta], 3, 'a second meta record'],
  ['another format', [{ ...meta, format: 3 }], 1, 'an export format this authd does not know (3)'],
  ['a used mfaToken without its id', [meta, { type: 'mfa_used', expiresAt: T0 }], 2, 'a used mfaToken without its id or expiresAt'],
  ['a used mfaToken whose expiresAt is text', [meta, { type: 'mfa_used', id: 'm1', expiresAt: 'soon' }], 2, 'a used mfaToken without its id or expiresAt'],
  ['a used mfaToken whose expiresAt is not a whole number of ms', [meta, { type: 'mfa_used', id: 'm1', expiresAt: T0 + 0.5 }], 2, 'a used mfaToken without its id or expiresAt'],
  ['a used mfaToken whose expiresAt is negative', [meta, { type: 'mfa_used', id: 'm1', expiresAt: -1 }], 2, 'a used mfaToken without its id or expiresAt'],
  ['a used mfaToken twice', [meta, { type: 'mfa_used', id: 'm1', expiresAt: T0 }, { type: 'mfa_used', id: 'm1', expiresAt: T0 }], 3, 'the used mfaToken m1 a second time'],
  ['a format as text', [{ ...meta, format: '1' }], 1, 'an export format this authd does not know ("1")'],
  ['an unknown backend', [{ ...meta, backend: 'mysql' }], 1, 'an unknown backend ("mysql")'],
  ['a meta record without its schema', [{ ...meta, schema: undefined }], 1, 'a meta record without its schema or exportedAt'],
  ['a negative schema', [{ ...meta, schema: -1 }], 1, 'a meta record without its schema or exportedAt'],
  ['a meta record without exportedAt', [{ ...meta, exportedAt: T0 }], 1, 'a meta record without its schema or exportedAt'],
  ['an unknown record type', [meta, u1, { type: 'group', group: {} }], 3, 'an unknown record type ("group")'],
  ['an end record (the file reader takes it off)', [meta, { type: 'end', records: 1 }], 2, 'an unknown record type ("end")'],

  ['a user record without its user', [meta, { type: 'user' }], 2, 'a user record without its user'],
  ['a user that is an array', [meta, { type: 'user', user: [] }], 2, 'a user record without its user'],
  ['a user without an id', [meta, { type: 'user', user: { ...user('u1', 'a@x'), id: undefined } }], 2, 'a user whose id is missing or invalid'],
  ['a user whose id is empty', [meta, { type: 'user', user: user('', 'a@x') }], 2, 'a user whose id is missing or invalid'],
  ['a user whose id is 1001 bytes', [meta, { type: 'user', user: user('i'.repeat(1001), 'a@x') }], 2, 'a user whose id is missing or invalid'],
  ['a user whose email is 501 two-byte characters', [meta, { type: 'user', user: user('u1', 'é'.repeat(501)) }], 2, 'a user whose email is missing or invalid'],
  ['a user whose passwordHash is no string', [meta, { type: 'user', user: { ...user('u1', 'a@x'), passwordHash: null } }], 2, 'a user whose passwordHash is missing or invalid'],
  ['a user whose createdAt is text', [meta, { type: 'user', user: { ...user('u1', 'a@x'), createdAt: 'yesterday' } }], 2, 'a user whose createdAt is missing or invalid'],
  ['a user whose updatedAt is infinite', [meta, { type: 'user', user: { ...user('u1', 'a@x'), updatedAt: Infinity } }], 2, 'a user whose updatedAt is missing or invalid'],
  ['a user whose disabled is text', [meta, { type: 'user', user: { ...user('u1', 'a@x'), disabled: 'false' } }], 2, 'a user whose disabled is missing or invalid'],
  ['a user whose mfa lacks its recovery codes', [meta, { type: 'user', user: { ...user('u1', 'a@x'), mfa: { secret: 'S', enabledAt: T0, lastStep: 1 } } }], 2, 'a user whose mfa is missing or invalid'],
  ['a user whose mfa is null', [meta, { type: 'user', user: { ...user('u1', 'a@x'), mfa: null } }], 2, 'a user whose mfa is missing or invalid'],
  ['a user whose mfaSetup lacks its secret', [meta, { type: 'user', user: { ...user('u1', 'a@x'), mfaSetup: { createdAt: T0 } } }], 2, 'a user whose mfaSetup is missing or invalid'],
  ['a second user with one id', [meta, u1, { type: 'user', user: user('u1', 'other@example.com') }], 3, 'a second user with the id u1'],
  ['a second user with one email', [meta, u1, u2, { type: 'user', user: user('u3', 'ann@example.com') }], 4, 'a second user with the email ann@example.com'],

  ['a session record without its session', [meta, u1, { type: 'session', session: 's1' }], 3, 'a session record without its session'],
  ['a session without its user id', [meta, u1, { type: 'session', session: { ...session('s1', 'u1'), userId: undefined } }], 3, 'a session whose userId is missing or invalid'],
  ['a session whose previousHash is missing (null when none)', [meta, u1, { type: 'session', session: { ...session('s1', 'u1'), previousHash: undefined } }], 3, 'a session whose previousHash is missing or invalid'],
  ['a session whose rotatedAt is text', [meta, u1, { type: 'session', session: { ...session('s1', 'u1'), rotatedAt: 'now' } }], 3, 'a session whose rotatedAt is missing or invalid'],
  ['a session of a negative generation', [meta, u1, { type: 'session', session: { ...session('s1', 'u1'), generation: -1 } }], 3, 'a session whose generation is missing or invalid'],
  ['a session of a fractional generation', [meta, u1, { type: 'session', session: { ...session('s1', 'u1'), generation: 1.5 } }], 3, 'a session whose generation is missing or invalid'],
  ['a session whose rotation lacks its sealed token', [meta, u1, { type: 'session', session: { ...session('s1', 'u1'), rotations: [{ at: T0 }] } }], 3, 'a session whose rotations is missing or invalid'],
  ['a session whose amr holds a number', [meta, u1, { type: 'session', session: { ...session('s1', 'u1'), amr: ['pwd', 1] } }], 3, 'a session whose amr is missing or invalid'],
  ['a session whose refresh hash is empty', [meta, u1, { type: 'session', session: { ...session('s1', 'u1'), refreshHash: '' } }], 3, 'a session whose refreshHash is missing or invalid'],
  ['a second session with one id', [meta, u1, s1, { type: 'session', session: { ...session('s1', 'u1'), refreshHash: 'other', familyHash: 'other-f' } }], 4, 'a second session with the id s1'],
  ['a session with the refresh hash of another', [meta, u1, s1, { type: 'session', session: { ...session('s2', 'u1'), refreshHash: 'h-s1' } }], 4, 'a session sharing a refresh-token hash with the session s1'],
  ['a session whose previous token is another’s family', [meta, u1, s1, { type: 'session', session: { ...session('s2', 'u1'), previousHash: 'f-s1', generation: 1 } }], 4, 'a session sharing a refresh-token hash with the session s1'],
  ['a session of a user not in the export', [meta, u1, s1, { type: 'session', session: session('s2', 'u9') }, u2], 4, 'a session of the user u9, who is not in the export'],

  ['a key record without its key', [meta, { type: 'key', key: null }], 2, 'a key record without its key'],
  ['a key of an unknown algorithm', [meta, { type: 'key', key: { ...key('k1'), alg: 'HS256' } }], 2, 'a key whose alg is missing or invalid'],
  ['a key in an unknown state', [meta, { type: 'key', key: { ...key('k1'), state: 'revoked' } }], 2, 'a key whose state is missing or invalid'],
  ['a key without its public key', [meta, { type: 'key', key: { ...key('k1'), publicKeyPem: undefined } }], 2, 'a key whose publicKeyPem is missing or invalid'],
  ['a key whose retiredAt is missing (null when none)', [meta, { type: 'key', key: { ...key('k1'), retiredAt: undefined } }], 2, 'a key whose retiredAt is missing or invalid'],
  ['a second key with one kid', [meta, { type: 'key', key: key('k1') }, { type: 'key', key: { ...key('k1'), state: 'next' } }], 3, 'a second key with the kid k1'],

  ['an unknown secret', [meta, { type: 'secret', name: 'jwt_key', value: 'v' }], 2, 'an unknown secret ("jwt_key")'],
  ['a secret without its value', [meta, { type: 'secret', name: 'device_key' }], 2, 'the secret device_key without its value'],
  ['a secret whose value is empty', [meta, { type: 'secret', name: 'mfa_key', value: '' }], 2, 'the secret mfa_key without its value'],
  ['a secret twice', [meta, { type: 'secret', name: 'mfa_key', value: 'a' }, { type: 'secret', name: 'mfa_key', value: 'b' }], 3, 'the secret mfa_key a second time'],

  ['an anchor after the events', [meta, { type: 'audit', event: e1 }, { type: 'audit_anchor', anchor: GENESIS }], 3, 'the audit anchor must come once, before the audit events'],
  ['two anchors', [meta, { type: 'audit_anchor', anchor: GENESIS }, { type: 'audit_anchor', anchor: GENESIS }], 3, 'the audit anchor must come once, before the audit events'],
  ['an anchor whose hash is upper-case', [meta, { type: 'audit_anchor', anchor: { seq: 0, hash: 'A'.repeat(64) } }], 2, 'an audit anchor without its seq or hash'],
  ['an anchor without its seq', [meta, { type: 'audit_anchor', anchor: { hash: GENESIS.hash } }], 2, 'an audit anchor without its seq or hash'],
  ['an audit record without its event', [meta, { type: 'audit' }], 2, 'an audit record without its event'],
  ['an event without its hash', [meta, { type: 'audit', event: { ...e1, hash: undefined } }], 2, 'an audit event whose hash is missing or invalid'],
  ['an event whose time has no milliseconds', [meta, { type: 'audit', event: { ...e1, time: '2025-03-04T09:00:00Z' } }], 2, 'an audit event whose time is missing or invalid'],
  ['an event whose time is no date', [meta, { type: 'audit', event: { ...e1, time: '2025-13-04T09:00:00.000Z' } }], 2, 'an audit event whose time is missing or invalid'],
  ['an event whose detail is an array', [meta, { type: 'audit', event: { ...e1, detail: [] } }], 2, 'an audit event whose detail is missing or invalid'],
  ['an event whose userId is a number', [meta, { type: 'audit', event: { ...e1, userId: 7 } }], 2, 'an audit event whose userId is missing or invalid'],
  ['a second event of one seq', [meta, { type: 'audit', event: e1 }, { type: 'audit', event: e2 }, { type: 'audit', event: { ...e1, email: 'x@example.com' } }], 4, 'a second audit event with the seq 1'],
  ['an event whose seq is not a whole number', [meta, { type: 'audit', event: { ...e1, seq: 1.5 } }], 2, 'an audit event whose seq is missing or invalid'],
  ['an event whose seq is text', [meta, { type: 'audit', event: { ...e1, seq: '1' } }], 2, 'an audit event whose seq is missing or invalid'],
  ['an event of seq 0', [meta, { type: 'audit', event: { ...e1, seq: 0 } }], 2, 'an audit event whose seq is missing or invalid'],
  ['an event without its seq', [meta, { type: 'audit', event: { ...e1, seq: undefined } }], 2, 'an audit event whose seq is missing or invalid'],
  // times a Date cannot hold: every listing that shows them would fail
  ['a user created at 1e30', [meta, { type: 'user', user: { ...u1.user, createdAt: 1e30 } }], 2, 'a user whose createdAt is missing or invalid'],
  ['a session created at -1e300', [meta, u1, { type: 'session', session: { ...s1.session, createdAt: -1e300 } }], 3, 'a session whose createdAt is missing or invalid'],
  ['a session rotated at 1e16', [meta, u1, { type: 'session', session: { ...s1.session, rotations: [{ at: 1e16, sealed: 'x' }] } }], 3, 'a session whose rotations is missing or invalid'],
  ['a key retiring at 9e15', [meta, { type: 'key', key: { ...key('k1'), retiringAt: 9e15 } }], 2, 'a key whose retiringAt is missing or invalid'],
  ['a factor enabled at 1e20', [meta, { type: 'user', user: { ...u1.user, mfa: { secret: 'S', enabledAt: 1e20, lastStep: 3, recoveryCodes: [] } } }], 2, 'a user whose mfa is missing or invalid'],
  // keys a daemon could not load
  ['a key whose private PEM is no key', [meta, { type: 'key', key: { ...key('k1'), privateKeyPem: 'private' } }], 2, 'a key whose privateKeyPem is no private key'],
  ['a key whose public PEM is no key', [meta, { type: 'key', key: { ...key('k1'), publicKeyPem: 'public' } }], 2, 'a key whose publicKeyPem is no public key'],
  ['an ES256 key holding an RSA pair', [meta, { type: 'key', key: { ...key('k1'), privateKeyPem: RSA.privateKeyPem, publicKeyPem: RSA.publicKeyPem } }], 2, 'a key whose private key is not one for ES256'],
  ['a key whose public half is another pair\'s', [meta, { type: 'key', key: { ...key('k1'), publicKeyPem: generateKey('ES256', T0).publicKeyPem } }], 2, 'a key whose public key is not that of its private key'],
]

t.test('each malformed record is refused with BAD_EXPORT naming its line and why', async (t) => {
  for (const [name, records, line, why] of refusals) {
    await t.rejects(read(records), { name: 'AppError', code: 'BAD_EXPORT', message: `line ${line} of the export: ${why}`, params: { line, why } }, name)
  }
})

t.test('the 1000-byte bound on ids, emails, kids and token hashes counts UTF-8 bytes', async (t) => {
  const set = await read([meta, { type: 'user', user: user('i'.repeat(1000), 'é'.repeat(500)) }])
  t.equal(set.users.length, 1, '1000 bytes are taken')
})

t.test('earlierTokenHashes: the replaced token, then the rotations still in their grace newest first, each once, no more than the generation', async (t) => {
  const base = session('s1', 'u1')
  t.same(earlierTokenHashes(base), [], 'a session never rotated')
  t.same(earlierTokenHashes({ ...base, previousHash: 'p', generation: 1 }), ['p'])
  const rotations = [
    { at: 1, sealed: 'x' },
    { at: 2, sealed: 'y' },
  ]
  t.same(earlierTokenHashes({ ...base, previousHash: 'p', rotations, generation: 5 }), ['p'], 'older tokens find the session through its family')
  t.same(earlierTokenHashes({ ...base, previousHash: null, rotations, generation: 3 }), [])
  t.same(earlierTokenHashes({ ...base, previousHash: 'p', generation: 0 }), [], 'a generation-0 session had no earlier token')
})

t.test('a refusal at the very end of a full export leaves the store as empty as it was', async (t) => {
  const dir = t.testdir()
  const store = await openTestStore(t, dir)
  const own = await store.ensureDeviceKey(() => 'own-device-key')
  const users = Array.from({ length: 40 }, (_, i) => ({ type: 'user', user: user(`u${i}`, `user${i}@example.com`) }))
  const sessions = Array.from({ length: 40 }, (_, i) => ({ type: 'session', session: session(`s${i}`, `u${i}`) }))
  const good = [meta, ...users, ...sessions, { type: 'key', key: key('k1') }, { type: 'secret', name: 'device_key', value: 'theirs' }, { type: 'audit', event: e1 }]
  const lastLine = good.length + 1
  for (const [last, why] of [
    [{ type: 'audit', event: { ...e1, hash: 'f'.repeat(64) } }, 'a second audit event with the seq 1'],
    [{ type: 'session', session: session('s-late', 'u-gone') }, 'a session of the user u-gone, who is not in the export'],
  ] as const) {
    await t.rejects(store.importRecords(from([...good, last])), { code: 'BAD_EXPORT', message: `line ${lastLine} of the export: ${why}` })
    t.same(await store.listUsers(), [], 'no user')
    t.same(await store.listSessions(), [], 'no session')
    t.same(await store.listKeys(), [], 'no key')
    t.equal(await store.ensureDeviceKey(() => 'x'), own, 'its own device key')
    t.same(await store.auditEvents({ limit: 5 }), [], 'no event')
  }
  t.same(await store.importRecords(from(good)), { users: 40, sessions: 40, keys: 1, replacedAuditEvents: 0 }, 'the export without its bad line loads')
})
