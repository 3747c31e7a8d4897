/**
 * Builds authd on a temp store for tests: in-process services (inject or a real socket on
 * port 0); the real daemon as a child process is daemon.ts's. Every resource is torn down with
 * the test.
 *
 * The store is LMDB in the test's directory, or with TEST_STORE_BACKEND=postgres (the `pg` part
 * of test/suite.mjs) a fresh PostgreSQL database bound to that directory: every app, daemon and
 * authctl (test/cli/run.ts) given the same directory finds the same database (storeEnv), so a
 * test written against a data directory runs unchanged on either backend. A test about LMDB
 * itself says so with lmdbOnly().
 */
import { resolve } from 'node:path'
import { Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { inject, type Response } from 'light-my-request'
import type { Test } from 'tap'
import { loadConfig } from '../../src/config/load.js'
import type { Config } from '../../src/config/types.js'
import { createLogger } from '../../src/daemon/logger.js'
import { createServices, type Services, type ServiceOptions } from '../../src/daemon/services.js'
import { listen } from '../../src/daemon/server.js'
import type { Store, UserRecord } from '../../src/store/store.js'
import { newUserId } from '../../src/core/users.js'
import { REFUSAL_HOLD_MS } from '../../src/store/pg/limiter.js'
import type pg from 'pg'
import tap from 'tap'

type T = Test

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const AUTHD_BIN = fileURLToPath(new URL('../../bin/authd.js', import.meta.url))
export const AUTHCTL_BIN = fileURLToPath(new URL('../../bin/authctl.js', import.meta.url))

/** the backend the contract-level tests run on this time (TEST_STORE_BACKEND) */
export const TEST_BACKEND: 'lmdb' | 'postgres' = process.env.TEST_STORE_BACKEND === 'postgres' ? 'postgres' : 'lmdb'
export const ON_PG = TEST_BACKEND === 'postgres'

/**
 * For a test (or subtest) about LMDB itself, its files, its processes or its limits: `{ skip:
 * lmdbOnly('why') }` skips it, saying why, when the tests run on PostgreSQL.
 */
export function lmdbOnly(why: string): string | false {
  return ON_PG ? `LMDB only: ${why}` : false
}

/** data directory (resolved) -> its database's URL, on PostgreSQL */
const databases = new Map<string, Promise<string>>()

/**
 * The AUTHD_* variables that put authd or authctl on the store of data directory `dir`: none on
 * LMDB (--data says it); on PostgreSQL the database bound to `dir`, made on the first ask and
 * dropped when the test file ends (a directory may outlive the subtest that made it). `fresh`:
 * a new database for it even so (t.testdir() empties the directory it answers again).
 */
export async function storeEnv(dir: string, opts: { fresh?: boolean } = {}): Promise<Record<string, string>> {
  if (!ON_PG) return {}
  const key = resolve(dir)
  let url = databases.get(key)
  if (url === undefined || opts.fresh === true) {
    // the PostgreSQL client and server helpers are loaded only here and in onDatabase: on LMDB,
    // most test processes import this module and need neither (nor undici, see call)
    url = import('./pg.js').then(({ pgDatabase }) => pgDatabase(tap)).then((db) => {
      if (db === null) throw new Error('TEST_STORE_BACKEND=postgres, but there is no PostgreSQL server to test on (see test/helpers/pg.ts)')
      return db.url
    })
    databases.set(key, url)
  }
  return { AUTHD_STORE_BACKEND: 'postgres', AUTHD_STORE_URL: await url }
}

/** Where authctl says the store of data directory `dir` is (Store.location): the directory, or the database's URL. */
export async function storeLocation(dir: string): Promise<string> {
  if (!ON_PG) return dir
  const { redactUrl } = await import('../../src/config/redact-url.js')
  return redactUrl((await storeEnv(dir)).AUTHD_STORE_URL!)
}

/** The store of data directory `dir` (as storeEnv), opened by the test itself; closed with `t` (null: by the caller). */
export async function openTestStore(t: T | null, dir: string): Promise<Store> {
  let store: Store
  if (ON_PG) {
    const { openPgStore } = await import('../../src/store/pg/pg-store.js')
    store = (await openPgStore({ url: (await storeEnv(dir)).AUTHD_STORE_URL!, poolSize: 4 })).store
  } else {
    const { openLmdbStore } = await import('../../src/store/lmdb-store.js')
    store = await openLmdbStore({ path: dir })
  }
  // the test may have closed it itself
  t?.teardown(() => store.close().catch(() => {}))
  return store
}

/**
 * Moves the limiter's windows on by `ms`, for a test that moves its clock (`now`) past a rate
 * limit's window: the in-process limiter (LMDB) runs on that clock already; PostgreSQL's runs on
 * the database's, so the events it holds are made `ms` older instead (and the instance's memory
 * of its refusals is waited out).
 */
export async function ageLimits(app: Services, ms: number): Promise<void> {
  if (app.config.store.backend !== 'postgres') return
  await onDatabase(app, (db) =>
    db.query(`UPDATE authd_rate SET times = ARRAY(SELECT x - $1::bigint * 1000 FROM unnest(times) AS x ORDER BY x), blocked_until = blocked_until - $1::bigint * 1000`, [ms]),
  )
  // a refusal the instance was given is answered from memory for a moment (store/pg/limiter.ts),
  // as after another instance's clear: wait it out
  await sleep(REFUSAL_HOLD_MS)
}

/**
 * Whether a Retry-After header says the whole window of a limit, `fullS` seconds, whose first
 * event was counted after `since` (performance.now()): exactly where the limiter runs on the
 * test's clock, held still (LMDB); on PostgreSQL, whose limiter runs on the database's clock,
 * short of it by at most the whole seconds the test has taken since.
 */
export function retryAfterIs(header: unknown, fullS: number, since: number): boolean {
  const slack = ON_PG ? Math.ceil((performance.now() - since) / 1000) : 0
  return typeof header === 'string' && /^\d+$/.test(header) && Number(header) <= fullS && Number(header) >= fullS - slack
}

/** How many counters the limiter holds: the in-process one's keys, or PostgreSQL's rows. */
export async function limiterKeys(app: Services): Promise<number> {
  if (app.memoryLimiter !== null) return app.memoryLimiter.size()
  const rows = await onDatabase(app, (db) => db.query<{ n: number }>(`SELECT count(*)::integer AS n FROM authd_rate`))
  return rows.rows[0]!.n
}

async function onDatabase<R>(app: Services, use: (db: pg.Client) => Promise<R>): Promise<R> {
  const { default: pg } = await import('pg')
  const db = new pg.Client({ connectionString: app.config.store.url })
  await db.connect()
  try {
    return await use(db)
  } finally {
    await db.end()
  }
}

/** A Config from AUTHD_* style overrides, e.g. { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '5/1m' } */
export function testConfig(dir: string, env: Record<string, string> = {}, flags: { dev?: boolean } = {}): Config {
  return loadConfig({ flags: { data: dir, ...flags }, env: { AUTHD_LOG_LEVEL: 'info', ...env }, cwd: dir }).config
}

/** Captured log lines (parsed JSON) and the raw text, for hygiene checks */
export interface LogCapture {
  lines: Array<Record<string, unknown>>
  text(): string
  stream: Writable
}

export function captureLogs(): LogCapture {
  let raw = ''
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const s = chunk.toString('utf8')
      raw += s
      for (const l of s.split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>)
      cb()
    },
  })
  return { lines, text: () => raw, stream }
}

