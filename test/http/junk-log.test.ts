/**
 * One client sending 404s (or 405s, 400s) as fast as it can used to write a log line per request
 * (18 900 lines a second). Their request lines are gathered like rate-limit refusals are
 * (core/refusal-log.ts): the first of a client and status at once, the rest as one
 * `request_repeated` line per period. Every request is still counted in the metrics.
 */
import t from 'tap'
import { inject } from 'light-my-request'
import { buildApp } from '../helpers/app.js'

t.test('a flood of 404s, 405s and 400s from one client writes one line each and one repeated line', async (t) => {
  const app = await buildApp(t, { refusalLogPeriodMs: 60_000 })
  const from = (remoteAddress: string, method: string, url: string): Promise<unknown> => inject(app.handler, { method: method as 'GET', url, remoteAddress })
  for (let i = 0; i < 300; i++) await from('203.0.113.5', 'GET', `/no/such/page/${i}`)
  for (let i = 0; i < 50; i++) await from('203.0.113.5', 'DELETE', '/healthz')
  for (let i = 0; i < 50; i++) await from('203.0.113.5', 'POST', '/api/auth/login')
  await from('198.51.100.1', 'GET', '/nope')
  for (let i = 0; i < 20; i++) await from('203.0.113.5', 'GET', '/healthz')
  const requests = (): Array<Record<string, unknown>> => app.logs.lines.filter((l) => l.msg === 'request')
  t.same(
    requests().map((l) => l.status).sort(),
    [...Array<number>(20).fill(200), 400, 404, 404, 405].sort(),
    'each status of each client once; every 200 written',
  )
  await app.close()
  const repeated = app.logs.lines.filter((l) => l.event === 'request_repeated')
  t.same(
    repeated.map((l) => [l.ip, l.status, l.repeated, l.msg, l.level]).sort(),
    [
      ['203.0.113.5', 400, 49, 'request (repeated)', 'info'],
      ['203.0.113.5', 404, 299, 'request (repeated)', 'info'],
      ['203.0.113.5', 405, 49, 'request (repeated)', 'info'],
    ],
    'the rest as one line per status at the end of the period',
  )
  const metrics = await app.metrics.registry.metrics()
  t.match(metrics, /authd_http_request_duration_seconds_count\{route="unknown",method="GET",status="404"\} 301/, 'every request counted')
})

t.test('an IPv6 client is one client per /64: changing addresses within it buys no new lines', async (t) => {
  const app = await buildApp(t, { refusalLogPeriodMs: 60_000 })
  for (let i = 1; i <= 50; i++) await inject(app.handler, { method: 'GET', url: '/nope', remoteAddress: `2001:db8:1:2::${i.toString(16)}` })
  await inject(app.handler, { method: 'GET', url: '/nope', remoteAddress: '2001:db8:1:3::1' })
  t.equal(app.logs.lines.filter((l) => l.msg === 'request').length, 2, 'one line for the /64, one for another /64')
  await app.close()
  t.same(app.logs.lines.filter((l) => l.event === 'request_repeated').map((l) => l.repeated), [49])
})
