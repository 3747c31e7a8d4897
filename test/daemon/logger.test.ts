/**
 * The daemon's logger (src/daemon/logger.ts).
 *
 * Secrets: the logger censors them by configuration, whatever a call site logs: the literal paths
 * (pino redact) and the `*.<field>` paths one level down (censorNested, which replaced pino's
 * wildcard redaction for speed). These pin down that nothing was lost in that change.
 *
 * The request line: built by hand for speed (requestLineWriter), it must be the very line pino
 * writes for logger.info({ reqId, method, route, status, ms }, 'request').
 *
 * The batch: the daemon's log destination gathers lines and hands them over in batches
 * (LineBatch): nothing is lost, the order is kept, and what is gathered is written at exit, even
 * by process.exit (two tests run a child process for that: the exit itself is the subject).
 */
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { censorNested, createLogger, flushLogSync, hundredths, isoTimeOncePerMs, LineBatch, NESTED_DEPTH, REDACT_PATHS, requestLineWriter, SECRET_FIELDS } from '../../src/daemon/logger.js'

function capture(): { lines: Array<Record<string, any>>; text: () => string; stream: Writable } {
  let raw = ''
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      raw += chunk.toString('utf8')
      cb()
    },
  })
  return {
    stream,
    text: () => raw,
    get lines() {
      return raw
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, any>)
    },
  }
}

const SECRET = 'S3cret-Value-That-Must-Not-Appear'

t.test('keeps the documented redact paths', async (t) => {
  const fields = [
    'password',
    'currentPassword',
    'newPassword',
    'passwordHash',
    'accessToken',
    'refreshToken',
    'token',
    'mfaToken',
    'recoveryCode',
    'recoveryCodes',
    'secret',
    'otpauthUrl',
    'authorization',
    'cookie',
    'set-cookie',
  ]
  t.same(SECRET_FIELDS, fields)
  t.same(REDACT_PATHS, [
    'req.headers.authorization',
    'req.headers.cookie',
    'res.headers["set-cookie"]',
    'headers.authorization',
    'headers.cookie',
    ...fields.map((f) => (f === 'set-cookie' ? '["set-cookie"]' : f)),
    'code',
    ...fields.map((f) => `*.${f}`),
  ])
})

t.test("censors a password change's body, a stored user (its factor's secret two levels down) and credential headers anywhere", async (t) => {
  const out = capture()
  const log = createLogger({ level: 'info', destination: out.stream })
  log.info({ body: { currentPassword: SECRET, newPassword: SECRET, kept: 1 } }, 'change')
  log.info({ user: { id: 'u1', passwordHash: SECRET, mfa: { secret: SECRET, recoveryCodes: [SECRET] } } }, 'user')
  log.info({ authorization: `Bearer ${SECRET}`, cookie: SECRET, 'set-cookie': SECRET }, 'headers')
  log.info({ list: [{ token: SECRET }, { fine: true }] }, 'list')
  log.info({ a: { b: { c: { d: { token: SECRET } } } } }, 'deep')
  await new Promise((r) => setImmediate(r))
  t.notOk(out.text().includes(SECRET), 'no secret in the output')
  const [change, user, headers, list, deep] = out.lines
  t.same(change!.body, { currentPassword: '[redacted]', newPassword: '[redacted]', kept: 1 })
  t.same(user!.user, { id: 'u1', passwordHash: '[redacted]', mfa: { secret: '[redacted]', recoveryCodes: '[redacted]' } })
  t.match(headers, { authorization: '[redacted]', cookie: '[redacted]', 'set-cookie': '[redacted]' })
  t.same(list!.list, [{ token: '[redacted]' }, { fine: true }], 'an array stays an array')
  t.same(deep!.a, { b: { c: { d: { token: '[redacted]' } } } }, `${NESTED_DEPTH} levels down`)
})

t.test('censors every secret field at the top level and one level down', async (t) => {
  const out = capture()
  const log = createLogger({ level: 'info', destination: out.stream })
  for (const field of SECRET_FIELDS) {
    log.info({ [field]: SECRET, event: 'top' }, 'top')
    log.info({ body: { [field]: SECRET, kept: 'visible' }, event: 'nested' }, 'nested')
  }
  log.info({ req: { headers: { authorization: `Bearer ${SECRET}`, cookie: SECRET, host: 'h' } } }, 'req')
  log.info({ res: { headers: { 'set-cookie': SECRET } } }, 'res')
  log.info({ headers: { authorization: SECRET, cookie: SECRET } }, 'headers')
  await new Promise((r) => setImmediate(r))
  t.notOk(out.text().includes(SECRET), 'no secret in the output')
  const lines = out.lines
  t.equal(lines.length, SECRET_FIELDS.length * 2 + 3)
  for (const [i, field] of SECRET_FIELDS.entries()) {
    t.equal(lines[2 * i]![field], '[redacted]', `${field}`)
    t.equal(lines[2 * i + 1]!.body[field], '[redacted]', `body.${field}`)
    t.equal(lines[2 * i + 1]!.body.kept, 'visible', 'other nested fields are kept')
  }
  t.same(lines.at(-3)!.req.headers, { authorization: '[redacted]', cookie: '[redacted]', host: 'h' })
  t.same(lines.at(-2)!.res.headers, { 'set-cookie': '[redacted]' })
  t.same(lines.at(-1)!.headers, { authorization: '[redacted]', cookie: '[redacted]' })
})

