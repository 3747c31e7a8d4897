/**
 * The PostgreSQL audit append is one statement (authd_audit_append): the database puts in the
 * seq and the chain hash from pieces of the event's canonical JSON the store sends. Whatever an
 * event holds, the hash stored must be the one audit-chain.ts computes, and the body read back
 * the event as sealed. And the retention sweep holds the head, which every append takes, for one
 * chunk of events at a time.
 */
import pg from 'pg'
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

t.test('the retention sweep goes in chunks of 1024, each its own transaction: the head is held for one chunk, not the backlog', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  // long enough a statement time that the sweep waits on the lock below instead of failing
  const { store } = await openPgStore({ url: db.url, poolSize: 4, queryTimeoutMs: 10_000 })
  const holder = new pg.Client({ connectionString: db.url })
  const watcher = new pg.Client({ connectionString: db.url })
  await holder.connect()
  await watcher.connect()
  t.teardown(async () => {
    await holder.end()
    await watcher.end()
    await store.close()
  })
  for (let i = 0; i < 3000; i += 500) await store.appendAudit(Array.from({ length: 500 }, (_, j) => draft(i + j, { n: i + j })))
  // event 2000 locked by another transaction: the sweep stops at the chunk that holds it
  await holder.query('BEGIN')
  await holder.query('SELECT seq FROM authd_audit WHERE seq = 2000 FOR UPDATE')
  const sweeping = store.sweepAudit(T0 + 10_000)
  const anchorSeq = async (): Promise<number> => Number((await watcher.query('SELECT anchor_seq FROM authd_audit_head')).rows[0].anchor_seq)
  let seen = 0
  for (let i = 0; i < 100 && seen === 0; i++) {
    await new Promise((r) => setTimeout(r, 50))
    seen = await anchorSeq()
  }
  t.equal(seen, 1024, 'the first chunk committed while the second waits (one transaction would show nothing yet)')
  const { rows } = await watcher.query('SELECT min(seq)::int AS first FROM authd_audit')
  t.equal(rows[0].first, 1025, 'its events are gone')
  await holder.query('ROLLBACK')
  t.equal(await sweeping, 3000, 'then the rest, chunk by chunk')
  t.equal(await anchorSeq(), 3000)
  await store.appendAudit([draft(3000, {})])
  const after = await store.auditChain(async (anchor, events) => {
    const kept: AuditEvent[] = []
    for await (const e of events) kept.push(e)
    return { anchor, kept }
  })
  t.same(after.kept.map((e) => e.seq), [3001])
  t.equal(after.kept[0]!.hash, chainHash(after.anchor.hash, after.kept[0]!), 'the next event chains to the last one removed')
})
