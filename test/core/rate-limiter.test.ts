import t from 'tap'
import fc from 'fast-check'
import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { RateRule } from '../../src/config/types.js'
import { createRateLimiter } from '../../src/core/rate-limiter.js'
import { Keep, limitKey, type ConsumeResult } from '../../src/store/rate-limit.js'

const rule = (count: number, windowMs: number): RateRule => ({ count, windowMs, text: `${count}/${windowMs}ms` })

function fakeClock(start = 1_000_000) {
  let ms = start
  return {
    now: () => ms,
    advance: (by: number) => {
      ms += by
    },
  }
}

function setup(maxKeys = 1000) {
  const clock = fakeClock()
  const limiter = createRateLimiter({ maxKeys, now: clock.now })
  return { clock, limiter }
}

const ok = (r: ConsumeResult) => r.ok
const retry = (r: ConsumeResult) => (r.ok ? null : r.retryAfterS)

t.test('limit of 5: five pass, the sixth is refused with the time until the oldest expires', async (t) => {
  const { clock, limiter } = setup()
  const r5 = rule(5, 15 * 60_000)
  for (let i = 0; i < 5; i++) {
    t.ok(limiter.consume([{ key: 'k', rule: r5 }]).ok, `attempt ${i + 1} passes`)
    clock.advance(1000)
  }
  // oldest event was 5 s ago: 15 min - 5 s left
  t.equal(retry(limiter.consume([{ key: 'k', rule: r5 }])), 15 * 60 - 5)
  clock.advance(15 * 60_000 - 5000 - 1)
  t.equal(retry(limiter.consume([{ key: 'k', rule: r5 }])), 1, 'retry-after rounds up, never 0')
  clock.advance(1)
  t.ok(limiter.consume([{ key: 'k', rule: r5 }]).ok, 'room again once the oldest event leaves the window')
})

t.test('the window slides: events expire one by one, not all at once', async (t) => {
  const { clock, limiter } = setup()
  const r3 = rule(3, 10_000)
  const at = (key: string) => limiter.consume([{ key, rule: r3 }])
  t.ok(at('k').ok) // t=0
  clock.advance(4000)
  t.ok(at('k').ok) // t=4
  clock.advance(4000)
  t.ok(at('k').ok) // t=8
  clock.advance(1000) // t=9
  t.equal(retry(at('k')), 1, 'the t=0 event leaves at t=10')
  clock.advance(1000) // t=10
  t.ok(at('k').ok, 'only the oldest event expired: one slot')
  t.equal(retry(at('k')), 4, 'next slot when the t=4 event leaves at t=14')
  clock.advance(3999) // t=13.999
  t.notOk(at('k').ok)
  clock.advance(1) // t=14
  t.ok(at('k').ok)
  t.notOk(at('k').ok, 'a fixed window would have reset everything at t=10; this one never exceeds 3 per 10 s')
})

t.test('the retry-after is ceil of the wait in seconds', async (t) => {
  const { clock, limiter } = setup()
  const r1 = rule(1, 2500)
  t.ok(limiter.consume([{ key: 'k', rule: r1 }]).ok)
  t.equal(retry(limiter.consume([{ key: 'k', rule: r1 }])), 3)
  clock.advance(1600)
  t.equal(retry(limiter.consume([{ key: 'k', rule: r1 }])), 1)
})

t.test('multi-entry consume is atomic: one blocked entry counts nothing on the others', async (t) => {
  const { clock, limiter } = setup()
  const tight = rule(1, 60_000)
  const loose = rule(3, 60_000)
  t.ok(limiter.consume([{ key: 'ip', rule: tight }]).ok)
  clock.advance(10_000)
  for (let i = 0; i < 5; i++) {
    const r = limiter.consume([
      { key: 'email', rule: loose },
      { key: 'ip', rule: tight },
    ])
    t.equal(retry(r), 50, 'refused because of ip')
    t.match(r, { ok: false, blockedBy: 1 }, 'and it says so: the second entry')
  }
  t.equal(limiter.size(), 1, 'the refused calls did not even create the email key')
  // email has had nothing counted: all 3 of its slots are free
  for (let i = 0; i < 3; i++) t.ok(limiter.consume([{ key: 'email', rule: loose }]).ok)
  t.notOk(limiter.consume([{ key: 'email', rule: loose }]).ok)
})

