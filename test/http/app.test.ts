/**
 * createApp's handler, injected into (light-my-request): routing (404, 405 with Allow, HEAD, an
 * empty `:id` segment), the base headers on every kind of answer, each error registry entry's
 * headers, the CORS preflight, and a 500 for an unexpected throw that leaks nothing.
 */
import t, { type Test } from 'tap'
import inject, { type Response } from 'light-my-request'
import { AppError, errorRegistry, httpErrors, type ErrorCode, type ErrorEntry } from '../../src/errors.js'
import { createApp, type Handler } from '../../src/http/app.js'
import { addUser, buildApp, type TestApp } from '../helpers/app.js'

const EMAIL = 'ada@example.com'
const PASSWORD = 'correct horse battery'
const APP = 'https://app.example.com'
const OWN = 'https://auth.example.com'
const EVIL = 'https://evil.example.net'
const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-z]+$/

const send = (handler: Handler, method: string, url: string, opts: { headers?: Record<string, string>; payload?: string | object } = {}): Promise<Response> =>
  inject(handler, { method: method as 'GET', url, headers: opts.headers, payload: opts.payload })

/** the base header set every answer carries (README, "Every response") */
function base(t: Test, r: Response, what: string, cache = 'no-store'): void {
  t.equal(r.headers['cache-control'], cache, `${what}: Cache-Control`)
  t.equal(r.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`)
  t.match(r.headers['x-request-id'], REQUEST_ID, `${what}: a request id`)
}

function json(t: Test, r: Response, what: string): void {
  base(t, r, what)
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8', `${what}: JSON`)
  t.equal(Number(r.headers['content-length']), Buffer.byteLength(r.payload), `${what}: its length`)
}

const setCookies = (r: Response): string[] => {
  const sc = r.headers['set-cookie']
  return sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]
}

async function app(t: Test): Promise<TestApp> {
  return buildApp(t, { env: { AUTHD_CORS_ORIGINS: APP, AUTHD_SERVER_PUBLIC_URL: OWN } })
}

t.test('routing: 404 for unknown paths, 405 with Allow, HEAD as GET, an empty :id names nothing', async (t) => {
  const a = await app(t)
  for (const path of ['/', '/api/auth/nope', '/api/auth/me/', '/API/AUTH/ME', '/api/auth/sessions/', '/api/auth/sessions//x', '/api/auth/%2Fme']) {
    const r = await send(a.handler, 'GET', path)
    t.equal(r.statusCode, 404, path)
    t.same(r.json(), { success: false, message: 'Not found' }, path)
  }
  const gone = await send(a.handler, 'DELETE', '/api/auth/sessions/')
  t.equal(gone.statusCode, 404, 'DELETE of an empty session id: nothing named')
  // an escape of anything but an unreserved character names no route, a parameter's value neither
  for (const id of ['%2F', '%00', '%20', 'a%20b', '%C3%A9', '%25']) {
    for (const method of ['DELETE', 'OPTIONS']) {
      const r = await send(a.handler, method, `/api/auth/sessions/${id}`)
      t.equal(r.statusCode, 404, `${method} /api/auth/sessions/${id}`)
      t.same(r.json(), { success: false, message: 'Not found' }, `${method} /api/auth/sessions/${id}`)
    }
  }
  t.equal((await send(a.handler, 'DELETE', '/api/auth/sessions/%61bc')).statusCode, 401, 'an escaped unreserved character is the character: a session id, asked for without a token')

  const wrong = await send(a.handler, 'POST', '/api/auth/me')
  t.equal(wrong.statusCode, 405)
  t.same(wrong.json(), { success: false, message: 'Method not allowed' })
  t.same(String(wrong.headers.allow).split(', ').sort(), ['GET', 'HEAD', 'OPTIONS'])
  json(t, wrong, '405')
  t.same(String((await send(a.handler, 'DELETE', '/healthz')).headers.allow).split(', ').sort(), ['GET', 'HEAD'], 'no OPTIONS outside /api/auth/')
  t.same(String((await send(a.handler, 'GET', '/api/auth/sessions/abc')).headers.allow).split(', ').sort(), ['DELETE', 'OPTIONS'])

  const head = await send(a.handler, 'HEAD', '/healthz')
  t.equal(head.statusCode, 200, 'HEAD is answered by GET')
  t.equal(head.payload, '', 'without the body')
  t.equal(Number(head.headers['content-length']), Buffer.byteLength(JSON.stringify({ success: true, data: { status: 'ok' } })))

  const decoded = await send(a.handler, 'GET', '/api/auth/%6De')
  t.equal(decoded.statusCode, 401, 'an escaped unreserved character names the route it spells')
})

t.test('the base headers are on every kind of answer', async (t) => {
  const a = await app(t)
  await addUser(a, EMAIL, PASSWORD)
  const login = await send(a.handler, 'POST', '/api/auth/login', { payload: { email: EMAIL, password: PASSWORD } })
  t.equal(login.statusCode, 200)
  json(t, login, 'a JSON answer with cookies')
  const me = await send(a.handler, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${(login.json() as { data: { accessToken: string } }).data.accessToken}` } })
  t.equal(me.statusCode, 200)
  json(t, me, '/me (its body made beforehand)')
  json(t, await send(a.handler, 'GET', '/healthz'), '/healthz')
  json(t, await send(a.handler, 'GET', '/nope'), 'an error')
  const many: Record<string, string> = {}
  for (let i = 0; i < 101; i++) many[`x-filler-${i}`] = 'x'
  const tooMany = await send(a.handler, 'GET', '/healthz', { headers: many })
  t.equal(tooMany.statusCode, 431)
  json(t, tooMany, 'a malformed request refused before routing')

  const jwks = await send(a.handler, 'GET', '/.well-known/jwks.json')
  t.equal(jwks.statusCode, 200)
  base(t, jwks, 'the JWKS', 'public, max-age=300')
  t.equal(jwks.headers['content-type'], 'application/json; charset=utf-8')
  t.ok(Array.isArray((jwks.json() as { keys: unknown }).keys))

  const metrics = await send(a.handler, 'GET', '/metrics')
  t.equal(metrics.statusCode, 200)
  base(t, metrics, '/metrics')
  t.match(metrics.headers['content-type'], /^text\/plain/)
  t.equal(Number(metrics.headers['content-length']), Buffer.byteLength(metrics.payload), '/metrics: its length')

  const preflight = await send(a.handler, 'OPTIONS', '/api/auth/me', { headers: { origin: APP, 'access-control-request-method': 'GET' } })
  t.equal(preflight.statusCode, 204)
  base(t, preflight, 'the preflight')
  t.equal(preflight.headers['content-type'], undefined, 'the preflight: no body, no type')

  const ids = new Set([login, me, jwks, metrics, preflight].map((r) => r.headers['x-request-id']))
  t.equal(ids.size, 5, 'each answer has its own request id')
})

