/**
 * core/limit-clears.ts (docs/api.md, "Rate limits"; README, `authctl limits clear`): what the
 * admin's target is (an address in the limiter's form, or a canonical email, or neither), and the
 * daemon's watch that applies the requests recorded after it started, each once and in order, one
 * poll at a time. The watch's timer is taken over here so each poll is stepped by hand: no waiting
 * on the clock (test/store/device-key.test.ts runs it on a real store, two handles).
 */
import t, { type Test } from 'tap'
import { LIMIT_CLEAR_POLL_MS, LIMIT_CLEAR_RETRY_MS, parseLimitTarget, watchLimitClears, type LimitClearFailure } from '../../src/core/limit-clears.js'
import type { LimitClear, LimitClearTarget } from '../../src/store/store.js'

t.test('parseLimitTarget: an address becomes the key its requests are counted under', async (t) => {
  t.same(parseLimitTarget('203.0.113.7'), { ipKey: '203.0.113.7' })
  t.same(parseLimitTarget('  203.0.113.7\n'), { ipKey: '203.0.113.7' }, 'trimmed')
  t.same(parseLimitTarget('::ffff:203.0.113.7'), { ipKey: '203.0.113.7' }, 'IPv4-mapped IPv6 counts as IPv4')
  t.same(parseLimitTarget('2001:db8:1:2:3:4:5:6'), { ipKey: '2001:db8:1:2::/64' }, 'IPv6 per /64')
  t.same(parseLimitTarget('[2001:DB8:1:2::9]'), { ipKey: '2001:db8:1:2::/64' }, 'in brackets, as in a URL')
  t.same(parseLimitTarget('127.0.0.1'), { ipKey: '127.0.0.1' }, 'the Unix socket’s peer')
})

t.test('parseLimitTarget: an email becomes its canonical form, registrable or not', async (t) => {
  t.same(parseLimitTarget('ANN@Example.com'), { email: 'ann@example.com' })
  t.same(parseLimitTarget('  ann@example.com '), { email: 'ann@example.com' })
  t.same(parseLimitTarget('Ｊoe@bücher.example'), { email: 'joe@xn--bcher-kva.example' }, 'NFKC, lower case, the domain in ASCII')
  // a login with an address no user could register is limited under its canonical form too
  t.same(parseLimitTarget('a b@example.com'), { email: 'a b@example.com' })
  t.same(parseLimitTarget(`${'a'.repeat(242)}@example.com`), { email: `${'a'.repeat(242)}@example.com` }, '254 bytes: the longest stored email')
  t.same(parseLimitTarget(`${'a'.repeat(243)}@example.com`), null, 'longer than any stored email')
})

t.test('parseLimitTarget: an email with a control character is still one (its login limits are kept like any tried email\'s)', async (t) => {
  t.same(parseLimitTarget('ann\u0007@example.com'), { email: 'ann\u0007@example.com' })
})

t.test('parseLimitTarget: neither an address nor an email is null', async (t) => {
  for (const text of ['', '   ', 'ann', 'example.com', '@example.com', 'ann@', '  @  ', '203.0.113', '203.0.113.256', '127.1', '2001:db8::1/64', '203.0.113.7:8080', '[203.0.113.7]x']) {
    t.equal(parseLimitTarget(text), null, JSON.stringify(text))
  }
})

/** The watch over a store of `clears`, its interval held here: `tick()` is one timer firing. */
function watchOver(t: Test, clears: LimitClear[], opts: { apply?: (target: LimitClearTarget) => unknown; read?: (after: number) => Promise<LimitClear[]>; now?: () => number } = {}) {
  const reads: number[] = []
  const applied: LimitClearTarget[] = []
  const errors: unknown[] = []
  const failures: Array<LimitClearFailure | undefined> = []
  let readable = 0
  let tick: (() => void) | undefined
  let every: number | undefined
  const realSet = globalThis.setInterval
  const timer = { unref: () => timer }
  globalThis.setInterval = ((fn: () => void, ms: number) => {
    tick = fn
    every = ms
    return timer
  }) as unknown as typeof setInterval
  let watch
  try {
    watch = watchLimitClears({
      store: {
        limitClearsAfter: (after) => {
          reads.push(after)
          return opts.read?.(after) ?? Promise.resolve(clears.filter((c) => c.seq > after))
        },
      },
      apply: opts.apply ?? ((target) => applied.push(target)),
      onError: (err, failure) => {
        errors.push(err)
        failures.push(failure)
      },
      onReadable: () => void readable++,
      now: opts.now,
    })
  } finally {
    globalThis.setInterval = realSet
  }
  t.teardown(() => watch.stop())
  return { watch, timer, reads, applied, errors, failures, readable: () => readable, tick: () => tick!(), every: () => every }
}