t.test('multi-entry retry-after is the longest wait among the blocked entries', async (t) => {
  const { clock, limiter } = setup()
  t.ok(limiter.consume([{ key: 'a', rule: rule(1, 10_000) }, { key: 'b', rule: rule(1, 60_000) }]).ok)
  clock.advance(1000)
  const r = limiter.consume([{ key: 'a', rule: rule(1, 10_000) }, { key: 'b', rule: rule(1, 60_000) }])
  t.equal(retry(r), 59)
  t.match(r, { ok: false, blockedBy: 0 }, 'blockedBy names the first entry without room')
})

t.test('one key listed twice in a call is charged twice', async (t) => {
  const { limiter } = setup()
  const r3 = rule(3, 60_000)
  t.ok(limiter.consume([{ key: 'k', rule: r3 }, { key: 'k', rule: r3 }]).ok)
  t.notOk(limiter.consume([{ key: 'k', rule: r3 }, { key: 'k', rule: r3 }]).ok, '2 + 2 > 3, atomically refused')
  t.ok(limiter.consume([{ key: 'k', rule: r3 }]).ok, 'the third slot was left untouched')
  t.equal(limiter.size(), 1)
})

t.test('edge cases answer with a full window rather than never', async (t) => {
  const { limiter } = setup(1)
  const r1 = rule(1, 30_000)
  t.equal(retry(limiter.consume([{ key: 'k', rule: r1 }, { key: 'k', rule: r1 }])), 30, 'two events can never fit a limit of 1')
  t.equal(limiter.size(), 0)
  t.ok(limiter.consume([{ key: 'a', rule: r1 }, { key: 'b', rule: r1 }]).ok, 'two new keys beyond maxKeys 1 are still counted: never refused for room')
  t.equal(limiter.size(), 2)
})

t.test('a key emptied by a refused call is still dropped later', async (t) => {
  const { clock, limiter } = setup(50)
  const short = rule(1, 1000)
  for (let i = 0; i < 40; i++) t.ok(limiter.consume([{ key: `s${i}`, rule: short }]).ok)
  t.ok(limiter.consume([{ key: 'block', rule: rule(1, 60_000) }]).ok)
  clock.advance(1000)
  // the sweep at the start of this call drops a chunk of the expired keys, not s39; the call
  // then empties s39's log but is refused because of 'block', so s39 stays, with no events
  t.notOk(limiter.consume([{ key: 's39', rule: short }, { key: 'block', rule: rule(1, 60_000) }]).ok)
  t.ok(limiter.size() > 1)
  t.equal(limiter.prune(), 40 - 32, 'everything expired goes, the emptied key too')
  t.equal(limiter.size(), 1)
})

t.test('release un-counts exactly the events of that consume', async (t) => {
  const { clock, limiter } = setup()
  const r2 = rule(2, 60_000)
  const entries = [
    { key: 'ip_email', rule: r2 },
    { key: 'email', rule: r2 },
  ]
  const first = limiter.consume(entries)
  clock.advance(1000)
  const second = limiter.consume(entries)
  t.ok(first.ok && second.ok)
  t.notOk(limiter.consume(entries).ok, 'full')
  if (!second.ok) throw new Error('unreachable')
  limiter.release(second.token)
  t.ok(limiter.consume(entries).ok, 'one slot back on both keys')
  t.notOk(limiter.consume(entries).ok)
  limiter.release(second.token)
  t.notOk(limiter.consume(entries).ok, 'releasing the same token twice frees nothing more')
})

