/**
 * store/audit-chain.ts (README, "Audit log"): canonical JSON (keys sorted by UTF-16 code unit at
 * every level, no whitespace, strings as JSON.stringify writes them), the chain hash over it, and
 * the event a draft is sealed into. test/core/audit.test.ts checks chains built from these;
 * here are the functions' own rules, held to the README's definition and its snippet's `canon`.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { canonicalJson, chainHash, GENESIS, sealEvent } from '../../src/store/audit-chain.js'
import type { AuditDraft } from '../../src/store/store.js'
import { ROOT } from '../helpers/app.js'

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex')

/** the README snippet's `canon`, as written there */
function readmeCanon(): (v: unknown) => string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const m = /const canon = ([\s\S]*?\n {2}: [^\n]*)\n/.exec(readme)
  if (m === null) throw new Error('README.md: no canon in the audit-check snippet')
  return new Function(`const canon = ${m[1]}; return canon`)() as (v: unknown) => string
}

t.test('canonicalJson: keys sorted by UTF-16 code unit at every level, no whitespace', async (t) => {
  t.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }), '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}')
  // code units, not code points or a locale: U+1F600 is the surrogates D83D DE00, below U+FF5A
  t.equal(canonicalJson({ 'ｚ': 1, '😀': 2, é: 3, Z: 4, _: 5, a: 6, '10': 7, '9': 8 }), '{"10":7,"9":8,"Z":4,"_":5,"a":6,"é":3,"😀":2,"ｚ":1}')
  t.equal(canonicalJson([]), '[]')
  t.equal(canonicalJson({}), '{}')
})

t.test('canonicalJson: strings and numbers as JSON.stringify writes them', async (t) => {
  t.equal(canonicalJson('line\n"quoted"\u0000\u2028é😀'), JSON.stringify('line\n"quoted"\u0000\u2028é😀'))
  t.equal(canonicalJson({ 'a"b': 'x' }), '{"a\\"b":"x"}', 'keys escaped too')
  t.equal(canonicalJson([1.5, -0, 1e21, 0.1 + 0.2, true, false, null]), '[1.5,0,1e+21,0.30000000000000004,true,false,null]')
})

t.test('canonicalJson: undefined is left out of objects and null in arrays, as JSON.stringify does; a value JSON cannot hold throws', async (t) => {
  t.equal(canonicalJson({ a: undefined, b: 1 }), '{"b":1}')
  t.equal(canonicalJson([undefined, { a: undefined }]), '[null,{}]')
  t.equal(canonicalJson({ a: [undefined] }), JSON.stringify({ a: [undefined] }))
  for (const bad of [undefined, 10n, () => 1, Symbol('s')]) t.throws(() => canonicalJson(bad), TypeError, typeof bad)
  t.throws(() => canonicalJson({ detail: { n: 10n } }), TypeError, 'however deep')
})

t.test('canonicalJson is the README snippet’s canon on every value an event can hold', async (t) => {
  const canon = readmeCanon()
  const values: unknown[] = [
    { seq: 1, time: '2025-03-04T09:05:07.123Z', event: 'login.failure', actor: 'api', userId: null, email: 'ann@example.com', sessionId: null, ip: '203.0.113.7', userAgent: 'curl/8.5.0', detail: { reason: 'bad_password' } },
    { Zeta: 1, alpha: [true, null, { b: 'é', a: '😀', 'ｚ': [] }], _x: -0.5, '': '' },
    [[[]], {}, 'x', 0],
  ]
  for (const v of values) t.equal(canonicalJson(v), canon(v), JSON.stringify(v).slice(0, 40))
})

const draft: AuditDraft = {
  at: Date.UTC(2025, 2, 4, 9, 5, 7, 123),
  event: 'session.revoke',
  actor: 'api',
  userId: 'u1',
  email: 'ann@example.com',
  sessionId: 's1',
  ip: '203.0.113.7',
  userAgent: 'curl/8.5.0',
  detail: { current: true },
}

t.test('GENESIS: seq 0 and 64 zeros', async (t) => {
  t.same(GENESIS, { seq: 0, hash: '0'.repeat(64) })
})

t.test('sealEvent: the documented fields, time as ISO 8601 UTC with ms, hash the SHA-256 of previous, newline, the rest as canonical JSON', async (t) => {
  const e = sealEvent(draft, 7, GENESIS.hash)
  t.same(Object.keys(e).sort(), ['actor', 'detail', 'email', 'event', 'hash', 'ip', 'seq', 'sessionId', 'time', 'userAgent', 'userId'])
  const { at: _at, ...fields } = draft
  t.same(e, { ...fields, seq: 7, time: '2025-03-04T09:05:07.123Z', hash: e.hash }, 'the draft’s fields as they were, `at` become `time`')
  const body = '{"actor":"api","detail":{"current":true},"email":"ann@example.com","event":"session.revoke","ip":"203.0.113.7","seq":7,"sessionId":"s1","time":"2025-03-04T09:05:07.123Z","userAgent":"curl/8.5.0","userId":"u1"}'
  t.equal(e.hash, sha256(`${'0'.repeat(64)}\n${body}`))
  t.match(e.hash, /^[0-9a-f]{64}$/, 'lowercase hex')
})

t.test('chainHash: the event’s own hash left out; the previous hash, the seq and every field count', async (t) => {
  const e = sealEvent(draft, 1, GENESIS.hash)
  const { hash, ...rest } = e
  t.equal(chainHash(GENESIS.hash, e), hash)
  t.equal(chainHash(GENESIS.hash, rest), hash, 'with or without its hash field')
  t.equal(chainHash(GENESIS.hash, { ...e, hash: 'f'.repeat(64) }), hash, 'whatever its hash field says')
  const hashes = new Set([
    hash,
    chainHash('1'.repeat(64), e),
    chainHash(GENESIS.hash, { ...e, seq: 2 }),
    chainHash(GENESIS.hash, { ...e, detail: { current: false } }),
    chainHash(GENESIS.hash, { ...e, userAgent: null }),
    chainHash(GENESIS.hash, { ...e, time: '2025-03-04T09:05:07.124Z' }),
  ])
  t.equal(hashes.size, 6, 'each change, another hash')
  // the order the fields come in does not matter: canonical JSON
  const reversed = Object.fromEntries(Object.entries(e).reverse()) as typeof e
  t.equal(chainHash(GENESIS.hash, reversed), hash)
  // the next event chains to this one's hash
  const next = sealEvent({ ...draft, event: 'logout', detail: {} }, 2, hash)
  t.equal(next.hash, chainHash(hash, next))
  t.not(next.hash, sealEvent({ ...draft, event: 'logout', detail: {} }, 2, GENESIS.hash).hash)
})