t.test("each error registry entry's headers arrive with its answer", async (t) => {
  const a = await app(t)
  const entries = Object.entries(httpErrors) as Array<[ErrorCode, ErrorEntry]>
  // every HTTP code, thrown by a handler (here /readyz's readiness check), answers with its entry
  for (const [code, entry] of entries) {
    const handler = createApp({ ...a, ready: () => Promise.reject(new AppError(code)) })
    const r = await send(handler, 'GET', '/readyz')
    t.equal(r.statusCode, entry.status, `${code}: status`)
    t.same(r.json(), { success: false, message: entry.message }, `${code}: message`)
    json(t, r, code)
    for (const [k, v] of Object.entries(entry.headers ?? {})) t.equal(r.headers[k], v, `${code}: ${k}`)
    t.equal(r.headers['www-authenticate'], entry.headers?.['www-authenticate'], `${code}: WWW-Authenticate only when the entry has it`)
    t.equal(r.headers.connection === 'close', entry.headers?.connection === 'close', `${code}: Connection: close only when the entry has it`)
    const cleared = setCookies(r).filter((c) => c.startsWith('__Host-authd_rt=;') && /Max-Age=0/.test(c))
    t.equal(cleared.length, entry.clearsRefreshCookie === true ? 1 : 0, `${code}: the refresh cookie cleared only when the entry says so`)
  }

  // a code only authctl shows (no status) thrown here is a fault: the generic 500
  const cliOnly = await send(createApp({ ...a, ready: () => Promise.reject(new AppError('USER_NOT_FOUND', { params: { who: 'x' } })) }), 'GET', '/readyz')
  t.equal(cliOnly.statusCode, 500)
  t.same(cliOnly.json(), { success: false, message: 'Internal server error' }, 'a code without a status is not answered as it is')

  // and where the product answers them
  const none = await send(a.handler, 'GET', '/api/auth/me')
  t.equal(none.statusCode, 401)
  t.equal(none.headers['www-authenticate'], 'Bearer', 'no token: WWW-Authenticate: Bearer')
  const bad = await send(a.handler, 'GET', '/api/auth/me', { headers: { authorization: 'Bearer not.a.token' } })
  t.equal(bad.statusCode, 401)
  t.equal(bad.headers['www-authenticate'], 'Bearer error="invalid_token"')
  const refresh = await send(a.handler, 'POST', '/api/auth/refresh', { headers: { cookie: '__Host-authd_rt=unknown' } })
  t.same(refresh.json(), { success: false, message: 'Invalid or expired refresh token' })
  t.match(setCookies(refresh), [/^__Host-authd_rt=; Max-Age=0; Path=\/; HttpOnly; Secure; SameSite=Strict$/], 'an unknown refresh token: the cookie is cleared')
  const planted = await send(a.handler, 'POST', '/api/auth/refresh', { headers: { cookie: '__Host-authd_rt=a; __Host-authd_rt=b' } })
  t.same(planted.json(), { success: false, message: 'Invalid or expired refresh token' })
  t.same(setCookies(planted), [], 'a planted second cookie: the same message, nothing cleared')
  const big = await send(a.handler, 'POST', '/api/auth/register', { payload: JSON.stringify({ pad: 'x'.repeat(20_000) }), headers: { 'content-type': 'application/json' } })
  t.equal(big.statusCode, 413)
  t.equal(big.headers.connection, 'close', 'a body over the limit: the connection is closed')
})

