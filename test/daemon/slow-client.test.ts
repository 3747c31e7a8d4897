/**
 * Slow clients against the listening server (src/daemon/server.ts on a real socket): a socket
 * that sends half a header, trickles a body, or sends nothing at all, is closed by the server within ~15 s, while a
 * normal client is served meanwhile. One bounded test (~11–16 s of waiting).
 */
import t from 'tap'
import { call, startServer } from '../helpers/app.js'
import { rawRequest } from '../helpers/raw.js'

t.test('closes a socket that sends half a header, one that trickles its body, and one that sends nothing, within ~15 s', async (t) => {
  const app = await startServer(t)
  const halfHeader = rawRequest(app.port, ['GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: '], { timeoutMs: 20_000 })
  const body = JSON.stringify({ email: 'nobody@example.com', password: 'x'.repeat(200) })
  const trickle = [`POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`]
  for (const ch of body.slice(0, 40)) trickle.push(ch)
  const trickled = rawRequest(app.port, trickle, { gapMs: 500, timeoutMs: 20_000 })
  // connects and sends nothing at all: no request timeout applies, only the socket's idle one
  const silent = rawRequest(app.port, [''], { timeoutMs: 20_000 })

  await new Promise((r) => setTimeout(r, 1000))
  const meanwhile = await call(app.url, 'GET', '/healthz')
  t.equal(meanwhile.status, 200, 'other clients are served meanwhile')

  const [h, b, s] = await Promise.all([halfHeader, trickled, silent])
  t.ok(s.closedByServer, 'silent socket: closed by the server')
  t.ok(s.ms < 16_000, `silent socket: closed after ${Math.round(s.ms)} ms`)
  t.ok(h.closedByServer, 'half header: closed by the server')
  t.ok(h.ms < 15_500, `half header: closed after ${Math.round(h.ms)} ms`)
  if (h.raw !== '') {
    t.equal(h.status, 408, 'half header: answered 408 if anything')
    t.notMatch(h.body, /at \S+:\d+|Error/)
  }
  t.ok(b.closedByServer, 'trickled body: closed by the server')
  t.ok(b.ms < 17_000, `trickled body: closed after ${Math.round(b.ms)} ms`)
  t.notMatch(b.raw, /at \S+:\d+|Error:/, 'no stack')
})