t.test('censors a second-factor code at the top level; an error’s code one level down is kept', async (t) => {
  const out = capture()
  const log = createLogger({ level: 'info', destination: out.stream })
  log.info({ event: 'mfa', code: '123456', recoveryCode: 'abcde-fghij', mfaToken: SECRET, err: { code: 'ENOENT' } }, 'mfa')
  await new Promise((r) => setImmediate(r))
  t.notOk(out.text().includes('123456'))
  t.notOk(out.text().includes('abcde-fghij'))
  t.notOk(out.text().includes(SECRET))
  t.match(out.lines[0], { code: '[redacted]', recoveryCode: '[redacted]', mfaToken: '[redacted]', err: { code: 'ENOENT' } })
})

t.test('censors a secret carried on a logged error, and keeps it an error', async (t) => {
  const out = capture()
  const log = createLogger({ level: 'info', destination: out.stream })
  const err = Object.assign(new Error('boom'), { token: SECRET, code: 'E_TEST' })
  log.error({ err }, 'failed')
  await new Promise((r) => setImmediate(r))
  t.notOk(out.text().includes(SECRET))
  const line = out.lines[0]!
  t.equal(line.err.message, 'boom', 'the message is kept')
  t.equal(line.err.type, 'Error', 'serialized as an error')
  t.match(line.err.stack, /boom/, 'with its stack')
  t.equal(line.err.token, '[redacted]')
  t.equal(line.err.code, 'E_TEST')
  t.equal(err.token, SECRET, 'the caller’s error is left as it was')
})

t.test('leaves the caller’s object as it was, and passes objects without secrets through', async (t) => {
  const body = { password: SECRET, user: 'ann' }
  const obj = { body, n: 1 }
  const censored = censorNested(obj)
  t.not(censored, obj, 'a copy when something is censored')
  t.same(censored, { body: { password: '[redacted]', user: 'ann' }, n: 1 })
  t.equal(obj.body, body)
  t.equal(body.password, SECRET)
  const clean = { reqId: 'r', status: 200, nested: { a: 1 } }
  t.equal(censorNested(clean), clean, 'no copy when nothing is censored')
})

// ---- the request line ----

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

// ---- the batch ----

function output(): { writes: string[]; flushes: number; syncFlushes: number; out: ConstructorParameters<typeof LineBatch>[0] } {
  const o = {
    writes: [] as string[],
    flushes: 0,
    syncFlushes: 0,
    out: {
      write: (chunk: Buffer) => o.writes.push(chunk.toString('utf8')),
      flush: (cb?: (err?: Error) => void) => {
        o.flushes++
        cb?.()
      },
      flushSync: () => {
        o.syncFlushes++
      },
    },
  }
  return o
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

t.test('lines are handed over once a batch is full, in order, and nothing before', async (t) => {
  const o = output()
  const batch = new LineBatch(o.out, 100, 60_000)
  t.teardown(() => batch.flushSync())
  batch.write('a'.repeat(40) + '\n')
  batch.write('b'.repeat(40) + '\n')
  t.same(o.writes, [], 'under the batch size: gathered')
  batch.write('c'.repeat(40) + '\n')
  t.same(o.writes, ['a'.repeat(40) + '\n' + 'b'.repeat(40) + '\n' + 'c'.repeat(40) + '\n'], 'full: one write with all three')
})

t.test('a batch that does not fill is handed over after the delay', async (t) => {
  const o = output()
  const batch = new LineBatch(o.out, 12_288, 30)
  batch.write('one\n')
  batch.write('two\n')
  t.same(o.writes, [])
  await sleep(80)
  t.same(o.writes, ['one\ntwo\n'])
  await sleep(80)
  t.same(o.writes, ['one\ntwo\n'], 'no empty writes afterwards')
})

t.test('flush and flushSync hand over what is gathered first', async (t) => {
  const o = output()
  const batch = new LineBatch(o.out, 12_288, 60_000)
  batch.write('x\n')
  await new Promise<void>((resolve) => batch.flush(() => resolve()))
  t.same(o.writes, ['x\n'])
  t.equal(o.flushes, 1)
  batch.write('y\n')
  batch.flushSync()
  t.same(o.writes, ['x\n', 'y\n'])
  t.equal(o.syncFlushes, 1)
})

t.test('pino lines and request lines share the batch and keep their order', async (t) => {
  const o = output()
  const batch = new LineBatch(o.out, 12_288, 60_000)
  const log = createLogger({ level: 'info', destination: batch })
  const request = requestLineWriter(log)
  log.info({ event: 'first' }, 'first')
  request('a-1', 'GET', '/api/auth/me', 200, 0.5)
  log.warn({ event: 'third' }, 'third')
  batch.flushSync()
  const lines = o.writes.join('').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
  t.same(
    lines.map((l) => l.msg),
    ['first', 'request', 'third'],
  )
  t.equal(lines[1]!.reqId, 'a-1')
})

t.test('a process that exits at once (process.exit) still writes its gathered lines, flushed on exit as the daemon does', async (t) => {
  const logger = fileURLToPath(new URL('../../dist/daemon/logger.js', import.meta.url))
  const script = `
    const { createLogger, flushLogSync, requestLineWriter } = await import(${JSON.stringify(logger)})
    const log = createLogger({ level: 'info' })
    process.once('exit', () => flushLogSync(log))
    requestLineWriter(log)('b-1', 'GET', '/healthz', 200, 1)
    log.fatal({ event: 'boom' }, 'uncaught exception')
    process.exit(3)
  `
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 })
  t.equal(r.status, 3)
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
  t.same(
    lines.map((l) => [l.level, l.msg]),
    [
      ['info', 'request'],
      ['fatal', 'uncaught exception'],
    ],
  )
})

