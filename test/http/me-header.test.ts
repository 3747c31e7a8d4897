/**
 * /me reads its Authorization header from the raw header list (http/raw-headers.ts soleHeader,
 * called by http/routes/account.ts), not from req.headers: the name in any case; several carry
 * no valid token (node's req.headers would keep the first, a proxy may read the last).
 */
// The second test writes raw HTTP over a socket: a client library normalises header names and sends one Authorization.
import t from 'tap'
import { createConnection } from 'node:net'
import type { IncomingMessage } from 'node:http'
import { firstHeader, soleHeader } from '../../src/http/raw-headers.js'
import { addUser, call, startServer } from '../helpers/app.js'

/** one raw HTTP/1.1 exchange: the status code of the answer */
function rawStatus(port: number, head: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write(head))
    let text = ''
    socket.on('data', (c) => {
      text += c.toString('latin1')
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text)
      if (m !== null) {
        socket.destroy()
        resolve(Number(m[1]))
      }
    })
    socket.on('error', reject)
  })
}

t.test('firstHeader: any case of the name, the first of several, undefined when absent', async (t) => {
  const req = (raw: string[]): IncomingMessage => ({ rawHeaders: raw }) as unknown as IncomingMessage
  t.equal(firstHeader(req(['Host', 'x', 'Authorization', 'Bearer a']), 'authorization'), 'Bearer a')
  t.equal(firstHeader(req(['AUTHORIZATION', 'Bearer b', 'authorization', 'Bearer c']), 'authorization'), 'Bearer b')
  t.equal(firstHeader(req(['Host', 'x', 'Authorisation', 'Bearer d']), 'authorization'), undefined)
  t.equal(firstHeader(req([]), 'authorization'), undefined)
  t.equal(firstHeader(req(['X-Authorization', 'Bearer e']), 'authorization'), undefined)
})

t.test('soleHeader: any case of the name; of several, a value of no form; undefined when absent', async (t) => {
  const req = (raw: string[]): IncomingMessage => ({ rawHeaders: raw }) as unknown as IncomingMessage
  t.equal(soleHeader(req(['Host', 'x', 'AUTHORIZATION', 'Bearer a']), 'authorization'), 'Bearer a')
  t.equal(soleHeader(req(['Authorization', 'Bearer b', 'authorization', 'Bearer b']), 'authorization'), '', 'two, even the same')
  t.equal(soleHeader(req(['Host', 'x', 'Authorisation', 'Bearer d']), 'authorization'), undefined)
  t.equal(soleHeader(req([]), 'authorization'), undefined)
})

t.test('over a socket: the header name in any case; of two, neither counts (401 Unauthorized)', async (t) => {
  const app = await startServer(t)
  await addUser(app, 'hdr@example.com', 'Header-Case-Password-7')
  const login = await call(app.url, 'POST', '/api/auth/login', { json: { email: 'hdr@example.com', password: 'Header-Case-Password-7' } })
  const token = login.body.data.accessToken as string
  const get = (headers: string): Promise<number> => rawStatus(app.port, `GET /api/auth/me HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`)
  t.equal(await get(`AUTHORIZATION: Bearer ${token}\r\n`), 200, 'upper-case name')
  t.equal(await get(`authorization: bearer ${token}\r\n`), 200, 'lower-case name and scheme')
  t.equal(await get(`Authorization: Bearer ${token}\r\nAuthorization: Bearer nope\r\n`), 401, 'the valid one first')
  t.equal(await get(`Authorization: Bearer nope\r\nAuthorization: Bearer ${token}\r\n`), 401, 'the valid one last')
  t.equal(await get(''), 401, 'none')
})
