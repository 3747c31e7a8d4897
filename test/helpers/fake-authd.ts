/**
 * A double of authd on 127.0.0.1:0 for the smoke steps (src/client/smoke-steps.ts): it answers
 * login, me, refresh and logout as authd does, except where `misbehave` says, and does not end
 * sessions on logout. Closed with the test.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'

export type Misbehave = (path: string, req: IncomingMessage) => [number, object | string, Record<string, string>?] | undefined

/** the double's base URL */
export async function fakeAuthd(t: Test, misbehave: Misbehave): Promise<string> {
  let n = 0
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume()
    req.on('end', () => {
      const path = req.url ?? ''
      const send = (status: number, body: object | string, headers: Record<string, string> = {}): void => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers })
        res.end(typeof body === 'string' ? body : JSON.stringify(body))
      }
      const custom = misbehave(path, req)
      if (custom !== undefined) return send(...custom)
      const user = { id: 'u1', email: 'smoke@example.com' }
      if (path === '/api/auth/login' || path === '/api/auth/refresh') {
        if (path === '/api/auth/refresh' && !/rt=/.test(req.headers.cookie ?? '')) return send(401, { success: false, message: 'Refresh token is required' })
        n++
        return send(200, { success: true, data: { accessToken: `token${n}`, tokenType: 'Bearer', expiresIn: 900, user } }, { 'set-cookie': `rt=r${n}; Path=/; HttpOnly` })
      }
      if (path === '/api/auth/me') return send(200, { success: true, data: user })
      if (path === '/api/auth/logout') return send(200, { success: true, data: {} }, { 'set-cookie': 'rt=; Path=/; Max-Age=0' })
      send(404, { success: false, message: 'Not found' })
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((r) => server.close(() => r()))
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}