t.test('a process that ends by itself waits for its last lines (at most the delay)', async (t) => {
  const logger = fileURLToPath(new URL('../../dist/daemon/logger.js', import.meta.url))
  const script = `
    const { createLogger } = await import(${JSON.stringify(logger)})
    createLogger({ level: 'info' }).info({ event: 'last' }, 'the last line')
  `
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 })
  t.equal(r.status, 0)
  t.match(r.stdout, /"msg":"the last line"/)
})

// ---- what the tests above leave out ----

t.test('flushLogSync writes what the batch gathered, survives an output that is gone, and leaves other destinations alone', async (t) => {
  const o = output()
  const log = createLogger({ level: 'info', destination: new LineBatch(o.out, 12_288, 60_000) })
  log.info({ event: 'last' }, 'the last line')
  t.same(o.writes, [], 'gathered, not yet written')
  flushLogSync(log)
  t.match(o.writes.join(''), /"msg":"the last line"/)
  t.equal(o.syncFlushes, 1)

  // at exit after a closed pipe: the output throws, and nothing more can be written
  const closed = new LineBatch({ write: () => {}, flush: () => {}, flushSync: () => { throw Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }) } }, 12_288, 60_000)
  const dead = createLogger({ level: 'info', destination: closed })
  dead.info('lost')
  t.doesNotThrow(() => flushLogSync(dead), 'no throw from the exit handler')

  const out = capture()
  const plain = createLogger({ level: 'info', destination: out.stream })
  plain.info('written as it goes')
  t.doesNotThrow(() => flushLogSync(plain), 'another destination: nothing to do')
  await settle()
  t.equal(out.lines.length, 1)
})

t.test('a line: the level by name, the service, an ISO time; below the level nothing is written', async (t) => {
  const out = capture()
  const log = createLogger({ level: 'warn', destination: out.stream })
  log.debug('no')
  log.info('no')
  log.warn({ event: 'w' }, 'yes')
  log.error({ event: 'e' }, 'yes too')
  await settle()
  t.same(out.lines.map((l) => [l.level, l.service, l.event, l.msg]), [
    ['warn', 'authd', 'w', 'yes'],
    ['error', 'authd', 'e', 'yes too'],
  ])
  t.match(out.lines[0]!.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.notOk('pid' in out.lines[0]! || 'hostname' in out.lines[0]!, 'no pid or hostname: the base is the service alone')
})

t.test('censorNested passes through what holds no object, and looks only at the object’s own fields', async (t) => {
  const flat = { a: null, b: 'password', c: 3, d: undefined, password: 'top level: pino redact’s, not this' }
  t.equal(censorNested(flat), flat, 'no object inside: the same object')
  const inherited = Object.create({ password: SECRET }) as Record<string, unknown>
  const withProto = { body: inherited }
  t.equal(censorNested(withProto), withProto, 'an inherited field is not written to the line: nothing to censor')
  const fromProto = Object.create({ body: { password: SECRET } }) as Record<string, unknown>
  t.equal(censorNested(fromProto), fromProto, 'nor is a field the logged object inherits')
  const two = censorNested({ a: { token: SECRET }, b: { secret: SECRET, keep: 1 }, c: { fine: true } })
  t.same(two, { a: { token: '[redacted]' }, b: { secret: '[redacted]', keep: 1 }, c: { fine: true } }, 'every field holding one')
})

t.test('the request line stays exact past the 256 methods and routes it remembers the quoting of', async (t) => {
  const out = capture()
  const log = createLogger({ level: 'info', destination: out.stream })
  const write = requestLineWriter(log)
  for (let i = 0; i < 300; i++) write(`r-${i}`, 'GET', `/route/${i}"`, 200, 1)
  write('r-again', 'GET', '/route/0"', 200, 1)
  write('r-later', 'GET', '/route/299"', 200, 1)
  await settle()
  const lines = out.lines
  t.equal(lines.length, 302)
  t.ok(lines.slice(0, 300).every((l, i) => l.route === `/route/${i}"` && l.reqId === `r-${i}`), 'each its own route, quoted')
  t.equal(lines[300]!.route, '/route/0"', 'a remembered one')
  t.equal(lines[301]!.route, '/route/299"', 'one past the memory')
})