t.test('the CORS preflight: allowed methods and headers, the origin check of the cookie endpoints', async (t) => {
  const a = await app(t)
  const listed = await send(a.handler, 'OPTIONS', '/api/auth/login', { headers: { origin: APP, 'access-control-request-method': 'POST' } })
  t.equal(listed.statusCode, 204)
  t.equal(listed.payload, '')
  t.equal(listed.headers['access-control-allow-origin'], APP)
  t.equal(listed.headers['access-control-allow-credentials'], 'true')
  t.equal(listed.headers['access-control-allow-methods'], 'GET, POST, DELETE')
  t.equal(listed.headers['access-control-allow-headers'], 'Content-Type, Authorization')
  t.equal(listed.headers['access-control-max-age'], '600')
  t.equal(listed.headers.vary, 'Origin')

  const own = await send(a.handler, 'OPTIONS', '/api/auth/refresh', { headers: { origin: OWN } })
  t.equal(own.statusCode, 204, 'the public URL origin may preflight a cookie endpoint')
  t.equal(own.headers['access-control-allow-origin'], undefined, 'but is not given CORS headers (it is not listed)')

  const foreign = await send(a.handler, 'OPTIONS', '/api/auth/login', { headers: { origin: EVIL } })
  t.equal(foreign.statusCode, 403, 'a foreign origin is refused on a cookie endpoint')
  t.same(foreign.json(), { success: false, message: 'Forbidden origin' })
  t.equal(foreign.headers['access-control-allow-origin'], undefined)

  const elsewhere = await send(a.handler, 'OPTIONS', '/api/auth/me', { headers: { origin: EVIL } })
  t.equal(elsewhere.statusCode, 204, 'a foreign origin preflighting /me: answered, without CORS headers')
  t.equal(elsewhere.headers['access-control-allow-origin'], undefined)

  const outside = await send(a.handler, 'OPTIONS', '/healthz', { headers: { origin: APP } })
  t.equal(outside.statusCode, 405, 'no preflight outside /api/auth/')
  t.equal(outside.headers['access-control-allow-origin'], undefined)
})

t.test('an unexpected throw is a 500 that leaks nothing; the log has the detail with the request id', async (t) => {
  const a = await app(t)
  const secret = 'connection to db-secret-host:5432 failed at /srv/authd/dist/store.js:12'
  const throwing = createApp({
    ...a,
    ready: () => {
      throw new TypeError(secret)
    },
  })
  const rejecting = createApp({ ...a, ready: () => Promise.reject(new Error(secret)) })
  for (const [what, handler] of [
    ['a throw', throwing],
    ['a rejection', rejecting],
  ] as const) {
    const r = await send(handler, 'GET', '/readyz')
    t.equal(r.statusCode, 500, what)
    t.same(r.json(), { success: false, message: 'Internal server error' }, `${what}: the generic message`)
    json(t, r, what)
    t.notMatch(r.payload, /secret|db-|\.js|Error/, `${what}: nothing of the error in the answer`)
    const line = a.logs.lines.find((l) => l.msg === 'unexpected error' && l.reqId === r.headers['x-request-id'])
    t.ok(line, `${what}: logged with the request id`)
    t.match((line?.err as { message?: string } | undefined)?.message, secret, `${what}: the log has the detail`)
  }
})

t.test('a login refused by its limit (once the block is recorded) is answered before the handler returns, its body never read', async (t) => {
  const a = await buildApp(t, { env: { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1/15m' } })
  t.equal((await send(a.handler, 'POST', '/api/auth/login', { payload: {} })).statusCode, 400, 'the allowance spent')
  t.equal((await send(a.handler, 'POST', '/api/auth/login', { payload: {} })).statusCode, 429, 'the first refusal (it records the block in the audit log)')
  let read = false
  const req = {
    method: 'POST',
    url: '/api/auth/login',
    rawHeaders: ['Host', 'localhost', 'Content-Type', 'application/json'],
    headers: { host: 'localhost', 'content-type': 'application/json' },
    socket: { remoteAddress: '127.0.0.1' },
    on: () => {
      read = true
      return req
    },
  }
  const written: { status?: number; headers?: Record<string, unknown>; body?: string } = {}
  const res = {
    headersSent: false,
    setHeader: () => {},
    writeHead(status: number, headers: Record<string, unknown>) {
      written.status = status
      written.headers = headers
      res.headersSent = true
    },
    end(body: string) {
      written.body = body
    },
  }
  a.handler(req as never, res as never)
  t.equal(written.status, 429, 'answered within the call: no promise on the way')
  t.same(JSON.parse(written.body ?? '{}'), { success: false, message: 'Too many login attempts' })
  t.match(written.headers?.['retry-after'], /^\d+$/)
  t.notOk(read, 'the body is never read')
})
