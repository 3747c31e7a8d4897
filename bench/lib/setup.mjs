/**
 * What the bench runs against: a data directory filled through authd's own modules (users,
 * sessions, access tokens signed with the store's key), and the real `authd start` on it.
 */
import { spawn } from 'node:child_process'
import { get } from 'node:http'
import { createServer as createNetServer } from 'node:net'
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { pinned, run, sleep } from './proc.mjs'

const dist = (root, path) => import(pathToFileURL(join(root, 'dist', path)).href)

export const PASSWORD = 'correct horse battery staple 42'
/** accounts the login rows spread over: bench-login-<n>@bench.test */
export const LOGIN_USERS = 64
export const loginEmail = (n) => `bench-login-${n}@bench.test`
/** the store's other accounts, user-00000@bench.test …, each with a share of the sessions */
export const userEmail = (n) => `user-${String(n).padStart(5, '0')}@bench.test`

/**
 * Fills `dir`: `users` users, `tokens` sessions spread over them with one access token each, and
 * the login users. Writes tokens.txt, public-key.pem, hash.txt into `work`.
 */
export async function prepare({ root, dir, work, env, users, tokens }) {
  const { loadConfig } = await dist(root, 'config/load.js')
  const { createServices } = await dist(root, 'daemon/services.js')
  const { createLogger } = await dist(root, 'daemon/logger.js')
  const { createAccessTokens } = await dist(root, 'core/access-tokens.js')
  const { newUserId } = await dist(root, 'core/users.js')
  const { newSessionId, newRefreshToken, hashToken, familyHashOf } = await dist(root, 'core/sessions.js')

  const { config } = loadConfig({ flags: { data: dir }, env, cwd: dir })
  const s = await createServices(config, { logger: createLogger({ level: 'silent' }), processMetrics: false })
  try {
    const now = Date.now()
    // one real hash at the configured parameters, shared by every account
    const passwordHash = await s.hasher.hash(PASSWORD)
    const mk = (email) => ({ id: newUserId(), email, passwordHash, createdAt: now, updatedAt: now, disabled: false })
    const people = Array.from({ length: users }, (_, i) => mk(userEmail(i)))
    const logins = Array.from({ length: LOGIN_USERS }, (_, i) => mk(loginEmail(i)))
    await Promise.all([...logins, ...people].map((u) => s.store.createUser(u)))

    const t = config.tokens
    const signer = createAccessTokens({ keyring: s.keyring, now: Date.now, issuer: t.issuer, audience: t.audience, ttlMs: t.accessTtlMs, clockToleranceMs: t.clockToleranceMs })
    const lines = []
    const writes = []
    for (let i = 0; i < tokens; i++) {
      const user = people[i % people.length]
      const id = newSessionId()
      const refreshToken = newRefreshToken()
      writes.push(
        s.store.createSession({
          id,
          userId: user.id,
          createdAt: now,
          lastUsedAt: now,
          expiresAt: now + config.sessions.absoluteTtlMs,
          ip: '10.0.0.1',
          userAgent: 'authd-bench',
          refreshHash: hashToken(refreshToken),
          previousHash: null,
          rotatedAt: null,
          generation: 0,
          familyHash: familyHashOf(refreshToken),
          amr: ['pwd'],
        }),
      )
      lines.push(signer.sign({ sub: user.id, email: user.email, sid: id }).token)
    }
    await Promise.all(writes)
    await s.store.flushed()
    const active = (await s.store.listKeys()).find((k) => k.state === 'active')
    writeFileSync(join(work, 'tokens.txt'), lines.join('\n') + '\n')
    writeFileSync(join(work, 'public-key.pem'), active.publicKeyPem)
    writeFileSync(join(work, 'hash.txt'), passwordHash + '\n')
    return {
      tokensFile: join(work, 'tokens.txt'),
      publicKeyFile: join(work, 'public-key.pem'),
      hashFile: join(work, 'hash.txt'),
      oneToken: lines[0],
      issuer: t.issuer,
      audience: t.audience,
      algorithm: t.algorithm,
      cookieName: config.cookie.name,
      hash: { memoryKib: config.passwords.memoryKib, timeCost: config.passwords.timeCost, parallelism: config.passwords.parallelism },
    }
  } finally {
    await s.close()
  }
}

/**
 * The Environment= lines of the shipped systemd unit (config/authd.service): the bench runs authd
 * with them, as it is deployed (they bound its memory).
 */
export function unitEnvironment(root) {
  const env = {}
  for (const line of readFileSync(join(root, 'config/authd.service'), 'utf8').split('\n')) {
    const m = /^Environment=([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line.trim())
    if (m !== null) env[m[1]] = m[2]
  }
  return env
}

/**
 * The store in `dir` (LMDB) copied into the PostgreSQL database at `url`, the way an operator
 * moves from one VM to several: the real `authctl export`, then `authctl import` with
 * `store.backend = "postgres"`. The same users, sessions and keys: the tokens minted for the
 * LMDB store verify against the PostgreSQL one. Resolves to the environment that points authd
 * and authctl at the database.
 */
export async function moveToPg({ root, dir, work, env, url, poolSize }) {
  const file = join(work, 'store.export')
  const authctl = (args, e) => run([process.execPath, join(root, 'bin/authctl.js'), ...args], { cwd: work, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...e } })
  await authctl(['--data', dir, 'export', file], env)
  const pgEnv = { ...env, AUTHD_STORE_BACKEND: 'postgres', AUTHD_STORE_URL: url, AUTHD_STORE_POOL_SIZE: String(poolSize) }
  // store.path is not used with PostgreSQL; the daemon still runs in it
  mkdirSync(join(work, 'pg-data'), { mode: 0o700 })
  await authctl(['--data', join(work, 'pg-data'), 'import', file], pgEnv)
  return pgEnv
}

