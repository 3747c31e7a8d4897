/**
 * docs/observability.md is the operator's reference for metrics and logs: it is held to the
 * metrics registry, to the log calls in the source, and to the lines a real daemon writes.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { createMetrics, loginMetric } from '../../src/http/metrics.js'
import type { LoginOutcome } from '../../src/core/auth-service.js'
import { codeAt, stepAt } from '../../src/core/totp.js'
import { call, CookieJar, ROOT } from '../helpers/app.js'
import { spawnDaemon } from '../helpers/daemon.js'

const doc = readFileSync(join(ROOT, 'docs/observability.md'), 'utf8')
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')

/** rows of the markdown table between `<!-- name:start -->` and `<!-- name:end -->`, cells split */
function table(name: string): string[][] {
  const m = new RegExp(`<!-- ${name}:start -->\\n([\\s\\S]*?)<!-- ${name}:end -->`).exec(doc)
  if (m === null) throw new Error(`docs/observability.md has no ${name} table`)
  return m[1]!
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) => l.slice(1, -1).split(' | ').map((c) => c.trim()))
}
const ticked = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)

/** the source of the daemon (not authctl or the terminal UI) */
function daemonSource(): string {
  const out: string[] = []
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name)
      if (statSync(p).isDirectory()) {
        if (!['cli', 'tui'].includes(name)) walk(p)
      } else if (p.endsWith('.ts')) out.push(readFileSync(p, 'utf8'))
    }
  }
  walk(join(ROOT, 'src'))
  return out.join('\n')
}
const authService = readFileSync(join(ROOT, 'src/core/auth-service.ts'), 'utf8')
const union = (re: RegExp): string[] => ticked(re.exec(authService)![1]!.replace(/'([^']+)'/g, '`$1`'))

t.test('the README links the observability reference', async (t) => {
  t.match(readme, /\]\(docs\/observability\.md\)/)
})

t.test('the metrics table lists exactly the registry, with types, labels and every label value', async (t) => {
  const metrics = createMetrics({ processMetrics: false })
  const registered = await metrics.registry.getMetricsAsJSON()
  const rows = table('metrics-table')
  t.same(rows.map((r) => ticked(r[0]!)[0]).sort(), registered.map((m) => m.name).sort(), 'one row per metric')
  for (const m of registered) {
    const row = rows.find((r) => ticked(r[0]!)[0] === m.name)!
    t.equal(row[1], m.type, `${m.name} type`)
    const labels = (metrics.registry.getSingleMetric(m.name) as unknown as { labelNames: string[] }).labelNames
    for (const l of labels) t.ok(ticked(row[2]!).includes(l), `${m.name} label ${l} documented`)
  }
  // the label values the use-cases report, read from their declarations in the source
  const values: Record<string, string[]> = {
    // the use-cases' outcomes as /metrics shows them: every wrong credential is one value
    authd_login_total: [...new Set(union(/export type LoginOutcome = ([^\n]+)/).map((o) => loginMetric(o as LoginOutcome)))],
    authd_me_total: union(/export type MeOutcome = ([^\n]+)/),
    authd_refresh_total: union(/export type RefreshMetric = ([^\n]+)/),
    authd_register_total: union(/register\(outcome: ([^)]+)\): void/),
    // every limit's name is of the form `<endpoint>.per_<what>`
    authd_rate_limited_total: [...new Set([...authService.matchAll(/'([a-z]+\.per_[a-z_]+)'/g)].map((m) => m[1]!))],
    authd_password_change_total: ticked(/export type PasswordChangeOutcome = ([^\n]+)/.exec(readFileSync(join(ROOT, 'src/core/account.ts'), 'utf8'))![1]!.replace(/'([^']+)'/g, '`$1`')),
    authd_mfa_total: union(/export type MfaOutcome = ([^\n]+)/),
    authd_mfa_account_total: union(/export type MfaAccountAction = ([^\n]+)/),
  }
  for (const [name, list] of Object.entries(values)) {
    t.ok(list.length >= 3, `${name}: values found in the source`)
    const row = rows.find((r) => ticked(r[0]!)[0] === name)!
    t.same(ticked(row[2]!).slice(1).sort(), [...list].sort(), `${name}: label values`)
  }
  // the process metrics are the two families the page names
  const all = await createMetrics({}).registry.getMetricsAsJSON()
  const families = all.map((m) => m.name).filter((n) => !registered.some((r) => r.name === n))
  t.ok(families.length > 10)
  t.same(families.filter((n) => !/^authd_(process|nodejs)_/.test(n)), [], 'process metrics are authd_process_* and authd_nodejs_*')
})

