/**
 * http/exchange.ts on its own: the client context of a request (address and rate-limit key from
 * the resolver, the first User-Agent sent) is worked out only when a handler asks, and once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import t from 'tap'
import type { ClientIp } from '../../src/http/client-ip.js'
import { Exchange } from '../../src/http/exchange.js'

function exchange(rawHeaders: string[]): { x: Exchange; calls: IncomingMessage[] } {
  const req = { rawHeaders } as unknown as IncomingMessage
  const calls: IncomingMessage[] = []
  const clientIp = (r: IncomingMessage): ClientIp => {
    calls.push(r)
    return { ip: '2001:db8::1', key: '2001:db8::/64' }
  }
  return { x: new Exchange(req, {} as ServerResponse, 'id-1', '/api/auth/me', 0, clientIp), calls }
}

t.test('the client: the resolver’s address and key, and the first User-Agent sent', async (t) => {
  const { x, calls } = exchange(['Host', 'a', 'User-Agent', 'curl/8', 'user-agent', 'second'])
  t.same(x.client(), { ip: '2001:db8::1', ipKey: '2001:db8::/64', userAgent: 'curl/8' })
  t.equal(calls.length, 1)
  t.equal(calls[0], x.req, 'resolved from this request')
})

t.test('no User-Agent is an empty one', async (t) => {
  t.equal(exchange(['Host', 'a']).x.client().userAgent, '')
})

t.test('worked out only when asked, and once', async (t) => {
  const { x, calls } = exchange(['User-Agent', 'curl/8'])
  t.equal(calls.length, 0, 'not when the exchange is made')
  const first = x.client()
  t.equal(x.client(), first, 'the same object the second time')
  t.equal(calls.length, 1)
})

t.test('params are empty until the router sets them, and the empty ones cannot be written to', async (t) => {
  const { x } = exchange([])
  t.same(x.params, {})
  t.ok(Object.isFrozen(x.params), 'shared by every exchange, so frozen')
  x.params = { id: 'abc' }
  t.same(x.params, { id: 'abc' })
  t.same(exchange([]).x.params, {}, 'another exchange is untouched')
})
