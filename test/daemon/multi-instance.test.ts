/**
 * Several authd processes on one PostgreSQL database behave as one authd (README, "Several
 * instances"): three real daemons (built dist/) on one throwaway database, driven over real
 * sockets, and authctl on the same database.
 */
import t, { type Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnDaemon, type Daemon } from '../helpers/daemon.js'
import { pgDatabase, ownPgServer } from '../helpers/pg.js'
import { runCtl, until, PASSWORD } from '../cli/run.js'

interface Reply {
  status: number
  body: any
  headers: Headers
}

async function call(base: string, method: string, path: string, opts: { body?: unknown; token?: string; cookie?: string } = {}): Promise<Reply> {
  const headers: Record<string, string> = {}
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`
  if (opts.cookie !== undefined) headers.cookie = opts.cookie
  const res = await fetch(base + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) })
  const text = await res.text()
  let body: any
  try {
    body = JSON.parse(text)
  } catch {
    body = text
  }
  return { status: res.status, body, headers: res.headers }
}

/** the refresh cookie a response set, as `name=value` for the next request, or undefined */
function refreshCookie(r: Reply): string | undefined {
  for (const c of r.headers.getSetCookie()) {
    const pair = c.split(';')[0]!
    if (pair.startsWith('__Host-authd_rt=') && !/Max-Age=0/i.test(c)) return pair
  }
  return undefined
}

function pgEnv(url: string): Record<string, string> {
  return { AUTHD_STORE_BACKEND: 'postgres', AUTHD_STORE_URL: url }
}

/** every request of these tests comes from 127.0.0.1: room for them on the per-address limits */
const ROOMY = { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '100000/15m', AUTHD_RATE_LIMIT_REGISTER_PER_IP: '100000/1h', AUTHD_RATE_LIMIT_REFRESH_PER_IP: '100000/5m' }

async function three(t: Test, url: string, extra: Record<string, string> = {}): Promise<Daemon[]> {
  const dirs = [0, 1, 2].map(() => mkdtempSync(join(tmpdir(), 'authd-multi-')))
  t.teardown(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))
  // started together: the first start on an empty database races to create the schema and key
  return Promise.all(dirs.map((d) => spawnDaemon(t, d, { env: { ...pgEnv(url), ...extra } })))
}

function ctl(url: string, args: string[], input?: string) {
  return runCtl(args, { env: pgEnv(url), input })
}

t.test('three instances on one database', async (t) => {
  const db = await pgDatabase(t)
  if (db === null) return
  const [a, b, c] = await three(t, db.url, ROOMY)

  await t.test('started together on an empty database: exactly one key', async (t) => {
    const keys = await ctl(db.url, ['keys', 'list', '--json'])
    t.equal(keys.code, 0, keys.stderr)
    const list = keys.json().keys as Array<{ state: string }>
    t.equal(list.length, 1, 'one key')
    t.equal(list.filter((k) => k.state === 'active').length, 1, 'active')
  })

  const email = 'multi@example.com'
  const reg = await call(a!.url, 'POST', '/api/auth/register', { body: { email, password: PASSWORD } })
  t.equal(reg.status, 201, 'registered on A')

  await t.test('login on A, /me on B and C', async (t) => {
    const login = await call(a!.url, 'POST', '/api/auth/login', { body: { email, password: PASSWORD } })
    t.equal(login.status, 200)
    for (const d of [b!, c!]) {
      const me = await call(d.url, 'GET', '/api/auth/me', { token: login.body.data.accessToken })
      t.equal(me.status, 200)
      t.equal(me.body.data.email, email)
    }
  })

  await t.test('50 concurrent wrong logins over three instances: exactly five 401s', async (t) => {
    const target = 'limited@example.com'
    const daemons = [a!, b!, c!]
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) => call(daemons[i % 3]!.url, 'POST', '/api/auth/login', { body: { email: target, password: `wrong-${i}` } })),
    )
    const count = (s: number): number => replies.filter((r) => r.status === s).length
    t.equal(count(401), 5, '401s')
    t.equal(count(429), 45, '429s')
  })

  await t.test('20 concurrent refreshes of one cookie over three instances: one successor', async (t) => {
    const login = await call(b!.url, 'POST', '/api/auth/login', { body: { email, password: PASSWORD } })
    const cookie = refreshCookie(login)!
    t.ok(cookie, 'a refresh cookie')
    const daemons = [a!, b!, c!]
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => call(daemons[i % 3]!.url, 'POST', '/api/auth/refresh', { cookie })))
    t.same(
      replies.map((r) => r.status),
      Array(20).fill(200),
      'all 200 within the grace',
    )
    const successors = new Set(replies.map(refreshCookie))
    t.equal(successors.size, 1, 'the same successor every time')
    // the successor works (on any instance), and the session is one
    const next = await call(c!.url, 'POST', '/api/auth/refresh', { cookie: [...successors][0]! })
    t.equal(next.status, 200, 'the successor rotates once more')
  })

  await t.test('a logout on A is refused by B and C within 1 s', async (t) => {
    const login = await call(a!.url, 'POST', '/api/auth/login', { body: { email, password: PASSWORD } })
    const token = login.body.data.accessToken
    t.equal((await call(b!.url, 'GET', '/api/auth/me', { token })).status, 200)
    const out = await call(a!.url, 'POST', '/api/auth/logout', { cookie: refreshCookie(login)! })
    t.equal(out.status, 200)
    t.equal((await call(a!.url, 'GET', '/api/auth/me', { token })).status, 401, 'A at once')
    for (const d of [b!, c!]) {
      const took = await until(async () => (await call(d.url, 'GET', '/api/auth/me', { token })).status === 401, 1000)
      t.ok(took >= 0, `refused within 1 s (${took.toFixed(0)} ms)`)
    }
  })

  await t.test('authctl user disable is seen by all within 1 s', async (t) => {
    const other = 'disable-me@example.com'
    t.equal((await call(c!.url, 'POST', '/api/auth/register', { body: { email: other, password: PASSWORD } })).status, 201)
    const login = await call(a!.url, 'POST', '/api/auth/login', { body: { email: other, password: PASSWORD } })
    const token = login.body.data.accessToken
    const dis = await ctl(db.url, ['user', 'disable', other])
    t.equal(dis.code, 0, dis.stderr)
    for (const d of [a!, b!, c!]) {
      const took = await until(async () => (await call(d.url, 'GET', '/api/auth/me', { token })).status === 401, 1000)
      t.ok(took >= 0, `refused within 1 s (${took.toFixed(0)} ms)`)
    }
  })

  await t.test('keys rotate --now and keys revoke are seen by all within 1 s', async (t) => {
    const before = await call(a!.url, 'POST', '/api/auth/login', { body: { email, password: PASSWORD } })
    const oldToken = before.body.data.accessToken
    const oldKid = JSON.parse(Buffer.from(oldToken.split('.')[0], 'base64url').toString()).kid
    const rot = await ctl(db.url, ['keys', 'rotate', '--now'])
    t.equal(rot.code, 0, rot.stderr)
    for (const d of [a!, b!, c!]) {
      const took = await until(async () => {
        const r = await call(d.url, 'POST', '/api/auth/login', { body: { email, password: PASSWORD } })
        const kid = JSON.parse(Buffer.from(r.body.data.accessToken.split('.')[0], 'base64url').toString()).kid
        return kid !== oldKid
      }, 1000)
      t.ok(took >= 0, `signs with the new key within 1 s (${took.toFixed(0)} ms)`)
    }
    const rev = await ctl(db.url, ['keys', 'revoke', oldKid, '--yes'])
    t.equal(rev.code, 0, rev.stderr)
    for (const d of [a!, b!, c!]) {
      const took = await until(async () => (await call(d.url, 'GET', '/api/auth/me', { token: oldToken })).status === 401, 1000)
      t.ok(took >= 0, `the revoked key's token refused within 1 s (${took.toFixed(0)} ms)`)
    }
  })
})