export interface TestApp extends Services {
  logs: LogCapture
  dir: string
}

/**
 * argon2id's cost in an app built for a test. `'light'`, the default: m=1 MiB, t=1, p=1, about 1
 * ms a hash here, where the production floor (m=19 MiB, t=2, p=1: the default, and the least the
 * config accepts) takes 37 to 55 ms of a core and 19 MiB of memory. The in-process tests
 * hashed some 900 times, and what they test of a login, a registration or a password change is
 * the same at either cost (the same library, hash format, queue and dummy). It is set on the
 * config once loaded, since the config refuses it. `'configured'`: the config's own parameters,
 * for a test whose subject is the parameters or the cost (re-hashing, the dummy's parameters,
 * the hash queue), and whenever the test sets AUTHD_PASSWORDS_MEMORY_KIB, _TIME_COST or
 * _PARALLELISM itself. A daemon (daemon.ts) always hashes at the configured parameters.
 */
export type Argon2Cost = 'light' | 'configured'
export const LIGHT_ARGON2 = { memoryKib: 1024, timeCost: 1, parallelism: 1 } as const

export async function buildApp(
  t: T,
  opts: { env?: Record<string, string>; dev?: boolean; now?: () => number; dir?: string; argon2?: Argon2Cost } & Omit<ServiceOptions, 'logger' | 'logDestination'> = {},
): Promise<TestApp> {
  const dir = opts.dir ?? t.testdir()
  const onDir = opts.store === undefined && opts.env?.AUTHD_STORE_BACKEND === undefined ? await storeEnv(dir, { fresh: opts.dir === undefined }) : {}
  let config = testConfig(dir, { ...onDir, ...opts.env }, { dev: opts.dev })
  const ownCost = Object.keys(opts.env ?? {}).some((k) => /^AUTHD_PASSWORDS_(MEMORY_KIB|TIME_COST|PARALLELISM)$/.test(k))
  if ((opts.argon2 ?? 'light') === 'light' && !ownCost) config = { ...config, passwords: { ...config.passwords, ...LIGHT_ARGON2 } }
  const logs = captureLogs()
  const logger = createLogger({ level: config.log.level, destination: logs.stream })
  const services = await createServices(config, { ...opts, logger, processMetrics: false })
  t.teardown(() => services.close())
  return { ...services, logs, dir }
}

