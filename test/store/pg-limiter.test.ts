/**
 * The rate limiter in PostgreSQL (store/pg/limiter.ts): exact across instances, all entries or
 * none, the in-process limiter's sliding-window answers, under the database's clock. Time is
 * moved by ageing the stored events (no test waits for a window).
 */
import t, { type Test } from 'tap'
import pg from 'pg'
import { limitKey, type RateEntry, type RateLimiter } from '../../src/store/rate-limit.js'
import { REFUSAL_HOLD_MS } from '../../src/store/pg/limiter.js'
import { openPgStore } from '../../src/store/pg/pg-store.js'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ClientContext } from '../../src/core/auth-service.js'
import { decideRefresh, familyHashOf, hashToken, newRefreshToken, type RefreshOutcome } from '../../src/core/sessions.js'
import { newSession, policy } from '../helpers/refresh-store.js'
import type { StoreCharge } from '../../src/store/store.js'
import { pgDatabase } from '../helpers/pg.js'
import { addUser, buildApp } from '../helpers/app.js'

const MIN = 60_000
const rule = (count: number, windowMs = 15 * MIN) => ({ count, windowMs, text: `${count}/${windowMs}ms` })

interface Setup {
  limiters: RateLimiter[]
  /** a connection of the test's own */
  admin: pg.Client
  /**
   * moves every stored event `ms` into the past, and waits out the hold in which an instance
   * answers a refusal it was given from memory (as for another instance's clear)
   */
  age(ms: number): Promise<void>
  /** the events counted now on `key` under `windowMs` */
  held(key: string, windowMs?: number): Promise<number>
}

async function setup(t: Test, n = 1): Promise<Setup | null> {
  const db = await pgDatabase(t)
  if (!db) return null
  const opened = await Promise.all(Array.from({ length: n }, () => openPgStore({ url: db.url, poolSize: 8 })))
  const admin = new pg.Client({ connectionString: db.url })
  await admin.connect()
  t.teardown(async () => {
    await admin.end()
    await Promise.all(opened.map(({ store }) => store.close()))
  })
  return {
    limiters: opened.map((o) => o.limiter),
    admin,
    age: async (ms) => {
      await admin.query(`UPDATE authd_rate SET times = ARRAY(SELECT x - $1::bigint * 1000 FROM unnest(times) AS x ORDER BY x), blocked_until = blocked_until - $1::bigint * 1000`, [ms])
      await sleep(REFUSAL_HOLD_MS)
    },
    held: async (key, windowMs = 15 * MIN) => {
      const { rows } = await admin.query(
        `SELECT count(*)::int AS n FROM authd_rate, unnest(times) AS x
         WHERE key = $1 AND window_ms = $2 AND x + window_ms * 1000 > (extract(epoch FROM clock_timestamp()) * 1000000)::bigint`,
        [key, windowMs],
      )
      return rows[0].n as number
    },
  }
}

t.test('50 concurrent consumes with a limit of 5 over three instances: exactly 5 counted', async (t) => {
  const s = await setup(t, 3)
  if (!s) return
  const entry: RateEntry = { key: limitKey('login_ip_email', '203.0.113.7', 'ann@example.com'), rule: rule(5) }
  const results = await Promise.all(Array.from({ length: 50 }, (_, i) => s.limiters[i % 3]!.consume([entry])))
  t.equal(results.filter((r) => r.ok).length, 5, 'five counted')
  t.equal(results.filter((r) => !r.ok).length, 45, 'forty-five refused')
  t.equal(await s.held(entry.key), 5)
  for (const r of results) if (!r.ok) t.ok(r.retryAfterS >= 890 && r.retryAfterS <= 900 && r.blockedBy === 0, 'retry when the first event leaves')
})

t.test('new keys raced by three instances, entries in both orders: counted exactly, no deadlock', async (t) => {
  const s = await setup(t, 3)
  if (!s) return
  const a: RateEntry = { key: limitKey('a', 'x'), rule: rule(7) }
  const b: RateEntry = { key: limitKey('b', 'x'), rule: rule(1000) }
  const results = await Promise.all(Array.from({ length: 60 }, (_, i) => s.limiters[i % 3]!.consume(i % 2 === 0 ? [a, b] : [b, a])))
  t.equal(results.filter((r) => r.ok).length, 7)
  t.equal(await s.held(a.key), 7)
  t.equal(await s.held(b.key), 7, 'the other entry charged only with the consumes that counted')
})

