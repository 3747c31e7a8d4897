/**
 * A real browser as the client: Debian's Chromium, headless, driven by playwright-core (never a
 * downloaded browser), against the real `authd start --dev`.
 *
 * The setup mirrors the deployment the README recommends: the web app and authd on two origins
 * of one site (app.example.com and auth.example.com). On loopback that is 127.0.0.1:<app port>
 * and 127.0.0.1:<authd port>: cookies are per host, not per port, and SameSite's "site" ignores
 * ports, so the two are cross-origin (CORS applies) but same-site (the SameSite=Strict refresh
 * cookie is sent). `localhost` against `127.0.0.1` would be cross-site, and a Strict cookie would
 * never be sent: authd must share a site with the apps that use it.
 *
 * The daemon runs with --dev (plain HTTP): the cookie is then neither Secure nor __Secure-
 * prefixed. Chromium would store a Secure cookie from http://127.0.0.1 too (loopback counts as a
 * secure context), but other browsers and curl do not, so --dev is what the README tells
 * developers to use on a laptop, and what is tested here.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createServer, type Server } from 'node:http'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { HOTP, Secret, URI } from 'otpauth'
import { call } from '../helpers/app.js'
import { decode } from '../helpers/jwt.js'
import { spawnDaemon } from '../helpers/daemon.js'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const COOKIE = 'authd_rt' // the --dev cookie name
const EMAIL = 'ada@example.com'
const PASSWORD = 'correct horse battery staple'

/** how long a request from the page may take, and a page call with it (a busy machine is slow, a hang is not) */
const FETCH_TIMEOUT_MS = 15_000
const EVALUATE_TIMEOUT_MS = 25_000

/** The web app: a page that keeps the access token in memory and the session in the HttpOnly cookie. */
const APP_PAGE = `<!doctype html>
<meta charset="utf-8">
<title>app</title>
<script>
  // authd's address comes from the query string, so one static server serves both runs
  const AUTHD = new URL(location.href).searchParams.get('authd')
  let accessToken = null // in memory only: never localStorage
  // a request that never settles ends here, as an error the test shows, not as the file's timeout
  async function api(path, init = {}) {
    try {
      const res = await fetch(AUTHD + path, { credentials: 'include', signal: AbortSignal.timeout(${FETCH_TIMEOUT_MS}), ...init })
      return { status: res.status, body: await res.json() }
    } catch (err) {
      return { error: err.name + ': ' + err.message }
    }
  }
  const json = (body) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  window.app = {
    async login(email, password) {
      const r = await api('/api/auth/login', json({ email, password }))
      // with a second factor on, the answer is { mfaRequired, mfaToken }: no access token yet
      if (r.status === 200 && r.body.data.accessToken) accessToken = r.body.data.accessToken
      return r
    },
    // the second step, with the code the user reads from the authenticator app
    async loginMfa(mfaToken, code) {
      const r = await api('/api/auth/login/mfa', json({ mfaToken, code }))
      if (r.status === 200) accessToken = r.body.data.accessToken
      return r
    },
    me: (token = accessToken) => api('/api/auth/me', token === null ? {} : { headers: { authorization: 'Bearer ' + token } }),
    // on page load: the cookie alone restores the session
    async restore() {
      const r = await api('/api/auth/refresh', { method: 'POST' })
      if (r.status === 200) accessToken = r.body.data.accessToken
      return r
    },
    async logout() {
      const r = await api('/api/auth/logout', { method: 'POST' })
      accessToken = null
      return r
    },
    token: () => accessToken,
  }
</script>
<p>app</p>`

/** Served under the cookie's path (/, so any page there) on the cookie's host: if the cookie were readable by script, it would show here. */
const PROBE_PAGE = `<!doctype html><meta charset="utf-8"><title>probe</title><p>probe</p>`

async function startAppServer(t: Test): Promise<string> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]
    const page = path === '/' ? APP_PAGE : path === '/api/auth/probe.html' ? PROBE_PAGE : null
    if (page === null) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(page)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}

/**
 * Chromium on a fresh profile directory of its own, outside the test's t.testdir(): tap removes a
 * test's directory before the teardowns registered after it run, so a profile in it was removed
 * while Chromium still wrote to it (ENOTEMPTY on a busy machine, and the teardowns after the failed
 * one never ran: the daemon and the app server kept the file alive until its timeout). Here the
 * profile goes once Chromium has closed.
 */
