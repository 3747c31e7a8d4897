/**
 * Malformed HTTP is refused whole, never read in part (README, Errors): a request target that is
 * not a path, more header lines than the server reads, two Host headers. Over real sockets, since
 * no client library sends these. And /metrics labels stay route templates whatever is requested.
 */
import t from 'tap'
import { call, startServer } from '../helpers/app.js'
import { rawRequest } from '../helpers/raw.js'

const get = (target: string, headers: string[] = ['Host: 127.0.0.1']): string => `GET ${target} HTTP/1.1\r\n${headers.map((h) => `${h}\r\n`).join('')}Connection: close\r\n\r\n`

const metricsText = async (url: string): Promise<string> => (await call(url, 'GET', '/metrics')).text
const routeLabels = (text: string): string[] => [...new Set([...text.matchAll(/authd_http_request_duration_seconds_count\{route="([^"]*)"/g)].map((m) => m[1]!))].sort()

t.test('an absolute-form target is refused with 400 Bad request and makes no metrics series of its own', async (t) => {
  const app = await startServer(t)
  const r = await rawRequest(app.port, [get('http://anything/healthz')])
  t.equal(r.status, 400)
  t.same(JSON.parse(r.body), { success: false, message: 'Bad request' })
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
  for (const target of ['*', 'healthz', 'anything:443', 'HTTP://x/readyz']) {
    const o = await rawRequest(app.port, [get(target).replace(/^GET/, target === '*' ? 'OPTIONS' : 'GET')])
    t.equal(o.status, 400, `${target}: 400`)
  }
  const before = (await metricsText(app.url)).length
  for (let i = 0; i < 200; i++) await rawRequest(app.port, [get(`http://h${i}.example/healthz?${i}`)])
  for (let i = 0; i < 200; i++) await rawRequest(app.port, [get(`/no/such/path/${i}`)])
  const text = await metricsText(app.url)
  t.notMatch(text, /route="http:/, 'no label holds a requested URL')
  t.same(routeLabels(text), ['/metrics', 'unknown'], 'the only labels: route templates, and one for everything else')
  t.ok(text.length - before < 4096, `400 absolute-form and 200 unknown-path requests grew /metrics by ${text.length - before} bytes`)
})

t.test('a request with more than 100 header lines is refused with 431, not read in part', async (t) => {
  const app = await startServer(t, { env: { AUTHD_CORS_ORIGINS: 'https://app.example.com' } })
  const junk = (n: number): string[] => Array.from({ length: n }, (_, i) => `X-Junk-${i}: ${i}`)
  // an Origin after the 100th header line used to be dropped unread, and the request served
  const over = await rawRequest(app.port, [
    `POST /api/auth/logout HTTP/1.1\r\nHost: 127.0.0.1\r\n${junk(99).map((h) => `${h}\r\n`).join('')}Origin: https://evil.example\r\nContent-Length: 0\r\n\r\n`,
  ])
  t.equal(over.status, 431)
  t.same(JSON.parse(over.body), { success: false, message: 'Request headers too large' })
  t.notOk(over.headers['set-cookie'], 'no cookie')
  t.equal((await rawRequest(app.port, [get('/healthz', ['Host: 127.0.0.1', ...junk(100)])])).status, 431, '101 lines: 431')
  t.equal((await rawRequest(app.port, [get('/healthz', ['Host: 127.0.0.1', ...junk(98)])])).status, 200, '100 lines (Connection counted): served')
  t.equal((await rawRequest(app.port, [get('/healthz', ['Host: 127.0.0.1', ...junk(500)])])).status, 431, '501 lines: 431')
})

t.test('a request with two Host headers is refused with 400 Bad request', async (t) => {
  const app = await startServer(t)
  for (const hosts of [['Host: 127.0.0.1', 'Host: evil.example'], ['Host: a.example', 'host: a.example']]) {
    const r = await rawRequest(app.port, [get('/healthz', hosts)])
    t.equal(r.status, 400, hosts.join(' + '))
    t.same(JSON.parse(r.body), { success: false, message: 'Bad request' })
  }
  t.equal((await rawRequest(app.port, [get('/healthz')])).status, 200, 'one Host: served')
})

t.test('two Authorization headers carry no valid token, whichever order: 401 Unauthorized at /me and the account endpoints', async (t) => {
  const app = await startServer(t)
  const reg = await call(app.url, 'POST', '/api/auth/register', { json: { email: 'ann@example.com', password: 'copper-lantern-58' } })
  t.equal(reg.status, 201)
  const good = `Authorization: Bearer ${reg.body.data.accessToken as string}`
  for (const path of ['/api/auth/me', '/api/auth/sessions']) {
    t.equal((await rawRequest(app.port, [get(path, ['Host: 127.0.0.1', good])])).status, 200, `${path}, one header: served`)
    for (const pair of [[good, 'Authorization: Bearer junk'], ['authorization: Bearer junk', good], [good, good]]) {
      const r = await rawRequest(app.port, [get(path, ['Host: 127.0.0.1', ...pair])])
      t.equal(r.status, 401, `${path}: ${pair.map((h) => h.slice(0, 26)).join(' + ')}`)
      t.same(JSON.parse(r.body), { success: false, message: 'Unauthorized' })
      t.equal(r.headers['www-authenticate'], 'Bearer')
    }
  }
})