t.test('all entries or none: the first that has no room is named, the others are not charged', async (t) => {
  const s = await setup(t)
  if (!s) return
  const [limiter] = s.limiters
  const wide: RateEntry = { key: limitKey('login_ip', '203.0.113.7'), rule: rule(50) }
  const narrow: RateEntry = { key: limitKey('login_email', 'ann@example.com'), rule: rule(2, 60 * MIN) }
  t.ok((await limiter!.consume([wide, narrow])).ok)
  t.ok((await limiter!.consume([wide, narrow])).ok)
  const refused = await limiter!.consume([wide, narrow])
  t.match(refused, { ok: false, blockedBy: 1 })
  t.equal(await s.held(wide.key), 2, 'the entry with room was not charged')
  t.equal(await s.held(narrow.key, 60 * MIN), 2)
  // one counter listed twice counts twice
  const twice: RateEntry = { key: limitKey('twice', 'x'), rule: rule(3) }
  t.ok((await limiter!.consume([twice, twice])).ok)
  t.match(await limiter!.consume([twice, twice]), { ok: false, blockedBy: 1 })
  t.equal(await s.held(twice.key), 2)
})

t.test('a sliding window: retry after the oldest counted event leaves it, room again once it has', async (t) => {
  const s = await setup(t)
  if (!s) return
  const [limiter] = s.limiters
  const e: RateEntry = { key: limitKey('refresh_ip', '198.51.100.1'), rule: rule(3, 10 * MIN) }
  t.ok((await limiter!.consume([e])).ok)
  await s.age(4 * MIN)
  t.ok((await limiter!.consume([e])).ok)
  t.ok((await limiter!.consume([e])).ok)
  const refused = await limiter!.consume([e])
  t.ok(!refused.ok && refused.retryAfterS > 5 * 60 && refused.retryAfterS <= 6 * 60, `the oldest leaves in 6 minutes (${!refused.ok && refused.retryAfterS} s)`)
  await s.age(6 * MIN)
  t.ok((await limiter!.consume([e])).ok, 'the oldest has left: one more fits')
  const again = await limiter!.consume([e])
  t.ok(!again.ok && again.retryAfterS > 3 * 60 && again.retryAfterS <= 4 * 60, `then the next oldest (${!again.ok && again.retryAfterS} s)`)
  await s.age(10 * MIN)
  t.equal(await s.held(e.key, 10 * MIN), 0, 'all gone after a window')
  for (let i = 0; i < 3; i++) t.ok((await limiter!.consume([e])).ok)
})

t.test('a limit of 0 refuses with the whole window', async (t) => {
  const s = await setup(t)
  if (!s) return
  t.match(await s.limiters[0]!.consume([{ key: limitKey('zero', 'x'), rule: rule(0, 2 * MIN) }]), { ok: false, retryAfterS: 120, blockedBy: 0, firstBlock: true })
  await s.age(0)
  t.match(await s.limiters[0]!.consume([{ key: limitKey('zero', 'x'), rule: rule(0, 2 * MIN) }]), { ok: false, firstBlock: false }, 'marked though it holds no event')
})

t.test('firstBlock: of three instances refusing one key at once, exactly one is told it is the first; the next window again', async (t) => {
  const s = await setup(t, 3)
  if (!s) return
  const wide: RateEntry = { key: limitKey('login_ip', '203.0.113.7'), rule: rule(1000) }
  const narrow: RateEntry = { key: limitKey('login_ip_email', '203.0.113.7', 'ann@example.com'), rule: rule(2) }
  t.ok((await s.limiters[0]!.consume([wide, narrow])).ok)
  t.ok((await s.limiters[1]!.consume([narrow, wide])).ok)
  const refusals = async (): Promise<boolean[]> => {
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => s.limiters[i % 3]!.consume(i % 2 === 0 ? [wide, narrow] : [narrow, wide])))
    return results.map((r) => (r.ok ? t.fail('counted') : r.firstBlock))
  }
  let got = await refusals()
  t.equal(got.filter((f) => f).length, 1, 'sixty refusals over three instances: one first block')
  await sleep(REFUSAL_HOLD_MS)
  got = await refusals()
  t.equal(got.filter((f) => f).length, 0, 'asked of the database again after the hold: none')
  const { rows } = await s.admin.query(`SELECT count(*)::int AS n FROM authd_rate WHERE blocked_until IS NOT NULL`)
  t.equal(rows[0].n, 1, 'only the refusing counter is marked')

  await s.age(15 * MIN)
  t.ok((await s.limiters[2]!.consume([wide, narrow])).ok && (await s.limiters[0]!.consume([wide, narrow])).ok, 'a window on: counted afresh')
  got = await refusals()
  t.equal(got.filter((f) => f).length, 1, 'and its first block is a new one, once')
})

