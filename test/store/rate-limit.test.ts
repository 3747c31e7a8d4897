/**
 * store/rate-limit.ts: the limiter's keys, built here so the in-process limiter and PostgreSQL's
 * count on the same ones (docs/api.md, "Rate limits": every key of one small size, whatever the
 * request held). partHash is the documented hash of a part, whether or not it was remembered;
 * limitKey lays the hashes out as `axis:h1|h2…`, the layout both limiters' resetByPart read;
 * Keep orders what a full limiter forgets first. test/core/rate-limiter.test.ts has the keys in
 * use (distinct parts, distinct keys; a 16 KB email).
 */
import { createHash } from 'node:crypto'
import t from 'tap'
import { Keep, limitKey, partHash } from '../../src/store/rate-limit.js'

/** the first 128 bits of the part's SHA-256 over its UTF-8, base64url */
const expected = (part: string): string => createHash('sha256').update(part, 'utf8').digest().subarray(0, 16).toString('base64url')

t.test('partHash: the first 128 bits of the SHA-256 of the part’s UTF-8, base64url: 22 characters', async (t) => {
  for (const part of ['', '203.0.113.7', '2001:db8::/64', 'ann@example.com', 'é', 'e\u0301', '😀', 'x'.repeat(256), 'x'.repeat(257), 'y'.repeat(16_000)]) {
    const h = partHash(part)
    t.equal(h, expected(part), `${JSON.stringify(part.slice(0, 20))} (${part.length})`)
    t.match(h, /^[A-Za-z0-9_-]{22}$/)
  }
  t.not(partHash('é'), partHash('e\u0301'), 'no normalisation here: the callers canonicalise')
  t.not(partHash('Ann@example.com'), partHash('ann@example.com'), 'nor case folding')
})

t.test('partHash: the same answer the first time, remembered, and after the memory was emptied', async (t) => {
  const parts = Array.from({ length: 5000 }, (_, i) => `198.51.${i >> 8}.${i & 255}`)
  const first = parts.map(partHash)
  // beyond the 4096 it keeps: emptied at least once on the way
  t.same(parts.map(partHash), first)
  t.same(first, parts.map(expected))
  // a part seen again at once (a flood from one address)
  for (let i = 0; i < 3; i++) t.equal(partHash('203.0.113.7'), expected('203.0.113.7'))
  t.equal(new Set(first).size, parts.length, 'distinct parts, distinct hashes')
})

t.test('limitKey: `axis:` and each part’s hash joined by `|`, the layout resetByPart reads', async (t) => {
  t.equal(limitKey('login_ip_email', '203.0.113.7', 'ann@example.com'), `login_ip_email:${expected('203.0.113.7')}|${expected('ann@example.com')}`)
  t.equal(limitKey('login_ip', '203.0.113.7'), `login_ip:${expected('203.0.113.7')}`)
  t.equal(limitKey('global'), 'global:', 'no parts')
  t.equal(limitKey('x', ''), `x:${expected('')}`, 'an empty part is a part')
  const key = limitKey('login_ip_email', '203.0.113.7', 'ann@example.com')
  // how both limiters find the keys of a part (core/rate-limiter.ts, store/pg/limiter.ts)
  t.equal(key.slice('login_ip_email:'.length).split('|')[1], partHash('ann@example.com'))
  t.notOk(/[:|]/.test(key.slice('login_ip_email:'.length).replaceAll('|', '')), 'no hash holds `:` or `|`')
})

t.test('limitKey: every key of one size per axis and part count, whatever the parts held', async (t) => {
  const lengths = new Set([['1.2.3.4', 'a@b.c'], ['2001:db8:1:2::/64', 'é'.repeat(8000)], ['', '']].map(([a, b]) => limitKey('login_ip_email', a!, b!).length))
  t.same([...lengths], ['login_ip_email:'.length + 22 + 1 + 22])
})

t.test('limitKey: the axis is letters, digits, `_`, `.` and `-`, else it throws naming it', async (t) => {
  for (const axis of ['login_ip', 'login.per-ip', 'A9']) t.doesNotThrow(() => limitKey(axis, 'x'), axis)
  for (const axis of ['', 'login:ip', 'login|ip', 'login ip', 'login\nip', 'lögin', 'a/b']) {
    t.throws(() => limitKey(axis, 'x'), { message: `invalid rate limit axis: ${JSON.stringify(axis)}` }, JSON.stringify(axis))
  }
})

t.test('Keep: a client address is forgotten first, an account’s failures last, the rest between', async (t) => {
  t.ok(Keep.ADDRESS < Keep.PAIR && Keep.PAIR < Keep.ACCOUNT)
  // the in-process limiter keeps one list per value, indexed by it (core/rate-limiter.ts)
  t.same(Keep, { ADDRESS: 0, PAIR: 1, ACCOUNT: 2 })
})
