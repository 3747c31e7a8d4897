/**
 * http/router.ts's createRouter on its own, on a small table of its own (docs/api.md, "Any path"):
 * a known path with a method it does not serve is 405 with Allow, an unknown one is no route
 * (404); HEAD is GET; OPTIONS under /api/auth/ is the preflight; paths match exactly (no trailing
 * slash, case-sensitive); a parameter is one non-empty segment. routePath has its own file
 * (test/http/route-path.test.ts), and test/http/app.test.ts checks the app's real table.
 */
import { METHODS } from 'node:http'
import t from 'tap'
import { AppError, errorRegistry } from '../../src/errors.js'
import type { Exchange } from '../../src/http/exchange.js'
import { createRouter, type RouteHandler } from '../../src/http/router.js'

const named = (name: string): RouteHandler => Object.assign(() => {}, { route: name })
const HANDLERS = {
  me: named('me'),
  list: named('list'),
  revoke: named('revoke'),
  login: named('login'),
  health: named('health'),
  preflight: named('preflight'),
  ownOptions: named('ownOptions'),
  ownHead: named('ownHead'),
}
const route = createRouter(
  {
    '/api/auth/me': { GET: HANDLERS.me },
    '/api/auth/sessions': { GET: HANDLERS.list },
    '/api/auth/sessions/:id': { DELETE: HANDLERS.revoke },
    '/api/auth/login': { POST: HANDLERS.login },
    '/healthz': { GET: HANDLERS.health },
    '/api/auth/custom': { OPTIONS: HANDLERS.ownOptions, HEAD: HANDLERS.ownHead, GET: HANDLERS.me },
  },
  HANDLERS.preflight,
)

/** the name of the handler found, "405" for the not-allowed one, null for no route */
function which(method: string, path: string): string | null {
  const found = route(method, path)
  if (found === null) return null
  return (found.handler as { route?: string }).route ?? '405'
}

/** what the not-allowed handler of method and path does: the Allow it sets and the error it throws */
function notAllowed(method: string, path: string): { allow: string[]; error: unknown } {
  const found = route(method, path)!
  const headers: Record<string, string> = {}
  const x = { res: { setHeader: (k: string, v: string) => (headers[k] = v) } } as unknown as Exchange
  let error: unknown
  try {
    void found.handler(x)
  } catch (e) {
    error = e
  }
  return { allow: (headers.allow ?? '').split(', ').sort(), error }
}

t.test('finds the handler of a path and method, with the path as its route template', async (t) => {
  t.equal(which('GET', '/api/auth/me'), 'me')
  t.equal(which('POST', '/api/auth/login'), 'login')
  t.equal(route('GET', '/api/auth/me')!.store, '/api/auth/me')
  t.same(route('GET', '/api/auth/me')!.params, {})
})

t.test('HEAD is answered by the GET handler, where there is one', async (t) => {
  t.equal(which('HEAD', '/api/auth/me'), 'me')
  t.equal(which('HEAD', '/healthz'), 'health')
  t.equal(which('HEAD', '/api/auth/login'), '405', 'no GET, no HEAD')
  t.equal(which('HEAD', '/api/auth/custom'), 'ownHead', "a route's own HEAD wins")
})

t.test('OPTIONS under /api/auth/ is the preflight; elsewhere it is not allowed', async (t) => {
  t.equal(which('OPTIONS', '/api/auth/me'), 'preflight')
  t.equal(which('OPTIONS', '/api/auth/login'), 'preflight')
  t.equal(which('OPTIONS', '/api/auth/sessions/abc'), 'preflight')
  t.equal(which('OPTIONS', '/healthz'), '405')
  t.equal(which('OPTIONS', '/api/auth/custom'), 'ownOptions', "a route's own OPTIONS wins")
})

t.test('any other method of a known path is 405 Method not allowed, with Allow listing what it serves', async (t) => {
  const cases: Array<[string, string, string[]]> = [
    ['POST', '/api/auth/me', ['GET', 'HEAD', 'OPTIONS']],
    ['GET', '/api/auth/login', ['OPTIONS', 'POST']],
    ['GET', '/api/auth/sessions/abc', ['DELETE', 'OPTIONS']],
    ['DELETE', '/healthz', ['GET', 'HEAD']],
    ['PATCH', '/healthz', ['GET', 'HEAD']],
    ['PROPFIND', '/api/auth/me', ['GET', 'HEAD', 'OPTIONS']],
  ]
  for (const [method, path, allow] of cases) {
    const { allow: given, error } = notAllowed(method, path)
    t.same(given, allow, `${method} ${path}: Allow`)
    t.ok(error instanceof AppError && error.code === 'METHOD_NOT_ALLOWED', `${method} ${path}: METHOD_NOT_ALLOWED`)
    t.equal((error as AppError).status, 405)
    t.equal((error as AppError).message, errorRegistry.METHOD_NOT_ALLOWED.message)
    t.equal(route(method, path)!.store, path.startsWith('/api/auth/sessions/') ? '/api/auth/sessions/:id' : path, 'counted under its route template')
  }
})

t.test('every method node:http knows but CONNECT reaches a known path', async (t) => {
  for (const method of METHODS) {
    if (method === 'CONNECT') t.equal(route(method, '/healthz'), null, 'CONNECT: no route')
    else t.not(route(method, '/healthz'), null, method)
  }
  t.equal(route('BREW', '/healthz'), null, 'a method nobody knows: no route')
})

t.test('paths match exactly: no trailing slash, case-sensitive, no prefix', async (t) => {
  for (const path of ['/api/auth/me/', '/API/auth/me', '/api/auth/Me', '/api/auth/me/x', '/api/auth', '/api/auth/', '/', '', 'api/auth/me', '//api/auth/me', '/healthz.json', '/api/auth/sessions/']) {
    t.equal(route('GET', path), null, JSON.stringify(path))
  }
})

t.test('a parameter is one non-empty segment, decoded; its template is the route', async (t) => {
  const found = route('DELETE', '/api/auth/sessions/abc-123')!
  t.equal(which('DELETE', '/api/auth/sessions/abc-123'), 'revoke')
  t.equal(found.store, '/api/auth/sessions/:id', 'the template, never the requested path')
  t.same(found.params, { id: 'abc-123' })
  t.same(route('DELETE', '/api/auth/sessions/a%20b')!.params, { id: 'a b' })
  t.equal(which('DELETE', '/api/auth/sessions/' + 'x'.repeat(4096)), 'revoke', 'a long id reaches the handler, which answers for it')
  t.equal(which('GET', '/api/auth/sessions'), 'list', 'the static path beside it is its own route')
  for (const path of ['/api/auth/sessions/', '/api/auth/sessions//', '/api/auth/sessions/a/b', '/api/auth/sessions//x']) {
    t.equal(route('DELETE', path), null, `${path}: names nothing`)
  }
})

t.test('a parameter that cannot be decoded is no route, not a fault', async (t) => {
  t.doesNotThrow(() => route('DELETE', '/api/auth/sessions/%E0%A4%A'))
  t.equal(route('DELETE', '/api/auth/sessions/%E0%A4%A'), null)
  t.equal(route('DELETE', '/api/auth/sessions/%'), null)
})