t.test('firstBlock: a counter counted again after its events all left is blocked anew, within the window of its last block', async (t) => {
  const s = await setup(t)
  if (!s) return
  const [limiter] = s.limiters
  const e: RateEntry = { key: limitKey('refresh_ip', '198.51.100.1'), rule: rule(1, 10 * MIN) }
  t.ok((await limiter!.consume([e])).ok)
  await s.age(9 * MIN)
  t.match(await limiter!.consume([e]), { ok: false, firstBlock: true }, 'blocked nine minutes after its event')
  // its one event leaves a minute later; the mark would last nine more
  await s.admin.query(`UPDATE authd_rate SET times = ARRAY(SELECT x - 60000000::bigint FROM unnest(times) AS x ORDER BY x)`)
  await sleep(REFUSAL_HOLD_MS)
  t.ok((await limiter!.consume([e])).ok, 'room again')
  t.match(await limiter!.consume([e]), { ok: false, firstBlock: true }, 'a new block')
  await sleep(REFUSAL_HOLD_MS)
  t.match(await limiter!.consume([e]), { ok: false, firstBlock: false })
})

t.test('a database of schema 3 is upgraded in place: its counters kept, and refusals then say whether they are first', async (t) => {
  const target = await pgDatabase(t)
  if (!target) return
  const { openDb } = await import('../../src/store/pg/db.js')
  const { migratePg, PG_MIGRATIONS, PG_SCHEMA_VERSION } = await import('../../src/store/pg/schema.js')
  const db = openDb({ url: target.url, poolSize: 2, queryTimeoutMs: 2000 })
  t.teardown(() => db.end())
  await migratePg(db, PG_MIGRATIONS.slice(0, 3))
  const entry: RateEntry = { key: limitKey('login_ip', '203.0.113.9'), rule: rule(2) }
  const [old] = await db.query<{ ok: boolean }>(`SELECT ok FROM authd_rate_consume($1, $2, $3)`, [[entry.key], [entry.rule.windowMs], [2]])
  t.equal(old!.ok, true, 'counted by the schema 3 function')
  const opened = await openPgStore({ url: target.url, poolSize: 2 })
  t.teardown(() => opened.store.close())
  t.equal(await opened.store.schemaVersion(), PG_SCHEMA_VERSION)
  t.ok((await opened.limiter.consume([entry])).ok, 'the counter kept its event: one more fits')
  t.match(await opened.limiter.consume([entry]), { ok: false, firstBlock: true })
})

t.test('release un-counts exactly that consume, once; reset and resetByPart forget keys', async (t) => {
  const s = await setup(t, 2)
  if (!s) return
  const [one, two] = s.limiters
  const pair = (ip: string, email: string): RateEntry => ({ key: limitKey('login_ip_email', ip, email), rule: rule(5) })
  const email: RateEntry = { key: limitKey('login_email', 'ann@example.com'), rule: rule(20, 60 * MIN) }
  const first = await one!.consume([pair('203.0.113.7', 'ann@example.com'), email])
  await two!.consume([pair('203.0.113.7', 'ann@example.com'), email])
  t.ok(first.ok)
  if (!first.ok) return
  await one!.release(first.token)
  t.equal(await s.held(pair('203.0.113.7', 'ann@example.com').key), 1, 'one of two left')
  t.equal(await s.held(email.key, 60 * MIN), 1)
  await one!.release(first.token)
  t.equal(await s.held(pair('203.0.113.7', 'ann@example.com').key), 1, 'a second release changes nothing')

  await one!.consume([pair('198.51.100.1', 'ann@example.com')])
  await one!.consume([pair('198.51.100.1', 'bob@example.com')])
  t.equal(await two!.resetByPart('login_ip_email', 1, 'ann@example.com'), 2, "ann's pairs, from every address")
  t.equal(await s.held(pair('203.0.113.7', 'ann@example.com').key), 0)
  t.equal(await s.held(pair('198.51.100.1', 'ann@example.com').key), 0)
  t.equal(await s.held(pair('198.51.100.1', 'bob@example.com').key), 1, "bob's kept")
  t.equal(await s.held(email.key, 60 * MIN), 1, 'another axis kept')
  await one!.reset(email.key)
  t.equal(await s.held(email.key, 60 * MIN), 0)
})

