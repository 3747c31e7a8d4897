/**
 * What every response looks like, and how request bodies are read (README, "Call the API"),
 * injected into the handler (over a socket where the wire is the subject): the JSON envelope and
 * its headers, 404, 405 with Allow, 415, 413 (declared, chunked, and exactly at the limit), 400
 * for bodies that are not a UTF-8 JSON object, and the health, readiness and metrics endpoints.
 */
import t, { type Test } from 'tap'
import { addUser, buildApp, call, startServer, type Reply, type Target } from '../helpers/app.js'
import { chunk, rawRequest } from '../helpers/raw.js'

const PASSWORD = 'correct horse battery'
const LIMIT = 16 * 1024

function envelope(t: Test, r: { status: number; headers: Record<string, unknown>; text?: string; body?: unknown }, what: string): void {
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8', `${what}: content type`)
  t.equal(r.headers['cache-control'], 'no-store', `${what}: no-store`)
  t.equal(r.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`)
  const body = r.body as Record<string, unknown>
  t.type(body?.success, 'boolean', `${what}: success is a boolean`)
  if (body?.success === true) t.same(Object.keys(body).sort(), ['data', 'success'], `${what}: data`)
  else t.same(Object.keys(body ?? {}).sort(), ['message', 'success'], `${what}: message`)
  t.notMatch(r.text ?? '', /\n\s+at |Error:|\.ts:\d|\.js:\d|node_modules/, `${what}: no stack`)
}

function failed(t: Test, r: Reply, status: number, message: string): void {
  t.equal(r.status, status, message)
  t.same(r.body, { success: false, message })
  envelope(t, r, `${status} ${message}`)
}

const post = (app: Target, path: string, body: string | Buffer, headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<Reply> =>
  call(app, 'POST', path, { body, headers })

const allowOf = (r: { headers: Record<string, unknown> }): string[] => String(r.headers.allow ?? '').split(/,\s*/).sort()

t.test('answers 404 "Not found" for unknown paths', async (t) => {
  const app = await buildApp(t)
  for (const path of ['/', '/api', '/api/auth', '/api/auth/', '/api/auth/nope', '/api/auth/login/', '/API/AUTH/LOGIN', '/api/auth/me/x', '/%', '/%2e%2e/etc/passwd', '/healthz.json']) {
    failed(t, await call(app, 'GET', path), 404, 'Not found')
  }
  failed(t, await call(app, 'POST', '/api/auth/logins', { json: {} }), 404, 'Not found')
})

t.test('answers 405 "Method not allowed" with Allow for a known path and the wrong method', async (t) => {
  const app = await buildApp(t)
  const cases: Array<[string, string, string[]]> = [
    ['GET', '/api/auth/login', ['OPTIONS', 'POST']],
    ['PUT', '/api/auth/register', ['OPTIONS', 'POST']],
    ['GET', '/api/auth/refresh', ['OPTIONS', 'POST']],
    ['DELETE', '/api/auth/logout', ['OPTIONS', 'POST']],
    ['POST', '/api/auth/me', ['GET', 'HEAD', 'OPTIONS']],
    ['DELETE', '/healthz', ['GET', 'HEAD']],
    ['POST', '/readyz', ['GET', 'HEAD']],
    ['PUT', '/.well-known/jwks.json', ['GET', 'HEAD']],
    ['POST', '/metrics', ['GET', 'HEAD']],
  ]
  for (const [method, path, allow] of cases) {
    const r = await call(app, method, path)
    failed(t, r, 405, 'Method not allowed')
    t.same(allowOf(r), allow, `${method} ${path}: Allow`)
  }
})

t.test('answers 415 for a non-empty body that is not application/json (UTF-8)', async (t) => {
  const app = await buildApp(t)
  const json = JSON.stringify({ email: 'ann@example.com', password: PASSWORD })
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/json; charset=utf-16', 'application/jsonx', 'application/json-patch+json', 'text/json']) {
    failed(t, await post(app, '/api/auth/login', json, { 'content-type': type }), 415, 'Content-Type must be application/json')
  }
  failed(t, await post(app, '/api/auth/login', json, {}), 415, 'Content-Type must be application/json')
  failed(t, await post(app, '/api/auth/register', json, { 'content-type': 'text/plain' }), 415, 'Content-Type must be application/json')
  for (const type of ['application/json; charset=utf-8', 'Application/JSON; Charset=UTF-8', 'application/json;charset="utf-8"']) {
    failed(t, await post(app, '/api/auth/login', '{}', { 'content-type': type }), 400, 'Email and password are required')
  }
})

// over a socket: a declared length and a chunked body are what the client writes on the wire
t.test('answers 413 for a body over the limit, whether declared, chunked without a length, or just sent', async (t) => {
  const app = await startServer(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const big = JSON.stringify({ email: 'ann@example.com', password: PASSWORD, pad: 'x'.repeat(LIMIT) })

  const sent = await post(app.url, '/api/auth/login', big)
  failed(t, sent, 413, 'Request body too large')

  const declared = await rawRequest(app.port, [`POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${10 * 1024 * 1024}\r\n\r\n`])
  t.equal(declared.status, 413, 'a declared length is refused before any body is read')
  t.same(JSON.parse(declared.body), { success: false, message: 'Request body too large' })
  t.equal(declared.headers.connection, 'close')
  t.ok(declared.closedByServer, 'and the connection is closed')

  const parts: Array<string | Buffer> = [`POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`]
  for (let i = 0; i < 40; i++) parts.push(chunk('x'.repeat(1024)))
  parts.push('0\r\n\r\n')
  const chunked = await rawRequest(app.port, parts, { gapMs: 2 })
  t.equal(chunked.status, 413, 'a chunked body is counted as it arrives')
  t.same(JSON.parse(chunked.body), { success: false, message: 'Request body too large' })
  t.equal(chunked.headers['content-type'], 'application/json; charset=utf-8')
  t.ok(chunked.closedByServer)

  const ok = await call(app.url, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  t.equal(ok.status, 200, 'the server is fine afterwards')
})

// over a socket: a declared length and a chunked body are what the client writes on the wire
t.test('reads a body of exactly the limit, and refuses one byte more', async (t) => {
  const app = await startServer(t, { env: { AUTHD_SERVER_BODY_LIMIT: '1kb' } })
  await addUser(app, 'ann@example.com', PASSWORD)
  const sized = (n: number): string => {
    const base = JSON.stringify({ email: 'ann@example.com', password: PASSWORD, pad: '' })
    return JSON.stringify({ email: 'ann@example.com', password: PASSWORD, pad: 'x'.repeat(n - base.length) })
  }
  t.equal(Buffer.byteLength(sized(1024)), 1024)
  t.equal((await post(app.url, '/api/auth/login', sized(1024))).status, 200)
  failed(t, await post(app.url, '/api/auth/login', sized(1025)), 413, 'Request body too large')
  const parts = [`POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`, chunk(sized(1025).slice(0, 600)), chunk(sized(1025).slice(600)), '0\r\n\r\n']
  const chunked = await rawRequest(app.port, parts)
  t.equal(chunked.status, 413, 'chunked, one byte over')
  const fits = [`POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`, chunk(sized(1024).slice(0, 600)), chunk(sized(1024).slice(600)), '0\r\n\r\n']
  t.equal((await rawRequest(app.port, fits)).status, 200, 'chunked, exactly the limit')
})

t.test('answers 400 "Invalid JSON body" for bodies that are not a well-formed UTF-8 JSON object', async (t) => {
  const app = await buildApp(t)
  const cases: Array<[string, string | Buffer]> = [
    ['truncated JSON', '{"email":"ann@example.com"'],
    ['not JSON', 'email=ann@example.com'],
    ['single quotes', "{'email':'ann@example.com'}"],
    ['trailing garbage', '{"email":"a@b","password":"x"} x'],
    ['an array', '[{"email":"a@b","password":"x"}]'],
    ['a string', '"a@b"'],
    ['a number', '42'],
    ['null', 'null'],
    ['true', 'true'],
    ['invalid UTF-8 (a lone continuation byte)', Buffer.from([0x7b, 0x22, 0x65, 0x22, 0x3a, 0x22, 0x80, 0x22, 0x7d])],
    ['invalid UTF-8 (0xff)', Buffer.concat([Buffer.from('{"email":"a'), Buffer.from([0xff]), Buffer.from('@b","password":"x"}')])],
    ['an overlong UTF-8 encoding of "/"', Buffer.concat([Buffer.from('{"email":"a'), Buffer.from([0xc0, 0xaf]), Buffer.from('@b","password":"x"}')])],
    ['an encoded UTF-16 surrogate (CESU-8)', Buffer.concat([Buffer.from('{"email":"a'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('@b","password":"x"}')])],
    ['UTF-16LE text', Buffer.from('{"email":"a@b","password":"x"}', 'utf16le')],
    ['a lone high surrogate escape in a value', '{"email":"\\ud800@example.com","password":"x"}'],
    ['a lone low surrogate escape in a value', '{"email":"ann@example.com","password":"\\udc00"}'],
    ['a lone surrogate escape in a key', '{"\\ud83d":1,"email":"a@b","password":"x"}'],
    ['a lone surrogate escape deep inside', '{"email":"a@b","password":"x","n":[{"m":["\\ud83d"]}]}'],
    ['reversed surrogate escapes', '{"email":"a@b","password":"\\ude00\\ud83d"}'],
  ]
  for (const [name, body] of cases) {
    await t.test(name, async (t) => failed(t, await post(app, '/api/auth/login', body), 400, 'Invalid JSON body'))
  }
  const pair = await post(app, '/api/auth/login', '{"email":"nobody@example.com","password":"\\ud83d\\ude00 pw"}')
  t.equal(pair.status, 401, 'a well-formed surrogate pair escape is fine')
  const deep = await post(app, '/api/auth/login', '['.repeat(5000) + ']'.repeat(5000))
  failed(t, deep, 400, 'Invalid JSON body')
  const deepObject = await post(app, '/api/auth/login', '{"a":'.repeat(2000) + '1' + '}'.repeat(2000))
  failed(t, deepObject, 400, 'Email and password are required')
})

t.test('reads an empty body as {}', async (t) => {
  const app = await buildApp(t)
  failed(t, await call(app, 'POST', '/api/auth/login'), 400, 'Email and password are required')
  failed(t, await post(app, '/api/auth/login', ''), 400, 'Email and password are required')
  const logout = await call(app, 'POST', '/api/auth/logout')
  t.equal(logout.status, 200)
  t.same(logout.body, { success: true, data: {} })
})

t.test('answers /healthz with status ok', async (t) => {
  const app = await buildApp(t)
  const r = await call(app, 'GET', '/healthz')
  t.equal(r.status, 200)
  t.same(r.body, { success: true, data: { status: 'ok' } })
  envelope(t, r, 'healthz')
  const head = await call(app, 'HEAD', '/healthz')
  t.equal(head.status, 200)
  t.equal(head.text, '')
})

t.test('answers /readyz 200 when ready and 503 "Not ready" when not', async (t) => {
  const app = await buildApp(t)
  const ready = await call(app, 'GET', '/readyz')
  t.equal(ready.status, 200)
  t.equal(ready.body.success, true)
  envelope(t, ready, 'readyz')
  app.setReady(false)
  failed(t, await call(app, 'GET', '/readyz'), 503, 'Not ready')
  t.equal((await call(app, 'GET', '/healthz')).status, 200, 'healthz stays up')
})

t.test('serves Prometheus text on /metrics with login and me outcomes and durations by route', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const ok = await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: 'wrong' } })
  await call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${ok.body.data.accessToken}` } })
  await call(app, 'GET', '/api/auth/me')
  await call(app, 'GET', '/nope')
  const r = await call(app, 'GET', '/metrics')
  t.equal(r.status, 200)
  t.match(r.headers['content-type'], /^text\/plain; version=0\.0\.4; charset=utf-8$/)
  t.equal(r.headers['cache-control'], 'no-store')
  t.match(r.text, /^# TYPE authd_login_total counter$/m)
  t.match(r.text, /^authd_login_total\{outcome="success"\} 1$/m)
  t.match(r.text, /^authd_login_total\{outcome="invalid_credentials"\} 1$/m)
  t.match(r.text, /^# TYPE authd_me_total counter$/m)
  t.match(r.text, /^authd_me_total\{outcome="success"\} 1$/m)
  t.match(r.text, /^authd_me_total\{outcome="missing"\} 1$/m)
  t.match(r.text, /^# TYPE authd_http_request_duration_seconds histogram$/m)
  t.match(r.text, /^authd_http_request_duration_seconds_count\{route="\/api\/auth\/login",method="POST",status="200"\} 1$/m)
  t.match(r.text, /^authd_http_request_duration_seconds_count\{route="unknown",method="GET",status="404"\} 1$/m, 'unknown paths share one label')
  t.notMatch(r.text, /route="\/nope"/, 'a client cannot mint label values')
  for (const line of r.text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    t.match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [-+]?(\d+(\.\d+)?(e[-+]?\d+)?|NaN|\+Inf)$/, 'a sample line')
  }
})