async function launch(t: Test): Promise<{ context: BrowserContext; page: Page }> {
  const profile = mkdtempSync(join(tmpdir(), 'authd-browser-profile-'))
  // launchPersistentContext takes the fresh profile directory; the flags keep Chromium quiet and offline
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    timeout: 30_000,
  }).catch((error: unknown) => {
    rmSync(profile, { recursive: true, force: true })
    throw error
  })
  t.teardown(async () => {
    await context.close()
    rmSync(profile, { recursive: true, force: true, maxRetries: 5 })
  })
  // the context's timeout covers navigation and waiting, not page.evaluate: bound that too
  context.setDefaultTimeout(10_000)
  const page = bounded(context.pages()[0] ?? (await context.newPage()))
  return { context, page }
}

/**
 * The page with an evaluate() that fails within EVALUATE_TIMEOUT_MS, naming what it ran, rather than
 * waiting for the test file's timeout (playwright's own evaluate has no timeout).
 */
function bounded(page: Page): Page {
  const evaluate = page.evaluate.bind(page) as (fn: unknown, arg?: unknown) => Promise<unknown>
  const within = (fn: unknown, arg?: unknown): Promise<unknown> => {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the page did not answer within ${EVALUATE_TIMEOUT_MS / 1000} s: ${String(fn)}`)), EVALUATE_TIMEOUT_MS)
    })
    return Promise.race([evaluate(fn, arg), late]).finally(() => clearTimeout(timer))
  }
  page.evaluate = within as Page['evaluate']
  return page
}

// What the page scripts see, for the functions handed to page.evaluate (they run in the browser).
type ApiResult = { status?: number; body?: any; error?: string }
declare const window: {
  app: {
    login(email: string, password: string): Promise<ApiResult>
    loginMfa(mfaToken: string, code: string): Promise<ApiResult>
    me(token?: string): Promise<ApiResult>
    restore(): Promise<ApiResult>
    logout(): Promise<ApiResult>
    token(): string | null
  }
}
declare const document: { cookie: string }

/** "METHOD route status" of each request in authd's --dev (pretty) log */
function requests(log: string): string[] {
  const out: string[] = []
  for (const entry of log.split(/^(?=\[\d\d:\d\d:\d\d\.\d+\] )/m)) {
    if (!/^\[[^\]]+\] INFO: request$/m.test(entry)) continue
    const field = (name: string): string | undefined => new RegExp(`^\\s+${name}: "?([^"\\n]*)"?$`, 'm').exec(entry)?.[1]
    out.push(`${field('method')} ${field('route')} ${field('status')}`)
  }
  return out
}

const refreshCookie = async (context: BrowserContext, authdUrl: string) =>
  (await context.cookies(authdUrl + '/api/auth/refresh')).find((c) => c.name === COOKIE)

const skip = existsSync(CHROMIUM) ? false : `Chromium is not installed at ${CHROMIUM} (Debian: apt-get install chromium); .ci/run installs it`