t.test('release of events that are gone is a no-op', async (t) => {
  const { clock, limiter } = setup()
  const r1 = rule(1, 10_000)
  const a = limiter.consume([{ key: 'k', rule: r1 }])
  limiter.reset('k')
  const b = limiter.consume([{ key: 'k', rule: r1 }])
  t.ok(a.ok && b.ok)
  if (!a.ok) throw new Error('unreachable')
  limiter.release(a.token)
  t.notOk(limiter.consume([{ key: 'k', rule: r1 }]).ok, "a's event was reset; b's (same millisecond) stays")
  clock.advance(10_000)
  t.ok(limiter.consume([{ key: 'k', rule: r1 }]).ok)
  if (!b.ok) throw new Error('unreachable')
  limiter.release(b.token)
  t.notOk(limiter.consume([{ key: 'k', rule: r1 }]).ok, "b's event had expired: nothing of the new one is released")
})

t.test('release after the event slid out of a still-held key frees nothing', async (t) => {
  const { clock, limiter } = setup()
  const r2 = rule(2, 10_000)
  const early = limiter.consume([{ key: 'k', rule: r2 }]) // 0 s
  clock.advance(5000)
  t.ok(limiter.consume([{ key: 'k', rule: r2 }]).ok) // 5 s
  clock.advance(5000)
  t.ok(limiter.consume([{ key: 'k', rule: r2 }]).ok, '10 s: the 0 s event slid out') // 5 s, 10 s
  if (!early.ok) throw new Error('unreachable')
  limiter.release(early.token)
  t.notOk(limiter.consume([{ key: 'k', rule: r2 }]).ok, 'the 5 s and 10 s events still count')
})

t.test('releasing the only event drops the key', async (t) => {
  const { limiter } = setup()
  const r = limiter.consume([{ key: 'k', rule: rule(5, 1000) }])
  t.equal(limiter.size(), 1)
  if (!r.ok) throw new Error('unreachable')
  limiter.release(r.token)
  t.equal(limiter.size(), 0)
})

t.test('reset forgets a key and leaves the others', async (t) => {
  const { limiter } = setup()
  const r1 = rule(1, 60_000)
  t.ok(limiter.consume([{ key: 'a', rule: r1 }, { key: 'b', rule: r1 }]).ok)
  limiter.reset('a')
  t.equal(limiter.size(), 1)
  t.ok(limiter.consume([{ key: 'a', rule: r1 }]).ok)
  t.notOk(limiter.consume([{ key: 'b', rule: r1 }]).ok)
  limiter.reset('missing')
  t.equal(limiter.size(), 2)
})

t.test('fifty concurrent consumes of one key with limit 5: exactly five pass', async (t) => {
  const { limiter } = setup()
  const r5 = rule(5, 15 * 60_000)
  const results = await Promise.all(
    Array.from({ length: 50 }, async () => limiter.consume([{ key: limitKey('login.ip', '10.0.0.1'), rule: r5 }])),
  )
  t.equal(results.filter(ok).length, 5)
  t.equal(results.filter((r) => !r.ok).length, 45)
})

// What a full limiter does is tested here; how fast it stays doing it is measured by the stress
// suite (stress/cases/limiter.mjs, limiter-fill.mjs) and the bench's 429 rows, not timed here.
t.test('maxKeys: a full limiter never refuses: it forgets the oldest live key, and counts what it forgot', async (t) => {
  const clock = fakeClock()
  let evicted = 0
  const limiter = createRateLimiter({ maxKeys: 3, now: clock.now, onEvict: (n) => (evicted += n) })
  const r2 = rule(2, 60_000)
  for (const key of ['a', 'b', 'c']) {
    t.ok(limiter.consume([{ key, rule: r2 }]).ok)
    clock.advance(1000)
  }
  t.ok(limiter.consume([{ key: 'd', rule: r2 }]).ok, 'a new key is counted')
  t.equal(limiter.size(), 3)
  t.equal(evicted, 1)
  t.ok(limiter.consume([{ key: 'b', rule: r2 }]).ok, "'b' kept its event…")
  t.notOk(limiter.consume([{ key: 'b', rule: r2 }]).ok, '…so its limit of 2 is reached')
  t.equal(evicted, 1, 'a call on held keys forgets nothing')
  t.ok(limiter.consume([{ key: 'a', rule: r2 }]).ok, "'a' (the oldest) was forgotten: a fresh window")
  t.equal(evicted, 2)
})

