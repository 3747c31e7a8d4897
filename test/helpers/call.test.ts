/**
 * call() injected into the handler answers what it answers over a real socket: the same status,
 * body and headers (bar the per-request date and id, and the connection's own keep-alive headers),
 * set-cookie as a string when sent once and an array when sent twice, and the request the app sees
 * is the one undici sends (no user agent unless given, the client at 127.0.0.1).
 */
import t from 'tap'
import { addUser, buildApp, call, startServer, type Reply } from './app.js'

const PASSWORD = 'lantern-orchard-41'
const PER_REQUEST = new Set(['date', 'x-request-id', 'connection', 'keep-alive'])
const shape = (r: Reply): unknown => ({
  status: r.status,
  text: r.text.replace(/"accessToken":"[^"]+"/, '"accessToken":"…"'),
  headers: Object.fromEntries(
    Object.entries(r.headers)
      .filter(([k]) => !PER_REQUEST.has(k))
      .map(([k, v]) => [k, k === 'set-cookie' ? [v].flat().map((c) => c!.replace(/=[^;]+;/, '=…;')) : v])
      .sort(([a], [b]) => String(a).localeCompare(String(b))),
  ),
})

t.test('the same reply injected and over a socket', async (t) => {
  const server = await startServer(t, { env: { AUTHD_SERVER_BODY_LIMIT: '1kb' } })
  await addUser(server, 'ann@example.com', PASSWORD)
  const requests: Array<[string, string, Parameters<typeof call>[3]]> = [
    ['POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } }],
    ['POST', '/api/auth/login', { json: { email: 'ann@example.com', password: 'wrong password' } }],
    ['POST', '/api/auth/login', { body: 'x'.repeat(2048), headers: { 'content-type': 'application/json' } }],
    ['POST', '/api/auth/logout', {}],
    ['POST', '/api/auth/refresh', { headers: { cookie: `__Host-authd_rt=${'A'.repeat(22)}.${'b'.repeat(43)}` } }],
    ['GET', '/api/auth/me', { headers: { authorization: 'Bearer x.y.z' } }],
    ['HEAD', '/healthz', {}],
    ['DELETE', '/healthz', {}],
    ['GET', '/nope', {}],
    ['OPTIONS', '/api/auth/login', { headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } }],
  ]
  for (const [method, path, opts] of requests) {
    const socket = await call(server.url, method, path, opts)
    const injected = await call(server, method, path, opts)
    t.same(shape(injected), shape(socket), `${method} ${path}: ${socket.status}`)
  }
  const login = await call(server, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  t.ok(Array.isArray(login.headers['set-cookie']) && login.headers['set-cookie'].length === 2, 'two cookies: an array')
  t.type(login.headers['content-length'], 'string', 'content-length as the socket carries it')
})

t.test('the request is the one undici sends: no user agent unless given, the client at 127.0.0.1', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const sessionOf = async (headers: Record<string, string>) => {
    const r = await call(app, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD }, headers })
    const sid = JSON.parse(Buffer.from(r.body.data.accessToken.split('.')[1], 'base64url').toString()).sid as string
    return app.store.getSession(sid)
  }
  t.match(await sessionOf({}), { ip: '127.0.0.1', userAgent: '' })
  t.match(await sessionOf({ 'user-agent': 'given/1.0' }), { ip: '127.0.0.1', userAgent: 'given/1.0' })
})
