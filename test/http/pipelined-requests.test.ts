/**
 * What node would answer by itself, answered by authd (docs/api.md, "Any path"):
 * - requests read whole on one connection before one that cannot be parsed (pipelined, or a body
 *   longer than its Content-Length) are carried out and answered, in order, then the 400, then
 *   the connection is closed;
 * - an HTTP/1.1 request without Host, and CONNECT, get the registry's 400;
 * - an Expect other than 100-continue is ignored.
 * Over real sockets, since no client library sends these.
 */
import t from 'tap'
import { connect, type Socket } from 'node:net'
import { listen } from '../../src/daemon/server.js'
import { addUser, buildApp, call, startServer } from '../helpers/app.js'
import { rawRequest } from '../helpers/raw.js'

const PASSWORD = 'pipelined pass phrase 1'
const NEW_PASSWORD = 'pipelined pass phrase 2'

/** the status of every response in `raw`, in order (a response follows the body before it directly) */
const statuses = (raw: string): number[] => [...raw.matchAll(/HTTP\/1\.[01] (\d{3}) [A-Z]/g)].map((m) => Number(m[1]))

const post = (path: string, json: unknown, headers: string[] = []): string => {
  const body = JSON.stringify(json)
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${headers.map((h) => `${h}\r\n`).join('')}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
}

t.test('a request read whole before a malformed one is carried out and answered, then the 400', async (t) => {
  const app = await startServer(t)
  const user = await addUser(app, 'pipe@example.com', PASSWORD)
  const login = post('/api/auth/login', { email: 'pipe@example.com', password: PASSWORD })

  // the login (an argon2 hash: answered a while after the garbage was read) comes first
  const one = await rawRequest(app.port, [`${login}GARBAGE\r\n\r\n`], { timeoutMs: 10_000 })
  t.same(statuses(one.raw), [200, 400], 'the login answered, then the refusal')
  t.ok(one.closedByServer, 'then the connection is closed')
  t.match(one.raw, /"accessToken":"/, "the login's own body")
  t.match(one.raw, /\{"success":false,"message":"Bad request"\}$/, 'the registry 400 last')

  // two whole requests, then the malformed one
  const two = await rawRequest(app.port, [`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n${login}\x01\r\n\r\n`], { timeoutMs: 10_000 })
  t.same(statuses(two.raw), [200, 200, 400], 'each answered in order, then the refusal')

  // a body longer than its Content-Length: the rest is the next request, which is malformed
  const token = (await call(app.url, 'POST', '/api/auth/login', { json: { email: 'pipe@example.com', password: PASSWORD } })).body.data.accessToken as string
  const change = post('/api/auth/password', { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, [`Authorization: Bearer ${token}`])
  const cut = `${change} and more than its length said\r\n\r\n`
  const three = await rawRequest(app.port, [cut], { timeoutMs: 10_000 })
  t.same(statuses(three.raw), [200, 400], 'the password change answered 200, then the refusal')
  t.equal((await call(app.url, 'POST', '/api/auth/login', { json: { email: 'pipe@example.com', password: NEW_PASSWORD } })).status, 200, 'the change was made, as its answer said')
  const [event] = (await app.store.auditEvents({ limit: 10 })).filter((e) => e.event === 'password.change')
  t.equal(event?.userId, user.id)
  t.equal(event?.ip, '127.0.0.1', "the change is audited under the client's address")
})

t.test('a request whose own body cannot be read is refused at once', async (t) => {
  const app = await startServer(t)
  const r = await rawRequest(app.port, ['POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n'])
  t.equal(r.status, 400)
  t.same(JSON.parse(r.body), { success: false, message: 'Bad request' })
  t.ok(r.closedByServer, 'closed by the server, not left waiting')
})

t.test('an HTTP/1.1 request without Host is refused with the registry 400; HTTP/1.0 needs none', async (t) => {
  const app = await startServer(t)
  const r = await rawRequest(app.port, ['GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n'])
  t.equal(r.status, 400)
  t.same(JSON.parse(r.body), { success: false, message: 'Bad request' })
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(r.headers['x-content-type-options'], 'nosniff')
  const old = await rawRequest(app.port, ['GET /healthz HTTP/1.0\r\n\r\n'])
  t.equal(old.status, 200, 'HTTP/1.0 without Host: served')
})

t.test('an Expect other than 100-continue is ignored: the request is answered as any other', async (t) => {
  const app = await startServer(t)
  // (one that names 100-continue among others is node's: `100 Continue`, then the answer)
  for (const expect of ['foo', '', 'bar=1']) {
    const r = await rawRequest(app.port, [`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: ${expect}\r\nConnection: close\r\n\r\n`])
    t.equal(r.status, 200, `Expect: ${JSON.stringify(expect)}`)
    t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
  }
  const login = await rawRequest(app.port, [post('/api/auth/login', { email: 'nobody@example.com', password: 'x' }, ['Expect: foo', 'Connection: close'])])
  t.equal(login.status, 401, 'a login with an unknown Expect is checked like any other')
  t.same(JSON.parse(login.body), { success: false, message: 'Invalid email or password' })
})

t.test('CONNECT is refused with the registry 400 and the connection closed', async (t) => {
  const app = await startServer(t)
  for (const target of ['127.0.0.1:80', '/api/auth/me']) {
    const r = await rawRequest(app.port, [`CONNECT ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`])
    t.equal(r.status, 400, `CONNECT ${target}`)
    t.same(JSON.parse(r.body), { success: false, message: 'Bad request' })
    t.ok(r.closedByServer)
  }
  t.equal((await call(app.url, 'GET', '/healthz')).status, 200, 'the server goes on')
})

t.test("a connection's address is kept once it is closed", async (t) => {
  const app = await buildApp(t)
  const running = await listen(app, '127.0.0.1', 0)
  t.teardown(() => running.stop(1000))
  const seen = new Promise<Socket>((resolve) => running.server.once('connection', (s: Socket) => resolve(s)))
  const client = connect(running.port, '127.0.0.1')
  client.on('error', () => undefined)
  const socket = await seen
  socket.destroy()
  await new Promise((r) => socket.once('close', r))
  client.destroy()
  t.equal(socket.remoteAddress, '127.0.0.1', 'what a handler asking late is given')
})