/** lets the polls started so far run to their end (the store here answers at once) */
const settle = () => new Promise((resolve) => setImmediate(resolve))

const clear = (seq: number, target: LimitClearTarget): LimitClear => ({ seq, target, at: seq })

t.test('watch: the requests made before it started are not applied; later ones are, in order, once each', async (t) => {
  const clears = [clear(1, { email: 'old@example.com' }), clear(2, { ipKey: '198.51.100.1' })]
  const w = watchOver(t, clears)
  t.equal(w.every(), LIMIT_CLEAR_POLL_MS)
  t.ok(LIMIT_CLEAR_POLL_MS < 1000, 'well inside the second the README promises')
  await settle()
  t.same(w.reads, [0], 'the first poll reads where the requests stand')
  w.tick()
  await settle()
  t.same(w.applied, [], 'nothing of before')
  t.same(w.reads, [0, 2], 'and asks only after the newest of them')
  clears.push(clear(3, { email: 'ann@example.com' }), clear(4, { ipKey: '203.0.113.7' }))
  w.tick()
  await settle()
  t.same(w.applied, [{ email: 'ann@example.com' }, { ipKey: '203.0.113.7' }])
  w.tick()
  await settle()
  t.same(w.applied.length, 2, 'once each')
  t.same(w.reads, [0, 2, 2, 4])
  t.same(w.errors, [])
})

t.test('watch: a store with no requests yet: every later one is applied', async (t) => {
  const clears: LimitClear[] = []
  const w = watchOver(t, clears)
  await settle()
  clears.push(clear(1, { email: 'ann@example.com' }))
  w.tick()
  await settle()
  t.same(w.applied, [{ email: 'ann@example.com' }])
  t.same(w.reads, [0, 0])
})

t.test('watch: one poll at a time: a slow store delays the next poll, never stacks them', async (t) => {
  const clears = [clear(1, { email: 'a@example.com' })]
  let answer: (() => void) | undefined
  const w = watchOver(t, clears, {
    read: (after) =>
      new Promise((resolve) => {
        answer = () => resolve(clears.filter((c) => c.seq > after))
      }),
  })
  w.tick()
  w.tick()
  await settle()
  t.same(w.reads, [0], 'the timer fired twice while the first read was out: no second read')
  answer!()
  await settle()
  clears.push(clear(2, { email: 'b@example.com' }))
  w.tick()
  t.same(w.reads, [0, 1])
  w.tick()
  answer!()
  await settle()
  t.same(w.reads, [0, 1])

})

t.test('watch: apply runs one request at a time, in order, each awaited before the next', async (t) => {
  const clears: LimitClear[] = []
  const started: string[] = []
  const finish: Array<() => void> = []
  const w = watchOver(t, clears, {
    apply: (target) => {
      started.push((target as { email: string }).email)
      return new Promise<void>((resolve) => finish.push(resolve))
    },
  })
  await settle()
  clears.push(clear(1, { email: 'a@example.com' }), clear(2, { email: 'b@example.com' }))
  w.tick()
  await settle()
  t.same(started, ['a@example.com'], 'the second waits for the first')
  w.tick()
  await settle()
  t.same(w.reads, [0, 0], 'and no poll starts meanwhile')
  finish[0]!()
  await settle()
  t.same(started, ['a@example.com', 'b@example.com'])
  finish[1]!()
  await settle()
  w.tick()
  await settle()
  t.same(w.reads, [0, 0, 2])
  t.same(started.length, 2)
})

