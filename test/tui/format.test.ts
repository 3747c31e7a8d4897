/** How the terminal UI writes times: UTC, and spans rounded to their largest unit. */
import t from 'tap'
import { formatRelative, formatSpan, formatTime, plural, shortId } from '../../src/tui/format.js'

t.test('absolute times are UTC to the minute; none is a dash', async (t) => {
  t.equal(formatTime(Date.UTC(2025, 0, 2, 3, 4, 59)), '2025-01-02 03:04')
  t.equal(formatTime(null), '-')
})

t.test('relative times round to the largest unit, in both directions', async (t) => {
  const now = Date.UTC(2025, 0, 1)
  t.equal(formatRelative(now + 400, now), 'now')
  t.equal(formatRelative(now - 45_000, now), '45s ago')
  t.equal(formatRelative(now - 120_000, now), '2m ago')
  t.equal(formatRelative(now + 7 * 86400_000 - 60_000, now), 'in 7d', 'an idle expiry just under 7 days reads as 7d, not 6d')
  t.equal(formatSpan(3 * 3600_000 + 20 * 60_000), '3h')
})

t.test('counts and ids', async (t) => {
  t.equal(plural(1, 'key'), '1 key')
  t.equal(plural(2, 'session'), '2 sessions')
  t.equal(shortId('sess-carol-1'), 'sess-car…')
  t.equal(shortId('short'), 'short')
})