/**
 * `n` sessions made by logging in over HTTP as `emailOf(0 … n-1)` (each from its own
 * X-Forwarded-For address, `addressOf(i)`), `concurrency` at a time: their refresh cookies'
 * values, for the refresh row.
 */
export async function loginCookies({ url, n, emailOf, addressOf, password, cookieName, concurrency = 4 }) {
  const out = new Array(n)
  let next = 0
  const worker = async () => {
    while (next < n) {
      const i = next++
      const res = await fetch(`${url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': addressOf(i) },
        body: JSON.stringify({ email: emailOf(i), password }),
      })
      await res.arrayBuffer()
      const cookie = res.headers.getSetCookie().find((c) => c.startsWith(`${cookieName}=`))
      if (res.status !== 200 || cookie === undefined) throw new Error(`login as ${emailOf(i)} answered ${res.status} without a refresh cookie`)
      out[i] = cookie.slice(cookieName.length + 1).split(';')[0]
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return out
}

/**
 * Spends 127.0.0.1's login allowance (login.per_ip) on the daemon at `url` with malformed logins
 * (400: counted by that limit alone, no hash), until one is refused: a 429 row then meets the
 * limiter from its first request, however slowly a warm-up's real logins were hashed.
 */
export async function spendAllowance(url) {
  for (let i = 0; i < 500; i++) {
    const res = await fetch(`${url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    await res.arrayBuffer()
    if (res.status === 429) return
  }
  throw new Error(`${url} did not refuse 127.0.0.1's logins after 500 of them`)
}

/** A port free right now on 127.0.0.1 */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createNetServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

/**
 * Starts `authd start` on `dir` and a free port, pinned to `cpu`, its log going to `logFile`.
 * Resolves once /readyz answers 200 (whatever the log level), with the url, the pid, how long
 * that took from the spawn, and stop().
 */
export async function startDaemon({ root, dir, env, cpu, logFile, nodeArgs = [], timeoutMs = 15_000 }) {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const fd = openSync(logFile, 'w')
  const started = performance.now()
  const argv = pinned(cpu, [process.execPath, ...nodeArgs, join(root, 'bin/authd.js'), 'start', '--data', dir, '--port', String(port)])
  const proc = spawn(argv[0], argv.slice(1), { cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['ignore', fd, fd] })
  closeSync(fd)
  let exited = false
  // a bench that fails part-way leaves no daemon behind
  const orphan = () => proc.kill('SIGKILL')
  process.on('exit', orphan)
  proc.once('exit', () => {
    exited = true
    process.off('exit', orphan)
  })
  const stop = () =>
    new Promise((resolve) => {
      if (exited) return resolve()
      proc.once('exit', () => resolve())
      proc.kill('SIGTERM')
    })
  const deadline = started + timeoutMs
  while ((await status(`${url}/readyz`)) !== 200) {
    if (exited) throw new Error(`authd exited while starting:\n${readFileSync(logFile, 'utf8').slice(-2000)}`)
    if (performance.now() > deadline) {
      proc.kill('SIGKILL')
      throw new Error(`authd did not become ready:\n${readFileSync(logFile, 'utf8').slice(-2000)}`)
    }
    await sleep(2)
  }
  return { url, pid: proc.pid, readyMs: performance.now() - started, stop }
}

/** Starts the bare node:http baseline pinned to `cpu` (with `verifyKeyFile`, the bare + ES256 reference) */
export async function startBare({ root, cpu, verifyKeyFile }) {
  const args = verifyKeyFile === undefined ? [] : ['--verify', verifyKeyFile]
  const argv = pinned(cpu, [process.execPath, join(root, 'bench/bare-server.mjs'), ...args])
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] })
  const orphan = () => proc.kill('SIGKILL')
  process.on('exit', orphan)
  proc.once('exit', () => process.off('exit', orphan))
  const port = await new Promise((resolve, reject) => {
    let out = ''
    proc.stdout.on('data', (c) => {
      out += c
      const m = /"port":(\d+)/.exec(out)
      if (m !== null) resolve(Number(m[1]))
    })
    proc.once('exit', () => reject(new Error('bare server exited')))
  })
  return {
    url: `http://127.0.0.1:${port}`,
    pid: proc.pid,
    stop: () =>
      new Promise((resolve) => {
        proc.once('exit', () => resolve())
        proc.kill('SIGTERM')
      }),
  }
}

/** The status of a GET (node:http, so nothing heavy is loaded on first use); 0 if it failed */
export function status(url) {
  return new Promise((resolve) => {
    const req = get(url, { agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', () => resolve(0))
  })
}

/** authd's Prometheus counters, as { 'authd_me_total{outcome="success"}': n, … } */
export async function scrape(url) {
  const text = await (await fetch(`${url}/metrics`)).text()
  const out = {}
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue
    const sp = line.lastIndexOf(' ')
    out[line.slice(0, sp)] = Number(line.slice(sp + 1))
  }
  return out
}