t.test('prune deletes the logs whose events have all left their window, and only those', async (t) => {
  const s = await setup(t)
  if (!s) return
  const limiter = s.limiters[0] as RateLimiter & { prune(): Promise<number> }
  const short: RateEntry = { key: limitKey('short', 'x'), rule: rule(5, 5 * MIN) }
  const long: RateEntry = { key: limitKey('long', 'x'), rule: rule(5, 60 * MIN) }
  const released: RateEntry = { key: limitKey('released', 'x'), rule: rule(5, 60 * MIN) }
  await limiter.consume([short, long])
  const r = await limiter.consume([released])
  if (r.ok) await limiter.release(r.token)
  await s.age(10 * MIN)
  t.equal(await limiter.prune(), 2, 'the expired log and the emptied one')
  t.equal(await s.held(long.key, 60 * MIN), 1, 'the live one kept')
  t.equal(await limiter.prune(), 0)
})

t.test('a refusal is answered from memory for the hold: a flood of refused consumes asks the database once per hold', async (t) => {
  const target = await pgDatabase(t)
  if (!target) return
  const { openDb } = await import('../../src/store/pg/db.js')
  const { createPgRateLimiter } = await import('../../src/store/pg/limiter.js')
  // the schema comes with a store opened once on the database
  const opened = await openPgStore({ url: target.url, poolSize: 2 })
  const db = openDb({ url: target.url, poolSize: 2, queryTimeoutMs: 2000 })
  let consumes = 0
  const counting = { ...db, query: (text: string, values?: readonly unknown[]) => (text.includes('authd_rate_consume') && consumes++, db.query(text, values)) } as typeof db
  let clock = 1_000_000
  const limiter = createPgRateLimiter(counting, () => clock)
  t.teardown(async () => {
    limiter.close()
    await db.end()
    await opened.store.close()
  })
  const entry: RateEntry = { key: limitKey('login_ip', '203.0.113.9'), rule: rule(3) }
  for (let i = 0; i < 3; i++) t.ok((await limiter.consume([entry])).ok)
  t.equal(limiter.refusedNow!([entry]), undefined, 'nothing known before the database refused')
  const first = await limiter.consume([entry])
  t.equal(consumes, 4, 'the first refusal is the database’s')
  const flood = await Promise.all(Array.from({ length: 100 }, () => limiter.consume([entry])))
  t.equal(consumes, 4, 'a hundred more refused without a round trip')
  t.ok(flood.every((r) => !r.ok && r.blockedBy === 0 && !first.ok && r.retryAfterS === first.retryAfterS), 'each refused as the database did')
  clock += 10_000 / 100 // 100 ms on
  const known = limiter.refusedNow!([{ key: limitKey('other', 'x'), rule: rule(1) }, entry])
  t.same(known && !known.ok && known.blockedBy, 1, 'refusedNow names the remembered entry, at once')
  t.equal(limiter.refusedNow!([{ key: limitKey('other', 'x'), rule: rule(1) }]), undefined, 'other counters are asked')
  clock += REFUSAL_HOLD_MS
  const again = await limiter.consume([entry])
  t.equal(consumes, 5, 'after the hold the database is asked again')
  t.notOk(again.ok, 'and still refuses: the window is full')
  t.equal(await held(target.url, entry.key), 3, 'refusals counted nothing')
})