t.test('maxKeys: a refused call forgets nothing to make room', async (t) => {
  const { limiter } = setup(2)
  const r1 = rule(1, 60_000)
  t.ok(limiter.consume([{ key: 'a', rule: r1 }]).ok)
  t.ok(limiter.consume([{ key: 'b', rule: r1 }]).ok)
  t.notOk(limiter.consume([{ key: 'a', rule: r1 }, { key: 'new', rule: r1 }]).ok)
  t.notOk(limiter.consume([{ key: 'b', rule: r1 }]).ok, "'b' is still held")
})

t.test("maxKeys: a call never forgets its own keys to make room for its others (the count it adds to would start afresh)", async (t) => {
  const { clock, limiter } = setup(2)
  const r3 = rule(3, 60_000)
  const pair = { key: 'pair', rule: r3, keep: Keep.PAIR }
  for (let i = 0; i < 2; i++) t.ok(limiter.consume([pair]).ok, `failure ${i + 1} of 3`)
  clock.advance(1000)
  t.ok(limiter.consume([{ key: 'other', rule: r3, keep: Keep.PAIR }]).ok, 'the limiter is full')
  clock.advance(1000)
  // 'pair' is the oldest key, the one room for 'fresh' would be taken from were it not named here
  t.ok(limiter.consume([pair, { key: 'fresh', rule: rule(20, 60_000), keep: Keep.ACCOUNT }]).ok, "the third failure of 'pair', with a new key beside it")
  t.match(limiter.consume([pair]), { ok: false, blockedBy: 0 }, "'pair' kept its three: the fourth is refused")
})

t.test('maxKeys: expired keys are dropped before any live key', async (t) => {
  const clock = fakeClock()
  let evicted = 0
  const limiter = createRateLimiter({ maxKeys: 3, now: clock.now, onEvict: (n) => (evicted += n) })
  const short = rule(1, 1000)
  const long = rule(1, 60_000)
  t.ok(limiter.consume([{ key: 'live1', rule: long }]).ok)
  t.ok(limiter.consume([{ key: 'old', rule: short }]).ok)
  t.ok(limiter.consume([{ key: 'live2', rule: long }]).ok)
  clock.advance(1000)
  t.ok(limiter.consume([{ key: 'new', rule: long }]).ok, "'old' expired and made room")
  t.equal(limiter.size(), 3)
  t.equal(evicted, 0, 'dropping an expired key is not an eviction')
  t.notOk(limiter.consume([{ key: 'live1', rule: long }]).ok, 'the live keys were kept')
  t.notOk(limiter.consume([{ key: 'live2', rule: long }]).ok)
})

