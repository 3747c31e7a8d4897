/**
 * The per-request line is built by hand for speed (logger.ts requestLineWriter): it must be the
 * very line pino writes for logger.info({ reqId, method, route, status, ms }, 'request').
 */
import t from 'tap'
import { Writable } from 'node:stream'
import { createLogger, requestLineWriter } from '../../src/core/logger.js'

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
