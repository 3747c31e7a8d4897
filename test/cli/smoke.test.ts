import t from 'tap'
import type { SmokeStep } from '../../src/client/smoke-steps.js'
import { spawnDaemon } from '../helpers/daemon.js'
import { fakeAuthd } from '../helpers/fake-authd.js'
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

t.test('a 429 shows its Retry-After in the step line and the stderr sentence (regression: it was left out)', async (t) => {
  const url = await fakeAuthd(t, (p) => (p === '/api/auth/login' ? [429, { success: false, message: 'Too many login attempts' }, { 'retry-after': '37' }] : undefined))
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  const line = await ctl(['smoke', '--url', url, '--email', 'smoke@example.com', '--password-stdin'], { input: 'pw\n' })
  t.equal(line.code, 1)
  t.match(line.stdout.split('\n')[1], /^FAIL +1 login +POST \/api\/auth\/login +429 +\d+ ms +expected 200, got 429: Too many login attempts \(Retry-After: 37 s\)$/)
  t.equal(line.stderr, 'authctl: Smoke test failed at step 1 (login): expected 200, got 429: Too many login attempts (Retry-After: 37 s).\n')
})