t.test('maxKeys: an address seen once is forgotten first, the failures of an email last', async (t) => {
  const { clock, limiter } = setup(4)
  const r = rule(10, 60_000)
  const add = (key: string, keep: Keep) => t.ok(limiter.consume([{ key, rule: r, keep }]).ok, `${key} counted`)
  // a key still held refuses a limit of one; the second entry, which never has room, makes every
  // probe a refusal, so probing changes nothing
  const held = (key: string) => {
    const r = limiter.consume([{ key, rule: rule(1, 60_000) }, { key: 'probe', rule: rule(0, 60_000) }])
    return !r.ok && r.blockedBy === 0
  }
  add('email', Keep.ACCOUNT) // the oldest of all
  clock.advance(1000)
  add('pair', Keep.PAIR)
  clock.advance(1000)
  add('busy-ip', Keep.ADDRESS)
  add('busy-ip', Keep.ADDRESS) // seen twice: kept like a pair
  clock.advance(1000)
  add('once-ip', Keep.ADDRESS) // the newest, but seen once
  // a flood of new addresses churns among the addresses seen once
  for (let i = 0; i < 100; i++) add(`flood-${i}`, Keep.ADDRESS)
  t.equal(limiter.size(), 4)
  t.ok(held('pair') && held('busy-ip') && held('email'), 'the flood forgot only addresses seen once')
  t.notOk(held('once-ip'), "'once-ip' went first, although it was newer than the others")
  // then the middle kind, oldest first; the email's failures last of all
  clock.advance(1000)
  add('p1', Keep.PAIR)
  add('p2', Keep.PAIR)
  t.notOk(held('pair'), "'pair' (older than 'busy-ip') went next")
  t.ok(held('busy-ip') && held('email'))
  add('p3', Keep.PAIR)
  add('p4', Keep.PAIR)
  t.ok(held('email'), "the email's failures are kept while anything else can go")
  for (const e of ['e2', 'e3', 'e4']) add(e, Keep.ACCOUNT)
  t.ok(held('email'), 'other emails make room from the rest first')
  add('e5', Keep.ACCOUNT)
  t.notOk(held('email'), 'and only when nothing else is left does the oldest email go')
})

t.test('a key touched later expires later (the list follows the latest event)', async (t) => {
  const { clock, limiter } = setup(2)
  const r2 = rule(2, 10_000)
  t.ok(limiter.consume([{ key: 'a', rule: r2 }]).ok) // a: 0
  clock.advance(1000)
  t.ok(limiter.consume([{ key: 'b', rule: r2 }]).ok) // b: 1
  clock.advance(5000)
  t.ok(limiter.consume([{ key: 'a', rule: r2 }]).ok) // a: 0, 6 → expires at 16
  clock.advance(5500) // 11.5: b expired, a has one live event
  t.ok(limiter.consume([{ key: 'c', rule: r2 }]).ok, "'b' is dropped for 'c'")
  t.notOk(limiter.consume([{ key: 'a', rule: r2 }, { key: 'a', rule: r2 }]).ok, "'a' still holds its 6 s event")
  t.ok(limiter.consume([{ key: 'a', rule: r2 }]).ok)
})

t.test('expired keys leave over time with traffic, and prune drops the rest', async (t) => {
  const { clock, limiter } = setup(1000)
  const r = rule(1, 1000)
  for (let i = 0; i < 500; i++) limiter.consume([{ key: `k${i}`, rule: r }])
  t.equal(limiter.size(), 500)
  clock.advance(1000)
  limiter.consume([{ key: 'fresh', rule: r }])
  t.ok(limiter.size() < 500, `a single consume sweeps a chunk (${limiter.size()} left)`)
  for (let i = 0; i < 20; i++) limiter.consume([{ key: `fresh${i}`, rule: r }])
  t.equal(limiter.size(), 21, 'traffic alone drains the expired keys')
  clock.advance(1000)
  t.equal(limiter.prune(), 21)
  t.equal(limiter.size(), 0)
})

t.test('keys under different windows are swept independently', async (t) => {
  const { clock, limiter } = setup(10)
  t.ok(limiter.consume([{ key: 'long', rule: rule(1, 60_000) }]).ok)
  clock.advance(1)
  t.ok(limiter.consume([{ key: 'short', rule: rule(1, 1000) }]).ok)
  clock.advance(1000)
  t.equal(limiter.prune(), 1, "'short' expired although it came after a live key of a longer window")
  t.notOk(limiter.consume([{ key: 'long', rule: rule(1, 60_000) }]).ok)
})

t.test('a clock that steps back does not free or reorder anything', async (t) => {
  const clock = fakeClock()
  const limiter = createRateLimiter({ maxKeys: 10, now: clock.now })
  const r1 = rule(1, 10_000)
  t.ok(limiter.consume([{ key: 'k', rule: r1 }]).ok)
  clock.advance(-60_000)
  t.notOk(limiter.consume([{ key: 'k', rule: r1 }]).ok)
  clock.advance(70_000)
  t.ok(limiter.consume([{ key: 'k', rule: r1 }]).ok)
})