t.test("another instance's clear is seen within the hold; this instance's own at once", async (t) => {
  const s = await setup(t, 2)
  if (!s) return
  const [a, b] = s.limiters as [RateLimiter, RateLimiter]
  const entry: RateEntry = { key: limitKey('login_ip_email', '198.51.100.4', 'bo@example.com'), rule: rule(2) }
  t.ok((await a.consume([entry])).ok)
  t.ok((await a.consume([entry])).ok)
  t.notOk((await a.consume([entry])).ok, 'full')
  t.equal(await b.resetByPart('login_ip_email', 1, 'bo@example.com'), 1, 'cleared on the other instance')
  const started = performance.now()
  let seen: number | null = null
  while (performance.now() - started < 1500) {
    const r = await a.consume([entry])
    if (r.ok) {
      seen = performance.now() - started
      break
    }
    await sleep(20)
  }
  t.ok(seen !== null && seen <= REFUSAL_HOLD_MS + 100, `admitted again within the hold (${seen?.toFixed(0)} ms)`)
  t.ok((await a.consume([entry])).ok, 'the second of two')
  t.notOk((await a.consume([entry])).ok, 'full again')
  await a.resetByPart('login_ip_email', 1, 'bo@example.com')
  t.ok((await a.consume([entry])).ok, 'its own clear: at once')
})

