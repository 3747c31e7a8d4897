/**
 * The README's chain check ("Audit log": the Node snippet after the `audit-check` marker) run as
 * written, with node, on export files whose chains are built as the store builds them: it must
 * pass an untouched chain and name the event where a tampered one breaks, so it cannot rot.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { openLmdbStore } from '../src/store/lmdb-store.js'
import type { AuditAnchor, AuditEvent, ExportRecord } from '../src/store/store.js'
import { buildChain, draft } from './helpers/audit.js'
import { ROOT } from './helpers/app.js'

function snippet(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const m = /<!-- audit-check:[^\n]*-->\n```js\n([\s\S]*?)\n```/.exec(readme)
  if (m === null) throw new Error('README.md: no js block after the audit-check marker')
  return m[1]!
}

function run(t: Test, events: AuditEvent[], anchor?: AuditAnchor): { code: number | null; out: string } {
  const records: ExportRecord[] = [{ type: 'meta', format: 1, schema: 1, backend: 'lmdb', exportedAt: '2025-03-04T10:00:00.000Z' }]
  if (anchor !== undefined) records.push({ type: 'audit_anchor', anchor })
  for (const event of events) records.push({ type: 'audit', event })
  return check(t, records)
}

/** the snippet run on these records written as an export file (with its end line) */
function check(t: Test, records: ExportRecord[]): { code: number | null; out: string } {
  const dir = t.testdir()
  const script = join(dir, 'check-audit.mjs')
  writeFileSync(script, snippet())
  const file = join(dir, 'export.jsonl')
  writeFileSync(file, [...records, { type: 'end', records: records.length }].map((r) => JSON.stringify(r)).join('\n') + '\n')
  const r = spawnSync(process.execPath, [script, file], { encoding: 'utf8', timeout: 20_000 })
  return { code: r.status, out: r.stdout + r.stderr }
}

t.test('the snippet is ten lines of code (comments and lone closing braces aside)', async (t) => {
  const code = snippet().split('\n').filter((l) => !/^\s*(\/\/.*|\}?)\s*$/.test(l))
  t.ok(code.length <= 10, `${code.length} lines`)
})

t.test('an untouched chain passes, from the genesis and from a retention anchor', async (t) => {
  // every kind of value the canonical JSON must order and write alike: nested objects, arrays,
  // keys that sort differently by code unit than by locale, non-ASCII text
  const chain = buildChain(40, undefined, (i) => draft(i, { detail: i % 5 === 0 ? { Zeta: 1, alpha: [true, null, { b: 'é', a: '😀' }], _x: -0.5 } : {} }))
  let r = run(t, chain)
  t.equal(r.code, 0, r.out)
  t.match(r.out, 'intact up to event 40')
  r = run(t, chain.slice(25), { seq: 25, hash: chain[24]!.hash })
  t.equal(r.code, 0, r.out)
  t.match(r.out, 'intact up to event 40')
})

t.test('a changed, removed or moved event fails, naming it', async (t) => {
  const chain = buildChain(20)
  let r = run(t, chain.map((e) => (e.seq === 12 ? { ...e, ip: '198.51.100.9' } : e)))
  t.not(r.code, 0)
  t.match(r.out, 'broken at event 12')
  r = run(t, chain.filter((e) => e.seq !== 7))
  t.not(r.code, 0)
  t.match(r.out, 'broken at event 7')
  const swapped = [...chain]
  ;[swapped[2], swapped[3]] = [swapped[3]!, swapped[2]!]
  r = run(t, swapped)
  t.not(r.code, 0)
  t.match(r.out, 'broken at event 3')
})

t.test('a real store’s export: events appended with changes, swept past retention, checked from the anchor', async (t) => {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  const at = Date.UTC(2025, 2, 4, 9, 0, 0)
  for (let i = 0; i < 30; i++) {
    const id = `user-${i}`
    const user = { id, email: `u${i}@example.com`, passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g', createdAt: at, updatedAt: at, disabled: false }
    const d = draft(i, { at: at + i * 60_000, event: 'register', userId: id, email: user.email, detail: { n: i, nested: { Zed: 'é', alpha: [1, null] } } })
    t.ok(await store.createUser(user, [d]))
    await store.appendAudit([draft(i, { at: at + i * 60_000 + 1, event: 'login.failure', detail: { reason: 'bad_password' } })])
  }
  t.equal(await store.sweepAudit(at + 10 * 60_000), 20, 'the first ten minutes swept')
  const records: ExportRecord[] = []
  for await (const r of store.exportRecords()) records.push(r)
  t.match(records.find((r) => r.type === 'audit_anchor'), { anchor: { seq: 20 } })
  const r = check(t, records)
  t.equal(r.code, 0, r.out)
  t.match(r.out, 'intact up to event 60')
  const tampered = records.map((x) => (x.type === 'audit' && x.event.seq === 33 ? { ...x, event: { ...x.event, detail: { reason: 'disabled' } } } : x))
  t.match(check(t, tampered).out, 'broken at event 33')
})