t.test('limitKey keeps axes and parts apart', async (t) => {
  t.match(limitKey('login.ip_email', '1.2.3.4', 'a@b.c'), /^login\.ip_email:[A-Za-z0-9_-]{22}\|[A-Za-z0-9_-]{22}$/)
  t.match(limitKey('refresh.ip', '2001:db8::/64'), /^refresh\.ip:[A-Za-z0-9_-]{22}$/)
  t.equal(limitKey('x', 'a@b.c'), limitKey('x', 'a@b.c'), 'the same parts, the same key')
  t.not(limitKey('x', 'a|b', 'c'), limitKey('x', 'a', 'b|c'), '| inside a part is escaped')
  t.not(limitKey('x', 'a\\', '|b'), limitKey('x', 'a\\|', 'b'), 'and so is the escape character')
  t.not(limitKey('x', 'a', 'b'), limitKey('x', 'a|b'))
  t.throws(() => limitKey('login:ip', 'x'), 'an axis with ":" could collide with another axis plus a part')
  t.throws(() => limitKey('', 'x'))
})

t.test('limitKey is of one small size whatever the parts hold (a 16 KB email was a 98 000-character key)', async (t) => {
  const huge = '\ufdfa'.repeat(5400).normalize('NFKC') + '@example.com'
  t.ok(huge.length > 90_000)
  const key = limitKey('login_ip_email', '1.2.3.4', huge)
  t.equal(key.length, limitKey('login_ip_email', '1.2.3.4', 'a@b.c').length)
  t.ok(key.length < 64, `${key.length} characters`)
})

t.test('resetByPart forgets the keys of an axis whose given part matches, and no others', async (t) => {
  const { limiter } = setup()
  const r = rule(1, 60_000)
  for (const ip of ['1.1.1.1', '2.2.2.2']) {
    for (const email of ['a@x.test', 'b@x.test']) limiter.consume([{ key: limitKey('login_ip_email', ip, email), rule: r }])
  }
  limiter.consume([{ key: limitKey('login_email', 'a@x.test'), rule: r }])
  t.equal(limiter.resetByPart('login_ip_email', 1, 'a@x.test'), 2)
  t.ok(limiter.consume([{ key: limitKey('login_ip_email', '2.2.2.2', 'a@x.test'), rule: r }]).ok, 'cleared')
  t.notOk(limiter.consume([{ key: limitKey('login_ip_email', '2.2.2.2', 'b@x.test'), rule: r }]).ok, 'another email is kept')
  t.notOk(limiter.consume([{ key: limitKey('login_email', 'a@x.test'), rule: r }]).ok, 'another axis is kept')
  t.equal(limiter.resetByPart('login_ip_email', 0, '1.1.1.1'), 1, 'by address: the one left')
})

