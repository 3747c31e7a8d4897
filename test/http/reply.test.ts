/**
 * reply.ts on its own: the base header set, the daemon's raw answers, and each kind of answer
 * written on a recording response (headers, status, body, the request counted and logged once).
 */
import t from 'tap'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { AppError, errorRegistry } from '../../src/errors.js'
import { createRefreshCookie } from '../../src/http/cookies.js'
import { Exchange } from '../../src/http/exchange.js'
import type { Metrics } from '../../src/http/metrics.js'
import { baseHeaders, bodilessHeaders, createReply, JSON_TYPE, rawAnswer } from '../../src/http/reply.js'
import { testConfig } from '../helpers/app.js'

interface Written {
  status?: number
  headers?: Record<string, unknown>
  body?: string
}

function recorder(): { x: Exchange; written: Written; observed: Array<[string, string, number]>; lines: Array<[string, number]>; errors: Array<Record<string, unknown>>; reply: ReturnType<typeof createReply> } {
  const written: Written = {}
  const res = {
    headersSent: false,
    writeHead(status: number, headers: Record<string, unknown>) {
      written.status = status
      written.headers = headers
      this.headersSent = true
    },
    end(body?: string) {
      written.body = body ?? ''
    },
  }
  const req = { method: 'GET', rawHeaders: [], socket: { remoteAddress: '127.0.0.1' } } as unknown as IncomingMessage
  const x = new Exchange(req, res as unknown as ServerResponse, 'abcd0123-1', '/api/auth/me', performance.now(), () => ({ ip: '127.0.0.1', key: '127.0.0.1' }))
  const observed: Array<[string, string, number]> = []
  const lines: Array<[string, number]> = []
  const errors: Array<Record<string, unknown>> = []
  const metrics = { observe: (route: string, method: string, status: number) => observed.push([route, method, status]) } as unknown as Metrics
  const log = { info: () => {}, warn: () => {}, error: (obj: object) => errors.push(obj as Record<string, unknown>) }
  const reply = createReply({ metrics, log, requestLog: (id, _m, _r, status) => lines.push([id, status]), refreshCookie: createRefreshCookie(testConfig(t.testdirName)) })
  return { x, written, observed, lines, errors, reply }
}

t.test('the base set: no-store unless told, nosniff, the request id; with a body its type and length', async (t) => {
  t.same(baseHeaders('id-1', JSON_TYPE, 12), {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-request-id': 'id-1',
    'content-length': 12,
  })
  t.equal(baseHeaders('id-1', JSON_TYPE, 12, 'public, max-age=300')['cache-control'], 'public, max-age=300')
  const bodiless = bodilessHeaders('id-2')
  t.same(Object.keys(bodiless).sort(), ['cache-control', 'x-content-type-options', 'x-request-id'])
  const full = baseHeaders('id-2', JSON_TYPE, 0)
  for (const k of Object.keys(bodiless)) t.equal(bodiless[k], full[k], `an answer without a body has the same ${k}`)
  t.not(baseHeaders('a', JSON_TYPE, 1), baseHeaders('a', JSON_TYPE, 1), 'a fresh object each time: an answer may add its own headers')
})

t.test('a raw answer: the registry\'s status and message, the base set without a request id, the connection closed, the length right', async (t) => {
  for (const [code, status] of [
    ['HEADERS_TOO_LARGE', 'HTTP/1.1 431 Request Header Fields Too Large'],
    ['REQUEST_TIMEOUT', 'HTTP/1.1 408 Request Timeout'],
    ['BAD_REQUEST', 'HTTP/1.1 400 Bad Request'],
  ] as const) {
    const text = rawAnswer(code)
    const [head, body] = text.split('\r\n\r\n') as [string, string]
    const [first, ...lines] = head.split('\r\n')
    t.equal(first, status, code)
    const headers = Object.fromEntries(lines.map((l) => l.split(': ') as [string, string]))
    t.same(headers, {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'content-length': String(Buffer.byteLength(body)),
      connection: 'close',
    })
    t.same(JSON.parse(body), { success: false, message: errorRegistry[code].message })
  }
})

t.test('ok, text and json: the envelope, the base set, extra headers; counted and logged once', async (t) => {
  const r = recorder()
  r.reply.ok(r.x, 201, { a: 1 }, { 'set-cookie': ['a=1', 'b=2'] })
  t.equal(r.written.status, 201)
  t.same(JSON.parse(r.written.body!), { success: true, data: { a: 1 } })
  t.equal(r.written.headers!['content-length'], Buffer.byteLength(r.written.body!))
  t.equal(r.written.headers!['x-request-id'], 'abcd0123-1')
  t.same(r.written.headers!['set-cookie'], ['a=1', 'b=2'])
  t.same(r.observed, [['/api/auth/me', 'GET', 201]])
  t.same(r.lines, [['abcd0123-1', 201]])

  const s = recorder()
  s.reply.text(s.x, 200, '{"é":1}', Buffer.byteLength('{"é":1}'))
  t.equal(s.written.body, '{"é":1}')
  t.equal(s.written.headers!['content-length'], 8, 'the length given, in bytes')
})