t.test('a page on an allowed origin logs in, restores the session from the HttpOnly cookie after a reload, and logs out', { skip }, async (t) => {
  const dir = t.testdir()
  const appOrigin = await startAppServer(t)
  const authd = await spawnDaemon(t, join(dir, 'data'), { args: ['--dev'], env: { AUTHD_CORS_ORIGINS: appOrigin } })
  const reg = await call(authd.url, 'POST', '/api/auth/register', { json: { email: EMAIL, password: PASSWORD } })
  t.equal(reg.status, 201, 'the user exists')

  const { context, page } = await launch(t)
  await page.goto(`${appOrigin}/?authd=${encodeURIComponent(authd.url)}`)

  const login = await page.evaluate(([e, p]) => window.app.login(e, p), [EMAIL, PASSWORD])
  t.equal(login.status, 200, 'login answered 200 and the page could read it (CORS with credentials)')
  t.equal(login.body.data.user.email, EMAIL)
  t.equal(login.body.data.tokenType, 'Bearer')
  const stored = await refreshCookie(context, authd.url)
  t.ok(stored, 'the browser stored the refresh cookie')
  t.match(stored, { httpOnly: true, sameSite: 'Strict', path: '/', secure: false, domain: '127.0.0.1' })

  const me = await page.evaluate(() => window.app.me())
  t.same(me, { status: 200, body: { success: true, data: { id: login.body.data.user.id, email: EMAIL, mfaEnabled: false } } }, '/me with the in-memory token')

  await page.reload()
  t.equal(await page.evaluate(() => window.app.token()), null, 'the reload forgot the access token')
  const anonymous = await page.evaluate(() => window.app.me())
  t.same(anonymous, { status: 401, body: { success: false, message: 'Unauthorized' } })
  const restored = await page.evaluate(() => window.app.restore())
  t.equal(restored.status, 200, 'the cookie alone restored the session')
  t.equal(restored.body.data.user.id, login.body.data.user.id)
  t.not(restored.body.data.accessToken, login.body.data.accessToken, 'with a new access token')
  const rotated = await refreshCookie(context, authd.url)
  t.ok(rotated && rotated.value !== stored!.value, 'and a rotated refresh cookie')
  const meAgain = await page.evaluate(() => window.app.me())
  t.equal(meAgain.status, 200)

  // Script cannot read the cookie, even on a page of the cookie's host under the cookie's path;
  // a script-set cookie on the same page shows that the page would see a readable one.
  const probe = bounded(await context.newPage())
  await probe.goto(`${appOrigin}/api/auth/probe.html`)
  const seen = await probe.evaluate(() => {
    document.cookie = 'probe=visible; path=/api/auth'
    return document.cookie
  })
  t.match(seen, /(^|; )probe=visible(;|$)/, 'document.cookie works on this page')
  t.notMatch(seen, new RegExp(`(^|; )${COOKIE}=`), 'but never shows the HttpOnly refresh cookie')
  t.ok(await refreshCookie(context, authd.url), 'while the browser does hold it')
  t.notMatch(await page.evaluate(() => document.cookie), new RegExp(`${COOKIE}=`))
  await probe.close()

  const oldToken = restored.body.data.accessToken as string
  const logout = await page.evaluate(() => window.app.logout())
  t.same(logout, { status: 200, body: { success: true, data: {} } })
  t.equal(await refreshCookie(context, authd.url), undefined, 'logout cleared the cookie in the browser')
  const after = await page.evaluate(() => window.app.restore())
  t.same(after, { status: 401, body: { success: false, message: 'Refresh token is required' } }, 'nothing left to restore from')
  const dead = await page.evaluate((tok) => window.app.me(tok), oldToken)
  t.same(dead, { status: 401, body: { success: false, message: 'Invalid or expired access token' } }, "the session's access token stopped working")
})

t.test('a page on an origin not in cors.origins is refused, and cannot rotate the cookie either', { skip }, async (t) => {
  const dir = t.testdir()
  const appOrigin = await startAppServer(t)
  // a real misconfiguration: the app moved, the config still lists the old origin
  const authd = await spawnDaemon(t, join(dir, 'data'), { args: ['--dev'], env: { AUTHD_CORS_ORIGINS: 'https://app.example.com' } })
  const reg = await call(authd.url, 'POST', '/api/auth/register', { json: { email: EMAIL, password: PASSWORD } })
  t.equal(reg.status, 201)
  const cookieValue = /authd_rt=([^;]+)/.exec(String(reg.headers['set-cookie']))![1]!

  const { context, page } = await launch(t)
  // the user signed in earlier: the browser holds a live refresh cookie for authd's host
  await context.addCookies([{ name: COOKIE, value: cookieValue, url: authd.url + '/', httpOnly: true, sameSite: 'Strict' }])
  t.ok(await refreshCookie(context, authd.url))
  await page.goto(`${appOrigin}/?authd=${encodeURIComponent(authd.url)}`)

  const before = requests(authd.output()).length

  const login = await page.evaluate(([e, p]) => window.app.login(e, p), [EMAIL, PASSWORD])
  t.match(login, { error: /^TypeError: Failed to fetch/ }, 'the page cannot log in: the preflight does not allow its origin')

  const restore = await page.evaluate(() => window.app.restore())
  t.match(restore, { error: /^TypeError: Failed to fetch/ }, 'nor restore the session')

  // a no-cors request is sent anyway (the browser attaches the same-site cookie); authd must refuse
  // to act on it, because the browser would store a rotated cookie even from an opaque response
  const opaque = await page.evaluate(async ([base, timeoutMs]) => {
    const res = await fetch(base + '/api/auth/refresh', { method: 'POST', mode: 'no-cors', credentials: 'include', signal: AbortSignal.timeout(timeoutMs) })
    return res.type
  }, [authd.url, FETCH_TIMEOUT_MS] as const)
  t.equal(opaque, 'opaque')

  // what authd itself answered, from its request log
  let seen: string[] = []
  for (let i = 0; i < 50; i++) {
    seen = requests(authd.output()).slice(before)
    if (seen.length >= 3) break
    await new Promise((r) => setTimeout(r, 100))
  }
  t.same(
    seen,
    ['OPTIONS /api/auth/login 403', 'POST /api/auth/refresh 403', 'POST /api/auth/refresh 403'],
    'the login preflight was refused, so the login was never sent; both refreshes were refused',
  )
  t.equal((await refreshCookie(context, authd.url))?.value, cookieValue, 'the cookie in the browser is unchanged')

  const still = await call(authd.url, 'POST', '/api/auth/refresh', { headers: { cookie: `${COOKIE}=${cookieValue}` } })
  t.equal(still.status, 200, 'and was never used: it still refreshes once, from the legitimate client')
})

