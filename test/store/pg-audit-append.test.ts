/**
 * The PostgreSQL audit append is one statement (authd_audit_append): the database puts in the
 * seq and the chain hash from pieces of the event's canonical JSON the store sends. Whatever an
 * event holds, the hash stored must be the one audit-chain.ts computes, and the body read back
 * the event as sealed.
 */
import t from 'tap'
import { chainHash, GENESIS, sealEvent } from '../../src/store/audit-chain.js'
import { openPgStore } from '../../src/store/pg/pg-store.js'
import type { AuditDraft, AuditEvent } from '../../src/store/store.js'
import { pgDatabase } from '../helpers/pg.js'

const T0 = 1_700_000_000_000

const hostile: Array<Record<string, unknown>> = [
  { quote: `it's "quoted"`, backslash: 'C:\\dir\\n\\u0000', dollar: '$1 $$ $fn$' },
  { separators: 'line\u2028para\u2029end', control: '\u0001\u001f\t\n\r', nul: '\u0000' },
  { emoji: '🔑 clé ключ 鍵', lone: '\ud800 and \udfff' },
  // a nested key that sorts and prints like the top-level seq
  { seq: 0, '"seq":0': '"seq":0', Zupper: 1, 'ä': 2, '': 3, nested: { seq: 7, list: [1, null, 'x'] } },
  { big: 'x'.repeat(200_000), many: Array.from({ length: 2000 }, (_, i) => ({ i, s: `v${i}` })) },
  {},
]

const draft = (i: number, detail: Record<string, unknown>): AuditDraft => ({
  at: T0 + i,
  event: i % 2 === 0 ? 'login.failure' : "odd 'event' \\ name",
  actor: 'api',
  userId: i === 3 ? `u'"\\${i}` : null,
  email: i === 1 ? 'ä@example.com' : null,
  sessionId: null,
  ip: '127.0.0.1',
  userAgent: 'agent\u2028"x"',
  detail,
})

t.test('hostile event contents: the stored hash is the chain hash, the body the sealed event', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const { store } = await openPgStore({ url: db.url, poolSize: 2 })
  t.teardown(() => store.close())
  const drafts = hostile.map((d, i) => draft(i, d))
  // one append of several events, then one of one
  await store.appendAudit(drafts.slice(0, 4))
  await store.appendAudit(drafts.slice(4))
  const kept: AuditEvent[] = []
  const anchor = await store.auditChain(async (anchor, events) => {
    for await (const e of events) kept.push(e)
    return anchor
  })
  t.same(anchor, GENESIS)
  t.equal(kept.length, drafts.length)
  let previous = GENESIS.hash
  drafts.forEach((d, i) => {
    const sealed = sealEvent(d, i + 1, previous)
    t.equal(kept[i]!.hash, sealed.hash, `event ${i + 1}: the hash audit-chain.ts computes`)
    t.equal(kept[i]!.hash, chainHash(previous, kept[i]!), `event ${i + 1}: its body chains`)
    t.same(kept[i], JSON.parse(JSON.stringify(sealed)), `event ${i + 1}: the body as sealed`)
    t.equal(JSON.stringify(kept[i]), JSON.stringify(sealed), `event ${i + 1}: in the sealed event's key order`)
    previous = sealed.hash
  })
})