t.test('watch: a failed read is reported and retried from where it stood; a failed apply is reported once and tried again at each poll, before the later ones, until it works', async (t) => {
  const clears: LimitClear[] = []
  let failRead = false
  let limiterDown = true
  const w = watchOver(t, clears, {
    read: async (after) => {
      if (failRead) throw new Error('store unavailable')
      return clears.filter((c) => c.seq > after)
    },
    apply: (target) => {
      if ('email' in target && target.email === 'bad@example.com' && limiterDown) throw new Error('limiter down')
      w.applied.push(target)
    },
  })
  await settle()
  clears.push(clear(1, { email: 'a@example.com' }))
  failRead = true
  for (let i = 0; i < 4; i++) {
    w.tick()
    await settle()
  }
  t.equal(w.reads.length, 5, 'read at every poll')
  t.match(w.errors, [{ message: 'store unavailable' }], 'reported once, when reads began to fail, not at every poll')
  t.same(w.failures, [undefined], 'a failed read names no request')
  t.same(w.applied, [])
  t.equal(w.readable(), 0)
  failRead = false
  w.tick()
  await settle()
  t.same(w.applied, [{ email: 'a@example.com' }], 'applied on the next poll')
  t.equal(w.readable(), 1, 'said once when reads work again')
  failRead = true
  w.tick()
  await settle()
  t.equal(w.errors.length, 2, 'a second outage is reported again')
  failRead = false
  w.tick()
  await settle()
  t.equal(w.readable(), 2)
  w.errors.pop()
  w.failures.pop()
  clears.push(clear(2, { email: 'bad@example.com' }), clear(3, { email: 'c@example.com' }))
  for (let i = 0; i < 3; i++) {
    w.tick()
    await settle()
  }
  t.match(w.errors, [{ message: 'store unavailable' }, { message: 'limiter down' }], 'reported once, not at every try')
  t.same(w.failures[1], { target: { email: 'bad@example.com' }, dropped: false })
  t.same(w.applied, [{ email: 'a@example.com' }], 'the later one waits behind the failing one')
  t.same(w.reads.slice(-3), [1, 1, 1], 'read again from before the failing one')
  limiterDown = false
  w.tick()
  await settle()
  t.same(w.applied, [{ email: 'a@example.com' }, { email: 'bad@example.com' }, { email: 'c@example.com' }], 'once it works, applied, then the later one')
  w.tick()
  await settle()
  t.same(w.reads.slice(-1), [3])
  t.equal(w.errors.length, 2)
})

t.test('watch: a request whose apply keeps failing is dropped after LIMIT_CLEAR_RETRY_MS, reported as dropped, and the later ones applied', async (t) => {
  const clears: LimitClear[] = []
  let at = 1_000
  const w = watchOver(t, clears, {
    now: () => at,
    apply: (target) => {
      if ('email' in target && target.email === 'bad@example.com') throw new Error('limiter down')
      w.applied.push(target)
    },
  })
  await settle()
  clears.push(clear(1, { email: 'bad@example.com' }), clear(2, { email: 'c@example.com' }))
  w.tick()
  await settle()
  at += LIMIT_CLEAR_RETRY_MS - 1
  w.tick()
  await settle()
  t.same(w.applied, [], 'still tried again just before the limit')
  t.same(w.failures, [{ target: { email: 'bad@example.com' }, dropped: false }])
  at += 1
  w.tick()
  await settle()
  t.same(w.failures, [{ target: { email: 'bad@example.com' }, dropped: false }, { target: { email: 'bad@example.com' }, dropped: true }])
  t.same(w.applied, [{ email: 'c@example.com' }], 'dropped, and the later one applied')
  w.tick()
  await settle()
  t.same(w.reads.slice(-1), [2])
  t.equal(w.errors.length, 2)
})

t.test('watch: stop() clears its interval', async (t) => {
  const w = watchOver(t, [])
  await settle()
  const realClear = globalThis.clearInterval
  const cleared: unknown[] = []
  globalThis.clearInterval = ((h: unknown) => void cleared.push(h)) as typeof clearInterval
  try {
    w.watch.stop()
  } finally {
    globalThis.clearInterval = realClear
  }
  t.same(cleared, [w.timer])
})
