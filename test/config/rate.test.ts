import t from 'tap'
import { parseRate } from '../../src/config/rate.js'

t.test('parses "<count>/<duration>" and keeps the text', async (t) => {
  t.same(parseRate('5/15m'), { count: 5, windowMs: 900_000, text: '5/15m' })
  t.same(parseRate('150/5m'), { count: 150, windowMs: 300_000, text: '150/5m' })
  t.same(parseRate('1/500ms'), { count: 1, windowMs: 500, text: '1/500ms' })
})

t.test('rejects a zero count, a zero window and malformed rates', async (t) => {
  for (const bad of ['', '5', '5/', '/15m', '0/15m', '5/0s', '-1/1m', '1.5/1m', '5/15', '5 / 15m', '5/15m/1', 'five/15m']) {
    t.throws(() => parseRate(bad), RangeError, JSON.stringify(bad))
  }
})
