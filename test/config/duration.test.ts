import t from 'tap'
import { formatDuration, parseDuration } from '../../src/config/duration.js'

t.test('parses every unit into milliseconds', async (t) => {
  t.equal(parseDuration('500ms'), 500)
  t.equal(parseDuration('30s'), 30_000)
  t.equal(parseDuration('15m'), 900_000)
  t.equal(parseDuration('12h'), 43_200_000)
  t.equal(parseDuration('30d'), 2_592_000_000)
  t.equal(parseDuration('0s'), 0)
})

t.test('rejects negatives, fractions, spaces, unknown units and junk', async (t) => {
  for (const bad of ['', '15', 'm', '-5m', '+5m', '1.5h', ' 5m', '5m ', '5 m', '5M', '5min', '1h30m', '5w', 'abc', '99999999999999999d']) {
    t.throws(() => parseDuration(bad), RangeError, JSON.stringify(bad))
  }
})

t.test('formats with the largest exact unit, and reads back', async (t) => {
  t.equal(formatDuration(900_000), '15m')
  t.equal(formatDuration(90_000), '90s')
  t.equal(formatDuration(2_592_000_000), '30d')
  t.equal(formatDuration(1500), '1500ms')
  t.equal(formatDuration(0), '0s')
  for (const ms of [1, 999, 1000, 61_000, 3_600_000, 86_400_001]) t.equal(parseDuration(formatDuration(ms)), ms)
  t.throws(() => formatDuration(-1), RangeError)
  t.throws(() => formatDuration(1.5), RangeError)
})
