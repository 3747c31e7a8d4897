/**
 * The README's chain check ("Audit log": the Node snippet after the `audit-check` marker) run as
 * written, with node, on export files whose chains are built as the store builds them: it must
 * pass an untouched chain and name the event where a tampered one breaks, so it cannot rot.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
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
  const dir = t.testdir()
  const script = join(dir, 'check-audit.mjs')
  writeFileSync(script, snippet())
  const records: ExportRecord[] = [{ type: 'meta', format: 1, schema: 1, backend: 'lmdb', exportedAt: '2025-03-04T10:00:00.000Z' }]
  if (anchor !== undefined) records.push({ type: 'audit_anchor', anchor })
  for (const event of events) records.push({ type: 'audit', event })
  const file = join(dir, 'export.jsonl')
  writeFileSync(file, records.map((r) => JSON.stringify(r)).join('\n') + '\n')
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
