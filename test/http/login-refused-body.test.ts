/**
 * A login the per-IP limit refuses is answered without reading its body (it is read only when
 * the use-case gets that far); node discards the unread body, so the connection stays usable.
 */
// On a real socket: the subject is the connection itself, kept usable after a body left unread.
import t from 'tap'
import { Agent, request } from 'node:http'
import { startServer } from '../helpers/app.js'

function post(agent: Agent, url: string, path: string, body: string): Promise<{ status: number; text: string; socket: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(url + path, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (text += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, socket: req.socket }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

t.test('answers a refused login without its body and keeps the connection for the next request', async (t) => {
  const app = await startServer(t, { env: { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1/1m' } })
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  const first = await post(agent, app.url, '/api/auth/login', JSON.stringify({ email: 'ann@example.com', password: 'whatever-it-is' }))
  t.equal(first.status, 401, 'the one allowed attempt')
  const padding = 'x'.repeat(12_000)
  const refused = await post(agent, app.url, '/api/auth/login', JSON.stringify({ email: 'ann@example.com', password: 'whatever-it-is', padding }))
  t.equal(refused.status, 429)
  t.same(JSON.parse(refused.text), { success: false, message: 'Too many login attempts' })
  const malformed = await post(agent, app.url, '/api/auth/login', '{"email": "ann@example.com", "password": ')
  t.equal(malformed.status, 429, 'a malformed body is refused by the limit as well, unread')
  const after = await post(agent, app.url, '/api/auth/logout', '')
  t.equal(after.status, 200, 'the same connection serves the next request')
  t.equal(after.socket, refused.socket, 'on the same socket')
  t.equal(app.hasher.runs, 1, 'one hash ran: the allowed attempt')
})
