/**
 * The audit log above the store: the drafts' shape, and the chain check of `authctl audit verify`
 * on chains built as the store builds them, untouched and tampered with.
 */
import t from 'tap'
import { adminDraft, apiDraft, AUDIT_EVENTS, authctlActor, isAuditEventName, readAudit, verifyChain } from '../../src/core/audit.js'
import { chainHash, GENESIS, sealEvent } from '../../src/store/audit-chain.js'
import type { AuditEvent, AuditQuery } from '../../src/store/store.js'
import { buildChain, draft, iterate, secretsIn, T0 } from '../helpers/audit.js'

const verify = (events: AuditEvent[], anchor = GENESIS) => verifyChain(anchor, iterate(events))

t.test('the event names are the README table’s, each once', async (t) => {
  t.equal(AUDIT_EVENTS.length, 26)
  t.equal(new Set(AUDIT_EVENTS).size, AUDIT_EVENTS.length)
  t.ok(isAuditEventName('admin.user.mfa_reset'))
  t.notOk(isAuditEventName('admin.user'))
  t.notOk(isAuditEventName('LOGIN.SUCCESS'))
})

t.test('an API draft: actor api, the client’s address and user agent (cut to 256), nulls for what does not apply', async (t) => {
  const d = apiDraft('login.failure', { ip: '203.0.113.7', userAgent: 'x'.repeat(300) }, { at: T0, email: 'a@example.com', detail: { reason: 'unknown_user' } })
  t.same(d, {
    at: T0,
    event: 'login.failure',
    actor: 'api',
    userId: null,
    email: 'a@example.com',
    sessionId: null,
    ip: '203.0.113.7',
    userAgent: 'x'.repeat(256),
    detail: { reason: 'unknown_user' },
  })
  const bare = apiDraft('logout', { ip: '', userAgent: '' }, { at: T0, userId: 'u1', sessionId: 's1' })
  t.same([bare.ip, bare.userAgent, bare.detail], [null, null, {}])
})

t.test('an admin draft: actor authctl:<os user>, no address', async (t) => {
  const d = adminDraft('admin.user.disable', { at: T0, userId: 'u1', email: 'a@example.com', detail: { revokedSessions: 2 } })
  t.match(d.actor, /^authctl:.+/)
  t.same([d.ip, d.userAgent, d.sessionId], [null, null, null])
  t.equal(adminDraft('admin.keys.rotate', { at: T0, actor: 'authctl:alice' }).actor, 'authctl:alice')
  t.equal(authctlActor(() => ({ username: 'ops' })), 'authctl:ops')
  // a uid the system has no name for (a container's bare uid): userInfo throws
  const nameless = () => {
    throw new Error('ENOENT')
  }
  t.equal(authctlActor(nameless, () => 4242), 'authctl:uid:4242')
  t.equal(authctlActor(nameless, null), 'authctl:unknown')
})

t.test('an untouched chain verifies, from the genesis and from a retention anchor', async (t) => {
  t.same(await verify([]), { ok: true, events: 0 })
  t.same(await verify(buildChain(50)), { ok: true, events: 50 })
  // retention removed events 1-30: the anchor is the 30th's hash
  const all = buildChain(50)
  t.same(await verify(all.slice(30), { seq: 30, hash: all[29]!.hash }), { ok: true, events: 20 })
})

t.test('one field changed breaks the chain at that event', async (t) => {
  const chain = buildChain(10)
  const fields: Array<[keyof AuditEvent, unknown]> = [
    ['time', '2025-03-04T09:05:09.000Z'],
    ['event', 'logout'],
    ['actor', 'authctl:root'],
    ['userId', 'someone-else'],
    ['email', null],
    ['sessionId', 'sess-x'],
    ['ip', '198.51.100.1'],
    ['userAgent', 'curl/8.6.0'],
    ['detail', { reason: 'disabled' }],
    ['hash', 'f'.repeat(64)],
  ]
  for (const [field, value] of fields) {
    const tampered = chain.map((e) => (e.seq === 7 ? { ...e, [field]: value } : e))
    t.same(await verify(tampered), { ok: false, brokenAt: 7 }, `${field} changed`)
  }
  // an event re-sealed after a change (its own hash fixed up) breaks at the next one
  const resealed = [...chain]
  resealed[6] = sealEvent({ ...draft(6), detail: { reason: 'disabled' } }, 7, chain[5]!.hash)
  t.same(await verify(resealed), { ok: false, brokenAt: 8 })
  // the seq itself changed
  t.same(await verify(chain.map((e) => (e.seq === 3 ? { ...e, seq: 33 } : e))), { ok: false, brokenAt: 3 })
})

