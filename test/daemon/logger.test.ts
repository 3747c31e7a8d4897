/**
 * The logger censors secrets by configuration, whatever a call site logs: the literal paths
 * (pino redact) and the `*.<field>` paths one level down (censorNested, which replaced pino's
 * wildcard redaction for speed). These pin down that nothing was lost in that change.
 */
import t from 'tap'
import { Writable } from 'node:stream'
import { censorNested, createLogger, REDACT_PATHS, SECRET_FIELDS } from '../../src/daemon/logger.js'

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
  t.same(
    REDACT_PATHS,
    [
      'req.headers.authorization',
      'req.headers.cookie',
      'res.headers["set-cookie"]',
      'headers.authorization',
      'headers.cookie',
      'password',
      'accessToken',
      'refreshToken',
      'token',
      'mfaToken',
      'recoveryCode',
      'recoveryCodes',
      'secret',
      'otpauthUrl',
      'code',
      '*.password',
      '*.accessToken',
      '*.refreshToken',
      '*.token',
      '*.mfaToken',
      '*.recoveryCode',
      '*.recoveryCodes',
      '*.secret',
      '*.otpauthUrl',
    ],
  )
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