t.test('answers 404 on /metrics when metrics are disabled', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_METRICS_ENABLED: 'false' } })
  failed(t, await call(app, 'GET', '/metrics'), 404, 'Not found')
})

t.test('gives every JSON response the envelope and its headers, and never a stack', async (t) => {
  const app = await buildApp(t, { env: { AUTHD_SERVER_BODY_LIMIT: '1kb' } })
  await addUser(app, 'ann@example.com', PASSWORD)
  const ok = await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  const replies: Array<[string, Reply]> = [
    ['login 200', ok],
    ['me 200', await call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${ok.body.data.accessToken}` } })],
    ['me 401', await call(app, 'GET', '/api/auth/me', { headers: { authorization: 'Bearer x.y.z' } })],
    ['login 400', await call(app, 'POST', '/api/auth/login', { json: [] })],
    ['login 401', await call(app, 'POST', '/api/auth/login', { json: { email: 'a@b', password: 'x' } })],
    ['login 413', await post(app, '/api/auth/login', 'x'.repeat(2048))],
    ['login 415', await post(app, '/api/auth/login', 'x', { 'content-type': 'text/plain' })],
    ['refresh 401', await call(app, 'POST', '/api/auth/refresh')],
    ['logout 200', await call(app, 'POST', '/api/auth/logout')],
    ['404', await call(app, 'GET', '/x')],
    ['405', await call(app, 'GET', '/api/auth/logout')],
    ['healthz', await call(app, 'GET', '/healthz')],
    ['readyz', await call(app, 'GET', '/readyz')],
  ]
  for (const [what, r] of replies) envelope(t, r, what)
  // the read every /me makes (core/me-view.ts): a fault that is not the store being unreachable
  app.store.meRead = async () => {
    throw new TypeError("Cannot read properties of undefined (reading 'id')")
  }
  const crashed = await call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${ok.body.data.accessToken}` } })
  failed(t, crashed, 500, 'Internal server error')
  t.notMatch(crashed.text, /Cannot read|TypeError/)
})
