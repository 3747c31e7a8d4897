import t, { type Test } from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describeNetworkError, runSmoke, SMOKE_STEP_NAMES, type SmokeStep } from '../../src/client/smoke-steps.js'
import { spawnDaemon } from '../helpers/daemon.js'
import { ctlFor, PASSWORD } from './run.js'

const STEP_LINE = /^(ok|FAIL|skip) +(\d) (\S+) +(GET|POST) (\S+) +(\d{3}|-) +(\d+ ms|-)/

t.test('authctl smoke against a real daemon: passes, fails on a wrong password, fails on a stopped daemon', async (t) => {
  const dir = t.testdir()
  const daemon = await spawnDaemon(t, dir)
  const ctl = ctlFor(dir)
  t.equal((await ctl(['user', 'add', 'smoke@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)

  const ok = await ctl(['smoke', '--url', daemon.url, '--email', 'smoke@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })
  t.equal(ok.code, 0, ok.stderr)
  t.equal(ok.stderr, '')
  const lines = ok.stdout.trimEnd().split('\n')
  t.equal(lines.length, 8, 'a header, one line per step, a summary')
  const steps = lines.slice(1, 7).map((l) => STEP_LINE.exec(l))
  t.same(
    steps.map((m) => m && [m[1], m[3], m[4], m[5], m[6]]),
    [
      ['ok', 'login', 'POST', '/api/auth/login', '200'],
      ['ok', 'me', 'GET', '/api/auth/me', '200'],
      ['ok', 'refresh', 'POST', '/api/auth/refresh', '200'],
      ['ok', 'me_refreshed', 'GET', '/api/auth/me', '200'],
      ['ok', 'logout', 'POST', '/api/auth/logout', '200'],
      ['ok', 'refresh_after_logout', 'POST', '/api/auth/refresh', '401'],
    ],
  )
  t.match(lines[7], new RegExp(`^All 6 steps passed against ${daemon.url.replace(/\./g, '\\.')} in \\d+ ms\\.$`))
  t.notMatch(ok.stdout + ok.stderr, PASSWORD, 'the password is never printed')

  const json = await ctl(['smoke', '--url', daemon.url, '--email', 'smoke@example.com', '--password-stdin', '--json'], { input: `${PASSWORD}\n` })
  t.equal(json.code, 0)
  const doc = json.json()
  t.match(doc, { ok: true, url: daemon.url, email: 'smoke@example.com', failedStep: null, totalMs: Number })
  t.same(doc.steps.map((s: SmokeStep) => [s.index, s.name, s.status, s.outcome, s.error]), [
    [1, 'login', 200, 'passed', null],
    [2, 'me', 200, 'passed', null],
    [3, 'refresh', 200, 'passed', null],
    [4, 'me_refreshed', 200, 'passed', null],
    [5, 'logout', 200, 'passed', null],
    [6, 'refresh_after_logout', 401, 'passed', null],
  ])
  t.ok(doc.steps.every((s: SmokeStep) => Number.isInteger(s.ms) && s.ms >= 0))

  // the default URL is server.public_url, http://<host>:<port> from the config
  const byConfig = await ctl(['smoke', '--email', 'smoke@example.com', '--password-stdin', '--json'], {
    input: `${PASSWORD}\n`,
    env: { AUTHD_SERVER_PORT: String(daemon.port) },
  })
  t.equal(byConfig.code, 0, byConfig.stderr)
  t.equal(byConfig.json().url, daemon.url)

  const wrong = await ctl(['smoke', '--url', daemon.url, '--email', 'smoke@example.com', '--password-stdin'], { input: 'not the password\n' })
  t.equal(wrong.code, 1)
  t.equal(wrong.stderr, 'authctl: Smoke test failed at step 1 (login): expected 200, got 401: Invalid email or password.\n')
  const wrongLines = wrong.stdout.trimEnd().split('\n')
  t.match(wrongLines[1], /^FAIL +1 login +POST \/api\/auth\/login +401 +\d+ ms +expected 200, got 401: Invalid email or password$/)
  t.same(wrongLines.slice(2).map((l) => STEP_LINE.exec(l)?.[1]), ['skip', 'skip', 'skip', 'skip', 'skip'])

  const wrongJson = await ctl(['smoke', '--url', daemon.url, '--email', 'smoke@example.com', '--password-stdin', '--json'], { input: 'not the password\n' })
  t.equal(wrongJson.code, 1)
  t.match(wrongJson.json(), { ok: false, failedStep: 'login' }, 'monitoring still gets the JSON document')

  t.equal(await daemon.stop(), 0)
  const stopped = await ctl(['smoke', '--url', daemon.url, '--email', 'smoke@example.com', '--password-stdin', '--json'], { input: `${PASSWORD}\n` })
  t.equal(stopped.code, 1)
  // (regression: the sentence did not say which URL refused)
  t.equal(stopped.stderr, `authctl: Smoke test failed at step 1 (login): connection refused at ${daemon.url} (is authd running at this URL?).\n`)
  t.match(stopped.json(), { ok: false, failedStep: 'login', steps: [{ name: 'login', status: null, outcome: 'failed' }] })

  const badUrl = await ctl(['smoke', '--url', 'ftp://127.0.0.1/', '--email', 'smoke@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })
  t.equal(badUrl.code, 2)
  t.equal(badUrl.stderr, 'authctl: --url must be an absolute http:// or https:// URL (got "ftp://127.0.0.1/").\n')
  const noPassword = await ctl(['smoke', '--url', daemon.url, '--email', 'smoke@example.com'])
  t.equal(noPassword.code, 2)
  t.match(noPassword.stderr, /^authctl: Standard input is not a terminal: pass --password-stdin/)
})

/** A daemon double on 127.0.0.1:0 that answers like authd, except where `misbehave` says. */
async function fakeDaemon(t: Test, misbehave: (path: string, req: IncomingMessage) => [number, object, Record<string, string>?] | undefined) {
  let n = 0
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume()
    req.on('end', () => {
      const path = req.url ?? ''
      const send = (status: number, body: object, headers: Record<string, string> = {}): void => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers })
        res.end(JSON.stringify(body))
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
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

t.test('runSmoke reports each step through its callbacks, in order, as it runs', async (t) => {
  const url = await fakeDaemon(t, () => undefined)
  const events: string[] = []
  const result = await runSmoke({
    url,
    email: 'smoke@example.com',
    password: 'pw',
    onStart: (s) => events.push(`start ${s.index} ${s.name}`),
    onStep: (s) => events.push(`done ${s.index} ${s.name} ${s.outcome}`),
  })
  // the double does not end sessions on logout, so the last step must catch it
  t.equal(result.ok, false)
  t.equal(result.failedStep, 'refresh_after_logout')
  t.equal(result.steps[5]!.error, 'expected 401, got 200')
  t.same(
    events,
    SMOKE_STEP_NAMES.flatMap((name, i) => [`start ${i + 1} ${name}`, `done ${i + 1} ${name} ${i === 5 ? 'failed' : 'passed'}`]),
  )
})

t.test('runSmoke fails the step that misbehaves and skips the rest', async (t) => {
  const cases: Array<[string, (path: string, req: IncomingMessage) => [number, object] | undefined, string, string]> = [
    ['a me that answers for another user', (p) => (p === '/api/auth/me' ? [200, { success: true, data: { id: 'someone-else', email: 'x@example.com' } }] : undefined), 'me', '/me answered for another user'],
    ['a refresh that fails', (p) => (p === '/api/auth/refresh' ? [401, { success: false, message: 'Invalid or expired refresh token' }] : undefined), 'refresh', 'expected 200, got 401: Invalid or expired refresh token'],
    ['a login without a token', (p) => (p === '/api/auth/login' ? [200, { success: true, data: { user: { id: 'u1' } } }] : undefined), 'login', 'no accessToken in the body'],
    ['a logout that errs', (p) => (p === '/api/auth/logout' ? [500, { success: false, message: 'Internal server error' }] : undefined), 'logout', 'expected 200, got 500: Internal server error'],
  ]
  for (const [name, misbehave, step, error] of cases) {
    const url = await fakeDaemon(t, misbehave)
    const r = await runSmoke({ url, email: 'smoke@example.com', password: 'pw' })
    t.equal(r.failedStep, step, name)
    const failed = r.steps.find((s) => s.outcome === 'failed')!
    t.equal(failed.error, error, name)
    t.ok(r.steps.slice(failed.index).every((s) => s.outcome === 'skipped' && s.status === null), `${name}: the rest is skipped`)
  }
})

t.test('runSmoke gives up on a silent server after its timeout', async (t) => {
  const server = createServer(() => {}) // never answers
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((r) => server.close(() => r()))
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const started = performance.now()
  const r = await runSmoke({ url, email: 'smoke@example.com', password: 'pw', timeoutMs: 300 })
  t.equal(r.failedStep, 'login')
  t.equal(r.steps[0]!.error, 'no response within 300 ms')
  t.ok(performance.now() - started < 3000)
})

t.test('a 429 shows its Retry-After in the step line, the JSON step and the stderr sentence (regression: it was left out)', async (t) => {
  const url = await fakeDaemon(t, (p) => (p === '/api/auth/login' ? [429, { success: false, message: 'Too many login attempts' }, { 'retry-after': '37' }] : undefined))
  const r = await runSmoke({ url, email: 'smoke@example.com', password: 'pw' })
  t.match(r.steps[0], { status: 429, outcome: 'failed', retryAfter: '37', error: 'expected 200, got 429: Too many login attempts (Retry-After: 37 s)' })
  t.equal(r.steps[1]!.retryAfter, null)

  const dir = t.testdir()
  const ctl = ctlFor(dir)
  const line = await ctl(['smoke', '--url', url, '--email', 'smoke@example.com', '--password-stdin'], { input: 'pw\n' })
  t.equal(line.code, 1)
  t.match(line.stdout.split('\n')[1], /^FAIL +1 login +POST \/api\/auth\/login +429 +\d+ ms +expected 200, got 429: Too many login attempts \(Retry-After: 37 s\)$/)
  t.equal(line.stderr, 'authctl: Smoke test failed at step 1 (login): expected 200, got 429: Too many login attempts (Retry-After: 37 s).\n')

  const dated = await fakeDaemon(t, (p) => (p === '/api/auth/refresh' ? [503, { success: false, message: 'Server busy, try again shortly' }, { 'retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT' }] : undefined))
  const busy = await runSmoke({ url: dated, email: 'smoke@example.com', password: 'pw' })
  t.equal(busy.steps[2]!.error, 'expected 200, got 503: Server busy, try again shortly (Retry-After: Wed, 21 Oct 2026 07:28:00 GMT)')
})

t.test('network errors name the URL: host not found, connection refused, anything else', async (t) => {
  // (no name is looked up here: the errors are those undici gives, as objects)
  const url = 'https://auth.example.com'
  t.equal(describeNetworkError(Object.assign(new Error('getaddrinfo ENOTFOUND auth.example.com'), { code: 'ENOTFOUND' }), 5000, url), 'host not found: auth.example.com (in https://auth.example.com)')
  t.equal(describeNetworkError(Object.assign(new Error('fetch failed'), { cause: { code: 'EAI_AGAIN' } }), 5000, url), 'host not found: auth.example.com (in https://auth.example.com)')
  t.equal(describeNetworkError({ code: 'ECONNREFUSED' }, 5000, url), 'connection refused at https://auth.example.com (is authd running at this URL?)')
  t.equal(describeNetworkError(new Error('socket hang up'), 5000, url), 'request to https://auth.example.com failed: socket hang up')
})