t.test("fail: the entry's status, message and headers; Retry-After; a message filled in", async (t) => {
  const r = recorder()
  r.reply.fail(r.x, 'TOO_MANY_LOGINS', 42)
  t.equal(r.written.status, 429)
  t.same(JSON.parse(r.written.body!), { success: false, message: 'Too many login attempts' })
  t.equal(r.written.headers!['retry-after'], '42')
  t.equal(r.written.headers!['cache-control'], 'no-store')

  const c = recorder()
  c.reply.fail(c.x, 'INVALID_REFRESH_TOKEN')
  t.match(c.written.headers!['set-cookie'], /^__Host-authd_rt=; Max-Age=0;/, 'the refresh cookie cleared, with the attributes of config')
  t.equal(c.written.headers!['retry-after'], undefined)

  const w = recorder()
  w.reply.fail(w.x, 'INVALID_ACCESS_TOKEN')
  t.equal(w.written.headers!['www-authenticate'], 'Bearer error="invalid_token"')
  t.equal(w.written.headers!['set-cookie'], undefined)

  const p = recorder()
  p.reply.error(p.x, new AppError('PASSWORD_TOO_SHORT', { params: { min: 12 } }))
  t.same(JSON.parse(p.written.body!), { success: false, message: 'Password must be at least 12 characters' })
})

t.test('error: the store out of reach is 503 with Retry-After 1; anything else a logged 500; nothing after headers went out', async (t) => {
  const s = recorder()
  s.reply.error(s.x, new AppError('STORE_UNAVAILABLE', { message: 'ECONNREFUSED db:5432' }))
  t.equal(s.written.status, 503)
  t.same(JSON.parse(s.written.body!), { success: false, message: 'Service unavailable' })
  t.equal(s.written.headers!['retry-after'], '1')
  t.same(s.errors, [], 'not an unexpected error')

  const u = recorder()
  const err = new Error('secret detail')
  u.reply.error(u.x, err)
  t.equal(u.written.status, 500)
  t.same(JSON.parse(u.written.body!), { success: false, message: 'Internal server error' })
  t.same(u.errors, [{ reqId: 'abcd0123-1', err }])

  const late = recorder()
  late.reply.ok(late.x, 200, {})
  late.reply.error(late.x, new Error('after the answer'))
  t.equal(late.written.status, 200, 'an answer already written stands')
  t.same(late.lines, [['abcd0123-1', 200]], 'and is logged once')
})

t.test('other and empty: the JWKS and /metrics kind, the preflight kind', async (t) => {
  const o = recorder()
  o.reply.other(o.x, 'text/plain; version=0.0.4', 'a 1\n')
  t.same(o.written.headers, { 'content-type': 'text/plain; version=0.0.4', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'x-request-id': 'abcd0123-1', 'content-length': 4 })
  const e = recorder()
  e.reply.empty(e.x, { 'access-control-max-age': '600' })
  t.equal(e.written.status, 204)
  t.equal(e.written.body, '')
  t.same(e.written.headers, { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'x-request-id': 'abcd0123-1', 'access-control-max-age': '600' })
})

t.test("an error's body is the registry's message unless one is given; a given one does not stick to the code", async (t) => {
  // one reply writing every answer, each on a response of its own
  const { reply } = recorder()
  const answer = (code: 'TOO_MANY_LOGINS' | 'INVALID_EMAIL', message?: string): { body: unknown; length: unknown } => {
    const r = recorder()
    reply.fail(r.x, code, undefined, message)
    return { body: JSON.parse(r.written.body!), length: r.written.headers!['content-length'] }
  }
  const registry = { success: false, message: errorRegistry.TOO_MANY_LOGINS.message }
  t.same(answer('TOO_MANY_LOGINS').body, registry)
  t.same(answer('TOO_MANY_LOGINS').body, registry, 'the same again')
  const own = answer('INVALID_EMAIL', 'Invalid email: ünïcödé')
  t.same(own.body, { success: false, message: 'Invalid email: ünïcödé' })
  t.equal(own.length, Buffer.byteLength(JSON.stringify(own.body)), 'its length in bytes')
  t.same(answer('INVALID_EMAIL').body, { success: false, message: errorRegistry.INVALID_EMAIL.message }, 'the next one without a message: the registry says it')
  t.same(answer('INVALID_EMAIL', 'Another sentence').body, { success: false, message: 'Another sentence' }, 'and a given one after it is not the remembered one')
})