t.test('a removed event breaks the chain at the missing seq', async (t) => {
  const chain = buildChain(10)
  t.same(await verify(chain.filter((e) => e.seq !== 5)), { ok: false, brokenAt: 5 })
  t.same(await verify(chain.filter((e) => e.seq !== 1)), { ok: false, brokenAt: 1 }, 'the first')
  // removed and the later events renumbered to hide the gap: their hashes still chain to the old ones
  const renumbered = chain.filter((e) => e.seq !== 5).map((e) => (e.seq > 5 ? { ...e, seq: e.seq - 1 } : e))
  t.same(await verify(renumbered), { ok: false, brokenAt: 5 })
  // events removed before the anchor says: the anchor does not lead to what remains
  t.same(await verify(chain.slice(3), { seq: 2, hash: chain[1]!.hash }), { ok: false, brokenAt: 3 })
})

t.test('two swapped events break the chain at the first of the two places', async (t) => {
  const chain = buildChain(10)
  const swapped = [...chain]
  ;[swapped[3], swapped[4]] = [swapped[4]!, swapped[3]!]
  t.same(await verify(swapped), { ok: false, brokenAt: 4 })
  // swapped with their seqs exchanged too (in seq order again): the hashes give it away
  const relabelled = [...swapped]
  relabelled[3] = { ...swapped[3]!, seq: 4 }
  relabelled[4] = { ...swapped[4]!, seq: 5 }
  t.same(await verify(relabelled), { ok: false, brokenAt: 4 })
  const far = [...chain]
  ;[far[1], far[8]] = [far[8]!, far[1]!]
  t.same(await verify(far), { ok: false, brokenAt: 2 })
})

t.test('an event JSON cannot hold is a broken event, not a crash', async (t) => {
  const chain = buildChain(3)
  const odd = chain.map((e) => (e.seq === 2 ? { ...e, detail: { n: 10n } as unknown as Record<string, unknown> } : e))
  t.same(await verify(odd), { ok: false, brokenAt: 2 })
  t.same(await verify(chain.map((e) => (e.seq === 3 ? ({ ...e, hash: undefined } as unknown as AuditEvent) : e))), { ok: false, brokenAt: 3 })
})

t.test('the chain hash is the documented one: SHA-256 of previous hash, newline, canonical JSON without hash', async (t) => {
  const [e] = buildChain(1)
  const { createHash } = await import('node:crypto')
  const body = `{"actor":"api","detail":{},"email":"user0@example.com","event":"login.success","ip":"203.0.113.7","seq":1,"sessionId":"sess-0","time":"2025-03-04T09:05:00.000Z","userAgent":"curl/8.5.0","userId":"user-0"}`
  t.equal(e!.hash, createHash('sha256').update(`${'0'.repeat(64)}\n${body}`).digest('hex'))
  t.equal(chainHash(GENESIS.hash, e!), e!.hash)
})

t.test('readAudit: store filters pass through; an email or text is matched page by page, within the scan bound', async (t) => {
  const chain = buildChain(1200)
  const queries: AuditQuery[] = []
  const store = {
    auditEvents: async (q: AuditQuery) => {
      queries.push(q)
      return chain
        .filter((e) => (q.before === undefined || e.seq < q.before) && (q.userId === undefined || e.userId === q.userId) && (q.event === undefined || e.event === q.event))
        .filter((e) => q.since === undefined || Date.parse(e.time) >= q.since)
        .reverse()
        .slice(0, q.limit)
    },
  }
  const direct = await readAudit(store, { userId: 'user-1', event: 'login.failure' }, 5)
  t.same(direct.map((e) => e.seq), [1196, 1190, 1184, 1178, 1172])
  t.same(queries, [{ userId: 'user-1', event: 'login.failure', limit: 5 }])

  queries.length = 0
  const byEmail = await readAudit(store, { email: 'user2@example.com' }, 600)
  t.equal(byEmail.length, 400, 'every match, read over three pages')
  t.ok(byEmail.every((e, i) => e.email === 'user2@example.com' && (i === 0 || e.seq < byEmail[i - 1]!.seq)))
  t.same(queries.map((q) => q.before), [undefined, 701, 201])

  const scanned = await readAudit(store, { text: 'USER2@' }, 50, 30)
  t.equal(scanned.length, 10, 'only matches among the newest 30 read')
  t.same(await readAudit(store, { text: 'login.f', since: T0 + 1190 * 1000 }, 50), chain.slice(1190).filter((e) => e.event === 'login.failure').reverse())
})

t.test('secretsIn finds a secret, or its SHA-256, in any field at any depth', async (t) => {
  const [e] = buildChain(1)
  t.same(secretsIn([e!], ['hunter2-password']), [])
  const leaky = { ...e!, detail: { nested: [{ x: 'a hunter2-password here' }] } }
  t.same(secretsIn([leaky], ['hunter2-password']), ['1 event.detail.nested[0].x: hunter2-password'])
  const { createHash } = await import('node:crypto')
  const hashed = { ...e!, userAgent: createHash('sha256').update('refresh-token-value').digest('base64url') }
  t.same(secretsIn([hashed], ['refresh-token-value']), ['1 event.userAgent: sha256(refresh-token-value)'])
})
