/**
 * The headers the hot paths read from `req.rawHeaders` (firstHeader, joinedHeader) are exactly
 * what node's `req.headers` holds: the first of a header node keeps once, the values of a header
 * it joins in order with ", ", names in any case.
 */
// Over a socket: the subject is what node's parser makes of the header lines as they are written.
import { connect } from 'node:net'
import t from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import { firstHeader, joinedHeader } from '../../src/http/raw-headers.js'

function sent(lines: string[]): Promise<IncomingMessage> {
  return new Promise((resolve) => {
    const server = createServer((req, res) => {
      resolve(req)
      res.end()
      server.close()
    }).listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      const c = connect(port, '127.0.0.1', () => c.write(`GET / HTTP/1.1\r\n${lines.join('\r\n')}\r\nConnection: close\r\n\r\n`))
      c.on('data', () => {})
      c.on('error', () => {})
    })
  })
}

t.test('firstHeader and joinedHeader read what req.headers holds', async (t) => {
  const req = await sent(['Host: x', 'X-Forwarded-For: 198.51.100.1', 'Origin: https://a.example', 'User-Agent: first', 'x-forwarded-for: 203.0.113.2, 10.0.0.1', 'ORIGIN: https://b.example', 'user-agent: second'])
  t.equal(joinedHeader(req, 'x-forwarded-for'), req.headers['x-forwarded-for'])
  t.equal(joinedHeader(req, 'x-forwarded-for'), '198.51.100.1, 203.0.113.2, 10.0.0.1')
  t.equal(joinedHeader(req, 'origin'), req.headers.origin)
  t.equal(firstHeader(req, 'user-agent'), req.headers['user-agent'])
  t.equal(joinedHeader(req, 'authorization'), undefined)
  const one = await sent(['Host: x', 'x-forwarded-for: 192.0.2.9'])
  t.equal(joinedHeader(one, 'x-forwarded-for'), '192.0.2.9')
  t.equal(joinedHeader(one, 'origin'), one.headers.origin)
})
