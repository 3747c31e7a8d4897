/**
 * The per-request line is built by hand for speed (logger.ts requestLineWriter): it must be the
 * very line pino writes for logger.info({ reqId, method, route, status, ms }, 'request').
 */
import t from 'tap'
import { Writable } from 'node:stream'
import fc from 'fast-check'
import { createLogger, hundredths, isoTimeOncePerMs, requestLineWriter } from '../../src/daemon/logger.js'

function capture(): { text: () => string; stream: Writable } {
  let raw = ''
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      raw += chunk.toString('utf8')
      cb()
    },
  })
  return { stream, text: () => raw }
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r))

t.test('writes exactly the line logger.info would, but for the time', async (t) => {
  const out = capture()
  const log = createLogger({ level: 'info', destination: out.stream })
  const write = requestLineWriter(log)
  const cases: Array<[string, string, string, number, number]> = [
    ['a1b2c3d4-1', 'GET', '/api/auth/me', 200, 0.12],
    ['a1b2c3d4-2z', 'POST', '/api/auth/login', 429, 3],
    ['a1b2c3d4-3', 'M-SEARCH', 'unknown', 404, 12.5],
    ['Not "plain"\\ é', 'GET', '/healthz', 200, 1234.05],
  ]
  for (const [reqId, method, route, status, ms] of cases) {
    write(reqId, method, route, status, ms)
    log.info({ reqId, method, route, status, ms }, 'request')
  }
  await settle()
  const lines = out.text().split('\n').filter((l) => l !== '')
  t.equal(lines.length, cases.length * 2)
  const noTime = (l: string): string => l.replace(/,"time":"[^"]+"/, '')
  for (let i = 0; i < cases.length; i++) {
    t.equal(noTime(lines[2 * i]!), noTime(lines[2 * i + 1]!), `line ${i}: same text`)
    const parsed = JSON.parse(lines[2 * i]!) as Record<string, unknown>
    t.match(parsed.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'an ISO time')
    t.ok(Math.abs(Date.parse(parsed.time as string) - Date.now()) < 5_000, 'of now')
  }
})

t.test('writes nothing below level info', async (t) => {
  const out = capture()
  const write = requestLineWriter(createLogger({ level: 'warn', destination: out.stream }))
  write('a-1', 'GET', '/healthz', 200, 1)
  await settle()
  t.equal(out.text(), '')
})

t.test('writes the duration as JSON.stringify would, from integers', async (t) => {
  // every hundredth up to 100 s, then random ones far beyond
  let wrong = 0
  for (let h = 0; h <= 10_000_000; h += h < 100_000 ? 1 : 997) {
    const ms = Math.round((h / 100) * 100) / 100
    if (hundredths(ms) !== JSON.stringify(ms)) wrong++
  }
  t.equal(wrong, 0, 'every rounded duration up to 100 s')
  fc.assert(
    fc.property(fc.double({ min: 0, max: 1e9, noNaN: true }), (raw) => {
      const ms = Math.round(raw * 100) / 100
      return hundredths(ms) === JSON.stringify(ms)
    }),
  )
  for (const odd of [1.234, -1, NaN, Infinity, 1e15]) t.equal(hundredths(odd), JSON.stringify(odd), `${odd} left to JSON.stringify`)
})

t.test('writes the time as toISOString would, across milliseconds, seconds and days', async (t) => {
  const realNow = Date.now
  t.teardown(() => {
    Date.now = realNow
  })
  const time = isoTimeOncePerMs()
  const moments = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 59_999, 60_000, 86_399_999, 86_400_000, 1_795_000_000_123, 1_795_000_000_123, 1_795_000_000_999, 1_795_000_001_000, 1_795_000_000_500]
  for (const m of moments) {
    Date.now = () => m
    t.equal(time(), `,"time":"${new Date(m).toISOString()}"`, `at ${m}`)
  }
})
