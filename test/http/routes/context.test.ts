/**
 * http/routes/context.ts on its own: the steps the route handlers share. The origin check of the
 * cookie endpoints (docs/api.md, "Browsers: CORS and the origin check"), which endpoints those are,
 * the access token handed to authenticate, the device cookies read with the client, the body read
 * under server.body_limit, and the answer of a sign-in: the token in the body, the refresh (and
 * device) cookie in Set-Cookie, the refresh token never in the body.
 */
import { readFileSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { PassThrough } from 'node:stream'
import t from 'tap'
import type { Config } from '../../../src/config/types.js'
import type { AuthService, SignedIn } from '../../../src/core/auth-service.js'
import { AppError } from '../../../src/errors.js'
import { createRefreshCookie } from '../../../src/http/cookies.js'
import { createOriginPolicy } from '../../../src/http/cors.js'
import { createDeviceCookie } from '../../../src/http/device-cookie.js'
import { Exchange } from '../../../src/http/exchange.js'
import type { Reply } from '../../../src/http/reply.js'
import { accountRoutes } from '../../../src/http/routes/account.js'
import { COOKIE_ROUTES, createRouteContext, type RouteContext, type RouteDeps } from '../../../src/http/routes/context.js'
import { mfaRoutes } from '../../../src/http/routes/mfa.js'
import { publicRoutes } from '../../../src/http/routes/public.js'
import { sessionRoutes } from '../../../src/http/routes/session.js'
import { signInRoutes } from '../../../src/http/routes/sign-in.js'
import { testConfig } from '../../helpers/app.js'

const OWN = 'https://auth.example.com'
const APP = 'https://app.example.com'

interface Answer {
  status: number
  data: unknown
  headers: Record<string, unknown> | undefined
}

function context(config: Config): { c: RouteContext; answers: Answer[]; authorizations: Array<string | undefined> } {
  const answers: Answer[] = []
  const authorizations: Array<string | undefined> = []
  const auth = {
    authenticate: async (authorization: string | undefined) => {
      authorizations.push(authorization)
      return { userId: 'u1' }
    },
  } as unknown as AuthService
  const reply = { ok: (_x: Exchange, status: number, data: unknown, headers?: Record<string, unknown>) => answers.push({ status, data, headers }) } as unknown as Reply
  const deps = {
    config,
    auth,
    mfa: {},
    keyring: {},
    metrics: {},
    ready: () => true,
    reply,
    refreshCookie: createRefreshCookie(config),
    deviceCookie: createDeviceCookie(config),
    origins: createOriginPolicy(config),
  } as unknown as RouteDeps
  return { c: createRouteContext(deps), answers, authorizations }
}

function exchange(rawHeaders: string[], body?: string): Exchange {
  const req = new PassThrough() as unknown as IncomingMessage & PassThrough
  const headers: Record<string, string> = {}
  for (let i = 0; i < rawHeaders.length; i += 2) headers[rawHeaders[i]!.toLowerCase()] ??= rawHeaders[i + 1]!
  Object.assign(req, { rawHeaders, headers })
  if (body !== undefined) req.end(body)
  return new Exchange(req, {} as ServerResponse, 'id-1', '/api/auth/login', 0, () => ({ ip: '203.0.113.9', key: '203.0.113.9' }))
}

const config = (t: { testdirName: string }, env: Record<string, string> = {}): Config =>
  testConfig(t.testdirName, { AUTHD_SERVER_PUBLIC_URL: OWN, AUTHD_CORS_ORIGINS: APP, ...env })

t.test('the cookie endpoints are the ones docs/api.md names, and each is a POST route of the app', async (t) => {
  const docs = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8')
  const named = /On the cookie endpoints \(([^)]+)\)/.exec(docs.replace(/\s+/g, ' '))![1]!.split(', ')
  t.same([...COOKIE_ROUTES].sort(), named.map((n) => `/api/auth/${n}`).sort())
  const { c } = context(config(t))
  const routes = { ...signInRoutes(c), ...sessionRoutes(c), ...accountRoutes(c), ...mfaRoutes(c), ...publicRoutes(c) }
  for (const path of COOKIE_ROUTES) t.type(routes[path]?.POST, 'function', path)
})

t.test('checkOrigin: no Origin, our own or a listed one passes; any other is 403 Forbidden origin', async (t) => {
  const { c } = context(config(t))
  for (const raw of [[], ['Origin', OWN], ['origin', APP]]) t.doesNotThrow(() => c.checkOrigin(exchange(raw)), JSON.stringify(raw))
  for (const origin of ['https://evil.example', 'null', `${OWN}.evil.example`, 'http://auth.example.com', `${APP}/`, '']) {
    t.throws(() => c.checkOrigin(exchange(['Origin', origin])), new AppError('FORBIDDEN_ORIGIN'), origin)
  }
  t.throws(() => c.checkOrigin(exchange(['Origin', OWN, 'Origin', OWN])), { code: 'FORBIDDEN_ORIGIN', status: 403 }, 'two Origin headers name no origin')
})

t.test('who: the Authorization header goes to authenticate as sent; two of them as a value of no form', async (t) => {
  const { c, authorizations } = context(config(t))
  await c.who(exchange(['authorization', 'Bearer one']))
  await c.who(exchange(['Authorization', 'Bearer one', 'authorization', 'Bearer two']))
  await c.who(exchange([]))
  t.same(authorizations, ['Bearer one', '', undefined])
})

t.test('withDevices: the client, and the device cookies the request carried', async (t) => {
  const { c } = context(config(t))
  t.same(c.withDevices(exchange(['User-Agent', 'ua/1', 'Cookie', '__Host-authd_device=d1; x=1; __Host-authd_device=d2'])), {
    ip: '203.0.113.9',
    ipKey: '203.0.113.9',
    userAgent: 'ua/1',
    devices: ['d1', 'd2'],
  })
  t.same(c.withDevices(exchange([])).devices, [])
})

t.test('body: read under server.body_limit', async (t) => {
  const { c } = context(config(t, { AUTHD_SERVER_BODY_LIMIT: '10b' }))
  t.same(await c.body(exchange(['Content-Type', 'application/json'], '{"a":"12"}')), { a: '12' })
  await t.rejects(c.body(exchange(['Content-Type', 'application/json'], '{"a":"123"}')), { code: 'BODY_TOO_LARGE' })
})

t.test('signedIn: the access token in the body, the refresh cookie (and device cookie) in Set-Cookie', async (t) => {
  const cfg = config(t)
  const { c, answers } = context(cfg)
  const s: SignedIn = { user: { id: 'u1', email: 'ann@example.com' }, accessToken: 'access', expiresIn: 900, refreshToken: 'refresh-secret', sessionId: 's1', cookieMaxAgeS: 1234 }
  c.signedIn(exchange([]), 200, s)
  c.signedIn(exchange([]), 201, { ...s, deviceCookie: 'device-value' })
  const body = { accessToken: 'access', tokenType: 'Bearer', expiresIn: 900, user: { id: 'u1', email: 'ann@example.com' } }
  const refresh = createRefreshCookie(cfg).set('refresh-secret', 1234)
  t.same(answers, [
    { status: 200, data: body, headers: { 'set-cookie': refresh } },
    { status: 201, data: body, headers: { 'set-cookie': [refresh, createDeviceCookie(cfg).set('device-value')] } },
  ])
  t.notMatch(JSON.stringify(answers.map((a) => a.data)), /refresh-secret|device-value|s1/, 'no refresh token, device value or session id in a body')
})