t.test("a refusal the database gave to a consume asked before this instance's clear was done is not remembered: the next consume asks again", async (t) => {
  const s = await setup(t)
  if (!s) return
  const [a] = s.limiters as [RateLimiter]
  const key = limitKey('login_ip_email', '198.51.100.5', 'cy@example.com')
  const entry: RateEntry = { key, rule: rule(1) }
  t.ok((await a.consume([entry])).ok, 'the one the rule allows')
  // the counter's row held by another transaction: the next consume waits on it, and the clear
  // after it too, in that order
  await s.admin.query('BEGIN')
  await s.admin.query('SELECT 1 FROM authd_rate WHERE key = $1 FOR UPDATE', [key])
  const waiting = async (n: number): Promise<void> => {
    for (let i = 0; i < 200; i++) {
      // asked inside the holding transaction, whose view of pg_stat_activity is kept until cleared
      await s.admin.query('SELECT pg_stat_clear_snapshot()')
      const { rows } = await s.admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`)
      if (rows[0].n >= n) return
      await sleep(10)
    }
    throw new Error(`${n} statements never waited on the row`)
  }
  const refused = a.consume([entry])
  await waiting(1)
  const clearing = a.reset(key)
  await waiting(2)
  await s.admin.query('COMMIT')
  t.notOk((await refused).ok, 'refused: the database counted before the clear ran')
  await clearing
  t.ok((await a.consume([entry])).ok, 'after the clear, counted afresh: that refusal was not answered from memory')
})

t.test("a clear of one key (a successful login's) forgets that key's remembered refusals only, not a flood's of others", async (t) => {
  const s = await setup(t)
  if (!s) return
  const [a] = s.limiters as [RateLimiter]
  const flooded: RateEntry = { key: limitKey('login_ip', '203.0.113.9'), rule: rule(1) }
  const mine: RateEntry = { key: limitKey('login_ip_email', '198.51.100.6', 'di@example.com'), rule: rule(5) }
  t.ok((await a.consume([flooded])).ok)
  t.notOk((await a.consume([flooded])).ok, 'refused, and remembered for the hold')
  // behind the limiter's back: were it asked, the database would now admit the flooded key
  await s.admin.query('DELETE FROM authd_rate WHERE key = $1', [flooded.key])
  const charge = await a.consume([mine])
  if (!charge.ok) throw new Error('not charged')
  await a.release(charge.token, mine.key)
  t.notOk((await a.consume([flooded])).ok, "still answered from memory: the clear of another key left it")
  t.ok((await a.consume([mine])).ok, 'the cleared key counts afresh')
})

async function held(url: string, key: string): Promise<number> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    const { rows } = await c.query(
      `SELECT count(*)::int AS n FROM authd_rate, unnest(times) AS x WHERE key = $1 AND x + window_ms * 1000 > (extract(epoch FROM clock_timestamp()) * 1000000)::bigint`,
      [key],
    )
    return rows[0].n as number
  } finally {
    await c.end()
  }
}

t.test('the lean consume and release of one or two counters answer as the general function does', async (t) => {
  const target = await pgDatabase(t)
  if (!target) return
  const opened = await openPgStore({ url: target.url, poolSize: 2 })
  const c = new pg.Client({ connectionString: target.url })
  await c.connect()
  t.teardown(async () => {
    await c.end()
    await opened.store.close()
  })
  // a small deterministic generator: the same sequence on every run
  let seed = 42
  const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
  const names = ['a', 'b', 'c']
  const windows = [60_000, 3_600_000]
  const counts = [0, 1, 2, 3, 5]
  const taken: Array<{ lean: string; general: string; keys: string[]; windows: number[] }> = []
  let same = 0
  let consumes = 0
  let refused = 0
  for (let step = 0; step < 300; step++) {
    const op = rand(10)
    if (op === 0) {
      // both sides' events made older alike: some leave their window
      await c.query(`UPDATE authd_rate SET times = ARRAY(SELECT x - 40000000::bigint FROM unnest(times) AS x ORDER BY x)`)
      continue
    }
    if (op <= 2 && taken.length > 0) {
      const r = taken.splice(rand(taken.length), 1)[0]!
      await c.query(`SELECT authd_rate_release($1, $2, $3)`, [r.keys.map((k) => `L${k}`), r.windows, r.lean])
      await c.query(`SELECT authd_rate_release_n($1, $2, $3)`, [r.keys.map((k) => `G${k}`), r.windows, r.general])
      continue
    }
    const n = 1 + rand(2)
    const keys = Array.from({ length: n }, () => names[rand(3)]!)
    const ws = Array.from({ length: n }, () => windows[rand(2)]!)
    const cs = Array.from({ length: n }, () => counts[rand(5)]!)
    const lean = (await c.query(`SELECT ok, blocked_by, at_us FROM authd_rate_consume($1, $2, $3)`, [keys.map((k) => `L${k}`), ws, cs])).rows[0]
    const general = (await c.query(`SELECT ok, blocked_by, at_us FROM authd_rate_consume_n($1, $2, $3)`, [keys.map((k) => `G${k}`), ws, cs])).rows[0]
    consumes++
    if (!lean.ok) refused++
    if (lean.ok === general.ok && lean.blocked_by === general.blocked_by) same++
    else t.fail(`step ${step}: ${JSON.stringify({ keys, ws, cs, lean, general })}`)
    if (lean.ok) taken.push({ lean: lean.at_us, general: general.at_us, keys, windows: ws })
  }
  t.ok(consumes > 150 && same === consumes, `the same answer at every consume (${same} of ${consumes})`)
  t.ok(refused > 20 && refused < consumes - 20, `both answers were given (${refused} refused)`)
  const held = await c.query(`SELECT substr(key, 2) AS k, window_ms, cardinality(times) AS n, left(key, 1) AS side FROM authd_rate ORDER BY 1, 2, 4`)
  const bySide = (side: string) => held.rows.filter((r) => r.side === side).map((r) => `${r.k} ${r.window_ms} ${r.n}`)
  t.same(bySide('L'), bySide('G'), 'and the same counters held')
})

t.test('release with a key to reset: the consume un-counted and that key forgotten, in one call', async (t) => {
  const s = await setup(t)
  if (!s) return
  const limiter = s.limiters[0]!
  const pair: RateEntry = { key: limitKey('login_ip_email', '192.0.2.1', 'cy@example.com'), rule: rule(5) }
  const email: RateEntry = { key: limitKey('login_email', 'cy@example.com'), rule: rule(20, 60 * MIN) }
  for (let i = 0; i < 3; i++) t.ok((await limiter.consume([pair, email])).ok)
  const last = await limiter.consume([pair, email])
  if (!last.ok) return t.fail('counted')
  t.equal(await s.held(pair.key), 4)
  await limiter.release(last.token, pair.key)
  t.equal(await s.held(pair.key), 0, 'the pair forgotten')
  t.equal(await s.held(email.key, 60 * MIN), 3, 'the email keeps its earlier failures, this one un-counted')
  await limiter.release(last.token, pair.key)
  t.equal(await s.held(email.key, 60 * MIN), 3, 'idempotent')
})

// the limiter as the daemon uses it: the audit event of a block, once however many instances refuse
const client: ClientContext = { ip: '203.0.113.9', ipKey: '203.0.113.9', userAgent: 'pg-limiter-test' }
const ROOMY = {
  AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1000/1m',
  AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: '1000/1m',
  AUTHD_RATE_LIMIT_LOGIN_PER_DEVICE: '1000/1m',
}

t.test('rate_limit.block: three instances on one PostgreSQL database refusing one key record one event', async (t) => {
  const db = await pgDatabase(t)
  if (!db) return
  const env = { ...ROOMY, AUTHD_STORE_BACKEND: 'postgres', AUTHD_STORE_URL: db.url, AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '2/15m' }
  const apps = [await buildApp(t, { env }), await buildApp(t, { env }), await buildApp(t, { env })]
  await addUser(apps[0]!, 'ann@example.com', 'lantern-orchard-41')
  for (const app of apps.slice(0, 2)) await t.rejects(app.auth.login({ email: 'ann@example.com', password: 'a wrong password' }, client), { code: 'INVALID_CREDENTIALS' })
  const refused = await Promise.all(
    Array.from({ length: 30 }, (_, i) => apps[i % 3]!.auth.login({ email: 'ann@example.com', password: 'a wrong password' }, client).catch((err: { code?: string }) => err.code)),
  )
  t.same(new Set(refused), new Set(['TOO_MANY_LOGINS']), 'thirty refused over three instances')
  const blocks = await apps[2]!.store.auditEvents({ limit: 100, event: 'rate_limit.block' })
  t.equal(blocks.length, 1, 'one block recorded')
  t.match(blocks[0], { email: 'ann@example.com', ip: client.ip, detail: { limit: 'login.per_ip_email', window: '15m' } })
  t.equal((await apps[1]!.store.auditEvents({ limit: 100, event: 'login.failure' })).length, 2)
})

type Charged = RefreshOutcome | { kind: 'refused' }

/**
 * A PostgreSQL store with its own limiter, one session, and `refresh(token)`: the session store's
 * refresh with the real decision, charged on that limiter under a limit of `count` per address.
 */
async function chargedRefreshes(t: Test, count: number): Promise<{ db: { url: string }; token: string; key: string; refresh(presented: string): Promise<Charged> } | null> {
  const db = await pgDatabase(t)
  if (!db) return null
  const { store, limiter } = await openPgStore({ url: db.url, poolSize: 8 })
  t.teardown(() => store.close())
  const { token } = await newSession(store, { at: Date.now() })
  const entries: RateEntry[] = [{ key: limitKey('refresh_ip', '203.0.113.9'), rule: rule(count) }]
  const charge: StoreCharge<Charged> = { limiter, entries, refused: () => ({ kind: 'refused' }) }
  const now = Date.now()
  return {
    db,
    token,
    key: entries[0]!.key,
    refresh: (presented) =>
      store.refreshSession<Charged>(hashToken(presented), (s) => decideRefresh(s, { token: presented, hash: hashToken(presented) }, { now, policy }), familyHashOf(presented), charge),
  }
}

t.test("a refresh charges the store's own limiter in the session read's round trip", async (t) => {
  const r = await chargedRefreshes(t, 1)
  if (!r) return
  // every statement any connection of this process sends, BEGIN and COMMIT included
  let statements = 0
  const query = pg.Client.prototype.query
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    statements++
    return (query as (...a: unknown[]) => unknown).apply(this, args)
  } as typeof query
  t.teardown(() => {
    pg.Client.prototype.query = query
  })
  const counted = async (presented: string): Promise<{ kind: string; statements: number }> => {
    const before = statements
    const out = await r.refresh(presented)
    return { kind: out.kind, statements: statements - before }
  }

  t.same(await counted(r.token), { kind: 'rotated', statements: 2 }, 'rotated in two statements: the charge with the read, then the rotation')
  t.same(await counted(newRefreshToken()), { kind: 'refused', statements: 1 }, 'over the limit: one statement, nothing else asked')
  t.same(await counted(newRefreshToken()), { kind: 'refused', statements: 0 }, 'refused again within the hold: answered from memory')
})

t.test('twenty charged refreshes of one token at once: one rotation, the rest in the grace, each charged once', async (t) => {
  const r = await chargedRefreshes(t, 1000)
  if (!r) return
  // all read the session at one version; the rotations that find it changed take the locked
  // transaction, which must not charge again
  const outs = await Promise.all(Array.from({ length: 20 }, () => r.refresh(r.token)))
  t.equal(outs.filter((o) => o.kind === 'rotated').length, 1, 'one rotation')
  t.equal(outs.filter((o) => o.kind === 'grace').length, 19, 'the rest answered within the grace')
  const admin = new pg.Client({ connectionString: r.db.url })
  await admin.connect()
  t.teardown(() => admin.end())
  const { rows } = await admin.query(`SELECT cardinality(times) AS n FROM authd_rate WHERE key = $1`, [r.key])
  t.same(rows, [{ n: 20 }], 'twenty events counted on the address: one a refresh')
})