t.test('a planted second refresh cookie: the browser sends both, authd touches nothing and clears nothing', { skip }, async (t) => {
  const dir = t.testdir()
  const appOrigin = await startAppServer(t)
  const authd = await spawnDaemon(t, join(dir, 'data'), { args: ['--dev'], env: { AUTHD_CORS_ORIGINS: appOrigin } })
  t.equal((await call(authd.url, 'POST', '/api/auth/register', { json: { email: EMAIL, password: PASSWORD } })).status, 201)
  const { context, page } = await launch(t)
  await page.goto(`${appOrigin}/?authd=${encodeURIComponent(authd.url)}`)
  t.equal((await page.evaluate(([e, p]) => window.app.login(e, p), [EMAIL, PASSWORD])).status, 200)
  const ours = (await refreshCookie(context, authd.url))!.value
  // what a sibling subdomain (without the __Host- prefix) or a page on the same host can do: a
  // cookie of the same name on a longer path, which the browser sends first
  const planted = `${'P'.repeat(22)}.${'p'.repeat(43)}`
  await context.addCookies([{ name: COOKIE, value: planted, url: authd.url + '/api/auth/', httpOnly: true, sameSite: 'Strict' }])
  t.equal((await context.cookies(authd.url + '/api/auth/refresh')).filter((c) => c.name === COOKIE).length, 2, 'the browser holds both')

  const restore = await page.evaluate(() => window.app.restore())
  t.same(restore, { status: 401, body: { success: false, message: 'Invalid or expired refresh token' } })
  const logout = await page.evaluate(() => window.app.logout())
  t.same(logout, { status: 200, body: { success: true, data: {} } })
  const jar = await context.cookies(authd.url + '/api/auth/refresh')
  t.same(jar.filter((c) => c.name === COOKIE).map((c) => c.value).sort(), [ours, planted].sort(), 'neither cookie was cleared or replaced')

  await context.clearCookies({ name: COOKIE, path: '/api/auth/' })
  const back = await page.evaluate(() => window.app.restore())
  t.equal(back.status, 200, 'with the planted cookie gone, our own token was never used: the session goes on')
})

/** What an authenticator app shows for `secret` (base32) during the 30-second step `steps` after now. */
const appCode = (secret: string, steps = 0): string =>
  HOTP.generate({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, counter: Math.floor(Date.now() / 30_000) + steps })

