import t from 'tap'
import { formatSize, parseSize } from '../../src/config/size.js'

t.test('parses sizes with 1kb = 1024 bytes, unit case-insensitive', async (t) => {
  t.equal(parseSize('512b'), 512)
  t.equal(parseSize('16kb'), 16_384)
  t.equal(parseSize('16KB'), 16_384)
  t.equal(parseSize('1mb'), 1_048_576)
  t.equal(parseSize('1Mb'), 1_048_576)
  t.equal(parseSize('1gb'), 1_073_741_824)
})

t.test('rejects sizes without a unit, negative, fractional or with junk', async (t) => {
  for (const bad of ['', '16', 'kb', '-1kb', '1.5kb', ' 16kb', '16 kb', '16k', '16kib', '16kbx', '1tb']) {
    t.throws(() => parseSize(bad), RangeError, JSON.stringify(bad))
  }
})

t.test('formats with the largest exact unit, and reads back', async (t) => {
  t.equal(formatSize(16_384), '16kb')
  t.equal(formatSize(1_048_576), '1mb')
  t.equal(formatSize(1000), '1000b')
  for (const bytes of [1, 1023, 1024, 1025, 3 * 1024 ** 3]) t.equal(parseSize(formatSize(bytes)), bytes)
})