export interface TestServer extends TestApp {
  url: string
  port: number
}

/** The app on a real socket, 127.0.0.1, port 0 */
export async function startServer(t: T, opts: Parameters<typeof buildApp>[1] = {}): Promise<TestServer> {
  const app = await buildApp(t, opts)
  const running = await listen(app, '127.0.0.1', 0)
  t.teardown(() => running.stop(1000))
  return { ...app, url: running.url, port: running.port }
}

/** Puts a user straight into the store (real argon2 hash at the configured parameters) */
export async function addUser(app: Services, email: string, password: string, extra: Partial<UserRecord> = {}): Promise<UserRecord> {
  const now = Date.now()
  const user: UserRecord = {
    id: newUserId(),
    email,
    passwordHash: await app.hasher.hash(password),
    createdAt: now,
    updatedAt: now,
    disabled: false,
    ...extra,
  }
  if (!(await app.store.createUser(user))) throw new Error(`user ${email} exists`)
  return user
}

export interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: any
  text: string
}

/**
 * Where call() sends a request: a URL, over a real socket (undici); or an app, injected into its
 * handler (light-my-request), for a test whose subject is the route and not the socket.
 */
export type Target = string | Pick<Services, 'handler'>

/**
 * One HTTP request; JSON bodies are sent with the JSON content type. Injected, the request is the
 * one undici sends (no user-agent unless given, the client at 127.0.0.1 unless `remoteAddress`
 * says another peer) and the reply's headers are the ones the socket would carry (bar the
 * connection's keep-alive).
 */
export async function call(
  target: Target,
  method: string,
  path: string,
  opts: { json?: unknown; body?: string | Buffer; headers?: Record<string, string>; remoteAddress?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers }
  let body: string | Buffer | undefined = opts.body
  if (opts.json !== undefined) {
    body = JSON.stringify(opts.json)
    headers['content-type'] ??= 'application/json'
  }
  let status: number
  let replyHeaders: Reply['headers']
  let text: string
  if (typeof target === 'string') {
    if (opts.remoteAddress !== undefined) throw new Error('call: remoteAddress is for injected requests (a real socket has its own peer)')
    const { request } = await import('undici')
    const res = await request(target + path, { method: method as 'GET', headers, body })
    status = res.statusCode
    replyHeaders = res.headers
    text = await res.body.text()
  } else {
    const res = await inject(asFromUndici(target.handler), {
      method: method as 'GET',
      url: path,
      headers: { 'user-agent': undefined, ...headers },
      payload: body,
      ...(opts.remoteAddress !== undefined && { remoteAddress: opts.remoteAddress }),
    })
    status = res.statusCode
    replyHeaders = wireHeaders(res)
    text = res.payload
  }
  let parsed: unknown = undefined
  try {
    parsed = JSON.parse(text)
  } catch {
    parsed = undefined
  }
  return { status, headers: replyHeaders, body: parsed, text }
}

/** light-my-request always names a user agent: a header left undefined is dropped, as undici sends none */
function asFromUndici(handler: Services['handler']): Services['handler'] {
  return (req, res) => {
    if (req.headers['user-agent'] === undefined) {
      delete req.headers['user-agent']
      const raw = req.rawHeaders
      for (let i = 0; i < raw.length; i += 2) {
        if (raw[i + 1] === undefined) {
          raw.splice(i, 2)
          i -= 2
        }
      }
    }
    return handler(req, res)
  }
}

/**
 * The reply's headers as a client reads them off the socket (undici): a header sent once is a
 * string, one sent several times an array (test/helpers/call.test.ts holds the two to each other).
 */
function wireHeaders(res: Response): Reply['headers'] {
  const out: Reply['headers'] = {}
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue
    out[name] = Array.isArray(value) ? (value.length === 1 ? String(value[0]) : value.map(String)) : String(value)
  }
  return out
}

/** A minimal cookie jar for the refresh cookie: remembers the last value set (or cleared) */
export class CookieJar {
  value: string | undefined
  lastSetCookie: string | undefined
  constructor(readonly name: string) {}
  header(): Record<string, string> {
    return this.value === undefined ? {} : { cookie: `${this.name}=${this.value}` }
  }
  take(reply: Reply): void {
    const sc = reply.headers['set-cookie']
    const list = sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]
    for (const c of list) {
      if (!c.startsWith(`${this.name}=`)) continue
      this.lastSetCookie = c
      const value = c.slice(this.name.length + 1).split(';')[0]!
      this.value = /Max-Age=0/i.test(c) || value === '' ? undefined : value
    }
  }
}