t.test('a page signs in with a password and a TOTP code, restores the session after a reload, and signs out', { skip }, async (t) => {
  const dir = t.testdir()
  const appOrigin = await startAppServer(t)
  const authd = await spawnDaemon(t, join(dir, 'data'), { args: ['--dev'], env: { AUTHD_CORS_ORIGINS: appOrigin } })
  const reg = await call(authd.url, 'POST', '/api/auth/register', { json: { email: EMAIL, password: PASSWORD } })
  t.equal(reg.status, 201, 'the user exists')
  // the user turns the factor on: setup, the app scans the otpauth URL, confirm with its code
  const bearer = { authorization: `Bearer ${reg.body.data.accessToken as string}` }
  const setup = await call(authd.url, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer, json: {} })
  t.equal(setup.status, 200, 'setup')
  const secret = setup.body.data.secret as string
  // what an authenticator app reads from the URL is the secret setup returned
  const scanned = URI.parse(setup.body.data.otpauthUrl as string)
  t.equal(scanned.secret.base32, secret)
  const confirm = await call(authd.url, 'POST', '/api/auth/mfa/totp/confirm', { headers: bearer, json: { code: appCode(secret) } })
  t.equal(confirm.status, 200, 'confirm: the factor is on')

  const { context, page } = await launch(t)
  await page.goto(`${appOrigin}/?authd=${encodeURIComponent(authd.url)}`)

  const first = await page.evaluate(([e, p]) => window.app.login(e, p), [EMAIL, PASSWORD])
  t.equal(first.status, 200)
  t.match(first.body.data, { mfaRequired: true, mfaToken: String, methods: ['totp', 'recovery_code'], expiresIn: 300 }, 'the password alone asks for the second factor')
  t.notOk('accessToken' in first.body.data, 'no access token after the password alone')
  t.equal(await page.evaluate(() => window.app.token()), null)
  t.equal(await refreshCookie(context, authd.url), undefined, 'and no cookie: a stolen password alone signs nobody in')
  t.same(await page.evaluate(() => window.app.restore()), { status: 401, body: { success: false, message: 'Refresh token is required' } })

  const wrong = await page.evaluate(([m]) => window.app.loginMfa(m, '000000'), [first.body.data.mfaToken as string])
  t.same(wrong.status, 401, 'a wrong code is refused')
  // the code of the next step: confirm used the current one, and a step is accepted once
  const second = await page.evaluate(([m, c]) => window.app.loginMfa(m, c), [first.body.data.mfaToken as string, appCode(secret, 1)])
  t.equal(second.status, 200, 'the second step answered 200 and the page could read it (CORS with credentials)')
  t.equal(second.body.data.user.email, EMAIL)
  t.same(decode(second.body.data.accessToken as string).payload.amr, ['pwd', 'otp', 'mfa'], 'the access token says how the user signed in')
  const stored = await refreshCookie(context, authd.url)
  t.ok(stored, 'the browser stored the refresh cookie')
  t.match(stored, { httpOnly: true, sameSite: 'Strict', path: '/' })
  const me = await page.evaluate(() => window.app.me())
  t.equal(me.status, 200)
  t.match(me.body.data, { email: EMAIL, mfaEnabled: true })

  await page.reload()
  t.equal(await page.evaluate(() => window.app.token()), null, 'the reload forgot the access token')
  const restored = await page.evaluate(() => window.app.restore())
  t.equal(restored.status, 200, 'the cookie alone restored the session, without the factor again')
  t.same(decode(restored.body.data.accessToken as string).payload.amr, ['pwd', 'otp', 'mfa'], 'a refresh keeps the session\'s amr')
  t.not((await refreshCookie(context, authd.url))?.value, stored!.value, 'the refresh cookie rotated')
  t.equal((await page.evaluate(() => window.app.me())).status, 200)

  const oldToken = restored.body.data.accessToken as string
  const logout = await page.evaluate(() => window.app.logout())
  t.same(logout, { status: 200, body: { success: true, data: {} } })
  t.equal(await refreshCookie(context, authd.url), undefined, 'logout cleared the cookie in the browser')
  t.same(await page.evaluate(() => window.app.restore()), { status: 401, body: { success: false, message: 'Refresh token is required' } })
  t.same(await page.evaluate((tok) => window.app.me(tok), oldToken), { status: 401, body: { success: false, message: 'Invalid or expired access token' } })
  // the mfaToken was used by the successful second step: it cannot start another session
  const replay = await call(authd.url, 'POST', '/api/auth/login/mfa', { json: { mfaToken: first.body.data.mfaToken, code: appCode(secret, 0) }, headers: { origin: appOrigin } })
  t.same([replay.status, replay.body.message], [401, 'Invalid or expired MFA token'])
})
