/**
 * The route table is looked up by the request's path: query string and fragment dropped, and
 * percent-encoded unreserved characters decoded (RFC 3986 6.2.2.2); other escapes name no route.
 */
import t from 'tap'
import { routePath } from '../../src/http/router.js'
import { buildApp } from '../helpers/app.js'
import { inject } from 'light-my-request'

t.test('reduces a request target to the path the routes are keyed by', async (t) => {
  const cases: Array<[string, string]> = [
    ['/api/auth/me', '/api/auth/me'],
    ['/api/auth/me?access_token=x', '/api/auth/me'],
    ['/healthz#frag', '/healthz'],
    ['/healthz?a#b', '/healthz'],
    ['/api/auth/%6De', '/api/auth/me'],
    ['/api/auth/%6de', '/api/auth/me'],
    ['/%68ealthz', '/healthz'],
    ['/api%2Fauth%2Fme', '/api%2Fauth%2Fme'],
    ['/api/auth/me%00', '/api/auth/me%00'],
    ['/%', '/%'],
    ['/%zz', '/%zz'],
    ['/%2e%2e/etc/passwd', '/../etc/passwd'],
    ['/healthz%20', '/healthz%20'],
  ]
  for (const [url, path] of cases) t.equal(routePath(url), path, url)
})

t.test('routes by that path: a decoded name is found, an encoded slash or a broken escape is not', async (t) => {
  const app = await buildApp(t)
  const status = async (url: string): Promise<number> => (await inject(app.handler, { method: 'GET', url })).statusCode
  t.equal(await status('/%68ealthz'), 200)
  t.equal(await status('/healthz?x=1'), 200)
  t.equal(await status('/api%2Fauth%2Fme'), 404)
  t.equal(await status('/healthz/'), 404)
  t.equal(await status('/HEALTHZ'), 404)
  const wrong = await inject(app.handler, { method: 'DELETE', url: '/healthz' })
  t.equal(wrong.statusCode, 405)
  t.equal(wrong.headers.allow, 'GET, HEAD')
})