// The daemon's flood of 200 000 distinct keys within 64 MB of heap is the stress suite's (stress/,
// docs/reliability.md); here the same bound per key, at half the count: 100 000 keys, the default
// max_keys, within 32 MB.
t.test('memory: 100 000 one-event keys stay within 32 MB, bounded by maxKeys, and fall back after the window', async (t) => {
  v8.setFlagsFromString('--expose-gc')
  const gc = (globalThis.gc ?? runInNewContext('gc')) as () => void
  const heap = () => {
    gc()
    gc()
    return process.memoryUsage().heapUsed
  }
  const MB = 1024 * 1024
  const r = rule(5, 15 * 60_000)
  const keyOf = (i: number) => limitKey('login.ip', `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)

  // Fills a fresh limiter with `keys` distinct keys, one event each, on a realistic clock
  // (fractional milliseconds, as performance.now() gives), and measures the heap it holds.
  function fill(maxKeys: number, keys: number) {
    const clock = fakeClock(123_456.789)
    const before = heap()
    const limiter = createRateLimiter({ maxKeys, now: clock.now })
    let refused = 0
    for (let i = 0; i < keys; i++) {
      if (i % 1000 === 0) clock.advance(1.5)
      if (!limiter.consume([{ key: keyOf(i), rule: r }]).ok) refused++
    }
    return { clock, limiter, refused, grownMB: (heap() - before) / MB }
  }

  {
    const { limiter, refused, grownMB } = fill(100_000, 100_000)
    t.equal(limiter.size(), 100_000)
    t.equal(refused, 0)
    t.ok(grownMB <= 32, `100 000 keys held in ${grownMB.toFixed(1)} MB`)
  }

  const { clock, limiter, refused, grownMB } = fill(50_000, 100_000)
  t.equal(limiter.size(), 50_000, 'never more than maxKeys')
  t.equal(refused, 0, 'the keys beyond maxKeys were counted, the oldest forgotten for them')
  t.ok(grownMB <= 32, `maxKeys 50 000 after 100 000 keys: ${grownMB.toFixed(1)} MB`)

  clock.advance(15 * 60_000)
  for (let i = 0; i < 1000; i++) limiter.consume([{ key: limitKey('login.ip', `fresh${i}`), rule: r }])
  t.ok(limiter.size() < 50_000, `traffic after the window drains expired keys (${limiter.size()} left)`)
  limiter.prune()
  t.equal(limiter.size(), 1000, 'prune leaves only the fresh keys')
  t.ok(limiter.consume([{ key: keyOf(75_000), rule: r }]).ok, 'and an old key is welcome again')
})

t.test('property: never more than count passes in any window, and exactly the sliding log', async (t) => {
  const step = fc.record({ dt: fc.nat({ max: 3000 }), key: fc.integer({ min: 0, max: 2 }) })
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 5 }),
      fc.integer({ min: 1, max: 5000 }),
      fc.array(step, { maxLength: 200 }),
      (count, windowMs, steps) => {
        const clock = fakeClock(0)
        const limiter = createRateLimiter({ maxKeys: 100, now: clock.now })
        const r = rule(count, windowMs)
        const passed: number[][] = [[], [], []]
        for (const { dt, key } of steps) {
          clock.advance(dt)
          const now = clock.now()
          const inWindow = passed[key].filter((at) => at > now - windowMs)
          const result = limiter.consume([{ key: String(key), rule: r }])
          // the reference model: a sliding log of the passed events
          if (result.ok !== inWindow.length < count) return false
          if (result.ok) passed[key].push(now)
          else if (result.retryAfterS !== Math.max(1, Math.ceil((inWindow[inWindow.length - count] + windowMs - now) / 1000))) {
            return false
          }
        }
        for (const times of passed) {
          for (const end of times) {
            if (times.filter((at) => at > end - windowMs && at <= end).length > count) return false
          }
        }
        return true
      },
    ),
    { numRuns: 300 },
  )
  t.pass('300 random schedules agree with the model')
})

t.test('property: a multi-entry consume counts on all entries or on none', async (t) => {
  const call = fc.record({
    dt: fc.nat({ max: 2000 }),
    keys: fc.uniqueArray(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 3 }),
  })
  fc.assert(
    fc.property(fc.array(call, { maxLength: 100 }), (calls) => {
      const clock = fakeClock(0)
      const limiter = createRateLimiter({ maxKeys: 100, now: clock.now })
      const rules = [rule(1, 1000), rule(2, 3000), rule(3, 2000), rule(2, 5000)]
      const passed: number[][] = [[], [], [], []]
      for (const { dt, keys } of calls) {
        clock.advance(dt)
        const now = clock.now()
        const room = keys.every((k) => passed[k].filter((at) => at > now - rules[k].windowMs).length < rules[k].count)
        const result = limiter.consume(keys.map((k) => ({ key: `k${k}`, rule: rules[k] })))
        if (result.ok !== room) return false
        if (result.ok) for (const k of keys) passed[k].push(now)
      }
      return true
    }),
    { numRuns: 300 },
  )
  t.pass('300 random schedules agree with the model')
})

const firstBlock = (r: ConsumeResult): boolean | null => (r.ok ? null : r.firstBlock)

t.test('firstBlock: the first refusal of each of 20 000 keys in its window, and no other, however many keys', async (t) => {
  // more keys than any side record of blocks could hold: the mark is on each key's own entry
  const { clock, limiter } = setup(50_000)
  const r1 = rule(1, 15 * 60_000)
  const keys = Array.from({ length: 20_000 }, (_, i) => limitKey('login_ip', `10.0.${i >> 8}.${i & 255}`))
  for (const key of keys) limiter.consume([{ key, rule: r1 }])
  const firsts = (): number => keys.filter((key) => firstBlock(limiter.consume([{ key, rule: r1 }])) === true).length
  t.equal(firsts(), keys.length, 'each key’s first refusal is its block')
  clock.advance(60_000)
  t.equal(firsts(), 0, 'the refusals after it, in turn over every key, are none')
  t.equal(firsts(), 0, 'nor again')

  // a window after the first refusal: the key's count is spent again, and so it is a new block
  clock.advance(15 * 60_000)
  t.equal(keys.filter((key) => limiter.consume([{ key, rule: r1 }]).ok).length, keys.length, 'each key counts again')
  t.equal(firsts(), keys.length, 'the next window has its own first block per key')
})

t.test('firstBlock: of the entry that blocks; a key emptied or reset starts afresh', async (t) => {
  const { clock, limiter } = setup()
  const r2 = rule(2, 10_000)
  const roomy = rule(100, 10_000)
  const pair = [{ key: 'roomy', rule: roomy }, { key: 'k', rule: r2 }]
  t.ok(limiter.consume(pair).ok)
  t.ok(limiter.consume(pair).ok)
  t.match(limiter.consume(pair), { ok: false, blockedBy: 1, firstBlock: true }, 'the second entry blocks, first')
  t.match(limiter.consume([{ key: 'k', rule: r2 }]), { ok: false, blockedBy: 0, firstBlock: false }, 'the same key named alone: the same block')

  // its events leave the window before a window has passed since its block: counted afresh, a new block
  clock.advance(10_000)
  t.ok(limiter.consume([{ key: 'k', rule: r2 }]).ok)
  t.ok(limiter.consume([{ key: 'k', rule: r2 }]).ok)
  t.equal(firstBlock(limiter.consume([{ key: 'k', rule: r2 }])), true, 'a key counted again after it emptied blocks anew')
  t.equal(firstBlock(limiter.consume([{ key: 'k', rule: r2 }])), false)
  limiter.reset('k')
  t.ok(limiter.consume([{ key: 'k', rule: r2 }]).ok && limiter.consume([{ key: 'k', rule: r2 }]).ok)
  t.equal(firstBlock(limiter.consume([{ key: 'k', rule: r2 }])), true, 'and so does one reset')
})

t.test('firstBlock: a key kept full by a steady flood is blocked once per window length', async (t) => {
  const { clock, limiter } = setup()
  const r2 = rule(2, 10_000)
  const at = () => limiter.consume([{ key: 'k', rule: r2 }])
  t.ok(at().ok) // t=0
  clock.advance(9_000)
  t.ok(at().ok) // t=9
  clock.advance(500)
  t.equal(firstBlock(at()), true, 't=9.5: the block')
  clock.advance(500)
  t.ok(at().ok, 't=10: the t=0 event left, one more counted')
  clock.advance(500)
  t.equal(firstBlock(at()), false, 't=10.5: the same block (the key never emptied)')
  clock.advance(8_500)
  t.ok(at().ok, 't=19: the t=9 event left')
  clock.advance(400)
  t.equal(firstBlock(at()), false, 't=19.4: within a window of the block')
  clock.advance(100)
  t.equal(firstBlock(at()), true, 't=19.5: a window after it, a new block')
})