t.test('the database stopped and started under load: 503s, then recovery, nothing lost', async (t) => {
  const server = await ownPgServer(t)
  if (server === null) return
  const url = server.url()
  const daemons = await three(t, url, ROOMY)
  const statuses = new Map<number, number>()
  const acknowledged: string[] = []
  let retryAfterOk = true
  let stop = false
  let n = 0
  // bounded: at most 60 s and 20 000 requests
  const deadline = Date.now() + 60_000
  const load = async (w: number): Promise<void> => {
    while (!stop && Date.now() < deadline && n < 20_000) {
      const i = n++
      const d = daemons[(w + i) % 3]!
      const email = `load-${w}-${i}@example.com`
      let r: Reply
      try {
        r = await call(d.url, 'POST', '/api/auth/register', { body: { email, password: PASSWORD } })
      } catch {
        continue
      }
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1)
      if (r.status === 201) acknowledged.push(email)
      if (r.status === 503 && r.headers.get('retry-after') !== '1') retryAfterOk = false
      if (r.status === 503) await new Promise((res) => setTimeout(res, 50))
    }
  }
  const workers = Promise.all([0, 1, 2, 3].map(load))
  await new Promise((r) => setTimeout(r, 1500))
  const before = acknowledged.length
  await server.stop()
  // within 5 s every instance answers 503 (never a hang) and /readyz says not ready
  for (const d of daemons) {
    const start = Date.now()
    const r = await call(d.url, 'GET', '/readyz')
    t.equal(r.status, 503, '/readyz 503 while the database is down')
    t.ok(Date.now() - start < 5000, 'no hang')
    t.equal((await call(d.url, 'GET', '/healthz')).status, 200, '/healthz stays 200')
  }
  await new Promise((r) => setTimeout(r, 2000))
  await server.start()
  const back = Date.now()
  for (const d of daemons) {
    const took = await until(async () => (await call(d.url, 'GET', '/readyz')).status === 200, 5000)
    t.ok(took >= 0, `ready again within 5 s of the database's return (${took.toFixed(0)} ms)`)
  }
  await new Promise((r) => setTimeout(r, 1500))
  stop = true
  await workers
  t.ok(Date.now() - back < 30_000)
  t.equal(statuses.get(500) ?? 0, 0, 'no 500')
  t.ok((statuses.get(503) ?? 0) > 0, `some 503s (${statuses.get(503) ?? 0})`)
  t.ok(retryAfterOk, 'every 503 carries Retry-After: 1')
  t.ok(acknowledged.length > before, 'registrations succeed again after the outage')
  // every acknowledged registration is there
  const list = await ctl(url, ['user', 'list', '--json'])
  t.equal(list.code, 0, list.stderr)
  const stored = new Set((list.json().users as Array<{ email: string }>).map((u) => u.email))
  const lost = acknowledged.filter((e) => !stored.has(e))
  t.same(lost, [], `0 of ${acknowledged.length} acknowledged registrations lost`)
})