t.test('the event table lists exactly the events the daemon logs', async (t) => {
  const inSource = [...new Set([...daemonSource().matchAll(/event: '([a-z_]+)'/g)].map((m) => m[1]!))].sort()
  t.same(table('log-events').map((r) => ticked(r[0]!)[0]).sort(), inSource)
})

t.test("a real daemon's log lines are the documented ones, field by field, and carry no secret", async (t) => {
  const events = new Map(
    table('log-events').map((r) => [
      ticked(r[0]!)[0]!,
      {
        level: r[1]!,
        msgs: ticked(r[2]!).map((m) => new RegExp(`^${m.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/<\w+>/g, '\\S+')}$`)),
        fields: new Set(ticked(r[3]!)),
      },
    ]),
  )
  const dir = join(t.testdir(), 'data')
  const authd = await spawnDaemon(t, dir, {
    env: { AUTHD_SESSIONS_REUSE_GRACE: '0s', AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '2/1m', AUTHD_RATE_LIMIT_REGISTER_PER_IP: '2/1m' },
  })
  const password = 'correct horse battery staple'
  const json = (body: unknown): { json: unknown } => ({ json: body })
  const jar = new CookieJar('__Host-authd_rt')
  const secrets: string[] = [password, 'wrong password 1']

  const reg = await call(authd.url, 'POST', '/api/auth/register', json({ email: 'log@example.com', password }))
  jar.take(reg)
  secrets.push(reg.body.data.accessToken, jar.value!)
  t.equal((await call(authd.url, 'POST', '/api/auth/register', json({ email: 'log2@example.com', password }))).status, 201)
  t.equal((await call(authd.url, 'POST', '/api/auth/register', json({ email: 'log3@example.com', password }))).status, 429)
  t.equal((await call(authd.url, 'POST', '/api/auth/login', json({}))).status, 400)
  t.equal((await call(authd.url, 'POST', '/api/auth/login', json({ email: 'nobody@example.com', password: 'wrong password 1' }))).status, 401)
  t.equal((await call(authd.url, 'POST', '/api/auth/login', json({ email: 'log@example.com', password: 'wrong password 1' }))).status, 401)
  t.equal((await call(authd.url, 'POST', '/api/auth/login', json({ email: 'log@example.com', password: 'wrong password 1' }))).status, 401)
  t.equal((await call(authd.url, 'POST', '/api/auth/login', json({ email: 'log@example.com', password: 'wrong password 1' }))).status, 429)
  const login = await call(authd.url, 'POST', '/api/auth/login', json({ email: 'log2@example.com', password }))
  secrets.push(login.body.data.accessToken)
  t.equal((await call(authd.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${login.body.data.accessToken}` } })).status, 200)
  const used = jar.value!
  const refreshed = await call(authd.url, 'POST', '/api/auth/refresh', { headers: jar.header() })
  t.equal(refreshed.status, 200)
  jar.take(refreshed)
  secrets.push(jar.value!)
  const replay = await call(authd.url, 'POST', '/api/auth/refresh', { headers: { cookie: `__Host-authd_rt=${used}` } })
  t.equal(replay.status, 401, 'a replayed refresh token ends the session')
  // (log@example.com is locked out by the failures above for a minute: log2 signs in and out)
  const again = new CookieJar('__Host-authd_rt')
  for (const body of [undefined, { all: true }]) {
    const r = await call(authd.url, 'POST', '/api/auth/login', json({ email: 'log2@example.com', password }))
    t.equal(r.status, 200)
    again.take(r)
    t.equal((await call(authd.url, 'POST', '/api/auth/logout', { json: body, headers: again.header() })).status, 200)
  }
  // the second factor, from setup to off: its secret, codes, recovery codes and mfaTokens are secrets too
  const codes: string[] = []
  const signedIn = await call(authd.url, 'POST', '/api/auth/login', json({ email: 'log2@example.com', password }))
  secrets.push(signedIn.body.data.accessToken)
  const bearer = { authorization: `Bearer ${signedIn.body.data.accessToken}` }
  const setup = await call(authd.url, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer })
  const secret = setup.body.data.secret as string
  secrets.push(secret, setup.body.data.otpauthUrl)
  const step = stepAt(Date.now())
  codes.push(codeAt(secret, step), codeAt(secret, step + 1))
  const confirm = await call(authd.url, 'POST', '/api/auth/mfa/totp/confirm', { headers: bearer, json: { code: codes[0] } })
  t.equal(confirm.status, 200)
  const recovery = confirm.body.data.recoveryCodes as string[]
  secrets.push(...recovery)
  const challenge = await call(authd.url, 'POST', '/api/auth/login', json({ email: 'log2@example.com', password }))
  const mfaToken = challenge.body.data.mfaToken as string
  secrets.push(mfaToken)
  const wrongCode = [codes[0], codes[1]].includes('000000') ? '000001' : '000000'
  t.equal((await call(authd.url, 'POST', '/api/auth/login/mfa', json({ mfaToken, code: wrongCode }))).status, 401)
  const viaTotp = await call(authd.url, 'POST', '/api/auth/login/mfa', json({ mfaToken, code: codes[1] }))
  t.equal(viaTotp.status, 200)
  secrets.push(viaTotp.body.data.accessToken)
  t.equal((await call(authd.url, 'POST', '/api/auth/login/mfa', json({ mfaToken, code: codes[1] }))).status, 401, 'a used mfaToken')
  const challenge2 = await call(authd.url, 'POST', '/api/auth/login', json({ email: 'log2@example.com', password }))
  secrets.push(challenge2.body.data.mfaToken)
  const viaRecovery = await call(authd.url, 'POST', '/api/auth/login/mfa', json({ mfaToken: challenge2.body.data.mfaToken, recoveryCode: recovery[0] }))
  t.equal(viaRecovery.status, 200)
  secrets.push(viaRecovery.body.data.accessToken)
  t.equal((await call(authd.url, 'POST', '/api/auth/mfa/recovery-codes', { headers: bearer, json: { password: 'wrong password 1' } })).status, 403)
  const fresh = await call(authd.url, 'POST', '/api/auth/mfa/recovery-codes', { headers: bearer, json: { password } })
  secrets.push(...(fresh.body.data.recoveryCodes as string[]))
  t.equal((await call(authd.url, 'POST', '/api/auth/mfa/totp/disable', { headers: bearer, json: { password } })).status, 200)
  t.equal(await authd.stop(), 0, 'SIGTERM: a clean stop')

  const lines = authd
    .output()
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
  const seen = new Set<string>()
  for (const line of lines) {
    t.same([line.service, typeof line.time, typeof line.level, typeof line.msg], ['authd', 'string', 'string', 'string'], 'base fields')
    const { level, time, service, msg, event, ...fields } = line
    if (event === undefined) {
      t.equal(msg, 'request', `a line without event is a request line: ${msg}`)
      t.same(Object.keys(fields).sort(), ['method', 'ms', 'reqId', 'route', 'status'])
      continue
    }
    const documented = events.get(event as string)
    if (!t.ok(documented, `event ${event} documented`)) continue
    seen.add(`${event}${fields.outcome === undefined ? '' : `:${fields.outcome}`}${fields.all === true ? ':all' : ''}`)
    t.equal(level, documented!.level, `${event}: level`)
    t.ok(documented!.msgs.some((re) => re.test(msg as string)), `${event}: msg "${msg}" documented`)
    for (const f of Object.keys(fields)) t.ok(documented!.fields.has(f), `${event}: field ${f} documented`)
  }
  t.same(
    [...seen].sort(),
    [
      'listening',
      'login:bad_password',
      'login:invalid_input',
      'login:mfa_required',
      'login:rate_limited',
      'login:success',
      'login:unknown_user',
      'login_mfa:invalid_code',
      'login_mfa:invalid_token',
      'login_mfa:success',
      'logout',
      'logout:all',
      'mfa_change:disable',
      'mfa_change:enable',
      'mfa_change:recovery_codes',
      'mfa_change:setup',
      'mfa_change:wrong_password',
      'refresh_reuse',
      'register:rate_limited',
      'register:success',
      'stopped',
      'stopping',
    ],
    'every documented event was written',
  )
  const text = authd.output()
  for (const s of secrets) t.notOk(text.includes(s), 'no password, token, secret, recovery code or mfaToken in the log')
  for (const c of codes) t.notMatch(text, new RegExp(`(?<![0-9])${c}(?![0-9])`), 'no TOTP code in the log')
  t.notMatch(text, /@example\.com/, 'no email address in the log')
})
