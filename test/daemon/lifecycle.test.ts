/**
 * The real daemon (`authd start`, built, in a child process): ready when it listens, and on
 * SIGTERM it stops accepting, lets the request in flight finish, and exits 0.
 */
import { spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { AUTHD_BIN, call, storeEnv } from '../helpers/app.js'
import { spawnDaemon, type Daemon } from '../helpers/daemon.js'

const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))])

/** resolves once `ready()` holds, looking every 20 ms */
const until = async (ready: () => boolean): Promise<void> => {
  while (!ready()) await new Promise((r) => setTimeout(r, 20))
}

const exited = (d: Daemon): Promise<number | null> =>
  d.proc.exitCode !== null ? Promise.resolve(d.proc.exitCode) : new Promise((resolve) => d.proc.once('exit', (code) => resolve(code)))

const refused = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = connect(port, '127.0.0.1')
    s.once('connect', () => {
      s.destroy()
      resolve(false)
    })
    s.once('error', () => resolve(true))
  })

t.test('is ready and healthy once it listens, and logs the chosen port', async (t) => {
  const d = await spawnDaemon(t, t.testdir())
  const ready = await call(d.url, 'GET', '/readyz')
  t.equal(ready.status, 200)
  t.equal(ready.body.success, true)
  t.same((await call(d.url, 'GET', '/healthz')).body, { success: true, data: { status: 'ok' } })
  const line = d.output().split('\n').find((l) => l.includes('"event":"listening"'))
  t.ok(line, 'a JSON listening line')
  t.equal(JSON.parse(line!).port, d.port)
  t.equal(await within(d.stop(), 15_000, 'exit after SIGTERM'), 0)
})

t.test('on SIGTERM drains the request in flight, refuses new connections, and exits 0', async (t) => {
  const d = await spawnDaemon(t, t.testdir())
  const body = JSON.stringify({ email: 'nobody@example.com', password: 'whatever it is' })
  const socket = connect(d.port, '127.0.0.1')
  let answer = ''
  socket.on('data', (c: Buffer) => (answer += c.toString()))
  socket.on('error', () => undefined)
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  // the request has begun: headers and half the body. The 100 Continue says the daemon has read
  // the headers and handed the request on (it is in flight, not a connection yet to speak)
  socket.write(`POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n${body.slice(0, 10)}`)
  await within(until(() => answer.startsWith('HTTP/1.1 100 Continue\r\n\r\n')), 10_000, 'the 100 Continue')
  answer = ''
  const code = exited(d)
  d.proc.kill('SIGTERM')
  // logged once the listener is closed (the same step), whenever the daemon gets to it
  await within(until(() => d.output().includes('"event":"stopping"')), 10_000, 'the stopping line')
  t.equal(d.proc.exitCode, null, 'still running while a request is in flight')
  t.ok(await refused(d.port), 'no longer accepting connections')
  socket.write(body.slice(10))
  const status = await within(
    new Promise<number>((resolve) => {
      const check = (): void => {
        const m = /^HTTP\/1\.1 (\d{3})/.exec(answer)
        if (m !== null && answer.includes('\r\n\r\n{')) resolve(Number(m[1]))
      }
      socket.on('data', check)
      check()
    }),
    10_000,
    'the in-flight answer',
  )
  t.equal(status, 401, 'the in-flight login was answered')
  t.match(answer, /"Invalid email or password"/)
  const answeredAt = performance.now()
  t.equal(await within(code, 15_000, 'exit after draining'), 0, 'exit code 0')
  const lingered = performance.now() - answeredAt
  t.ok(lingered < 2500, `exits once the drained connection is done, not a keep-alive timeout later (${Math.round(lingered)} ms)`)
  t.match(d.output(), /"event":"stopping"/)
  t.match(d.output(), /"event":"stopped"/)
  socket.destroy()
})

t.test('exits 0 promptly on SIGTERM with an idle keep-alive connection open', async (t) => {
  const d = await spawnDaemon(t, t.testdir())
  const socket = connect(d.port, '127.0.0.1')
  socket.on('error', () => undefined)
  let answered = false
  socket.on('data', () => (answered = true))
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
  for (let i = 0; i < 100 && !answered; i++) await new Promise((r) => setTimeout(r, 20))
  t.ok(answered)
  const started = performance.now()
  const code = await within(d.stop(), 15_000, 'exit after SIGTERM')
  t.equal(code, 0)
  t.ok(performance.now() - started < 4000, 'an idle connection does not hold the shutdown')
  socket.destroy()
})

// A plain node process watches for the line and signals at once, as a supervisor does: from
// this test's own process (tap's loaders on its event loop) the signal would come later than that.
// The window is narrow (authd loaded jsonwebtoken, some 20-30 ms, before it heard signals): run by
// itself, the watcher saw the code before the fix killed by the signal in 3 runs of 3; under the
// test runner, with the cores busy, the signal can come after it and the old code pass.

const WATCH = `
const { spawn } = require('node:child_process')
const [bin, dir] = process.argv.slice(1)
const proc = spawn(process.execPath, [bin, 'start', '--data', dir, '--port', '0'], { cwd: dir, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] })
let out = ''
proc.stdout.on('data', (c) => {
  const first = !out.includes('authd listening')
  out += c
  if (first && out.includes('authd listening')) proc.kill('SIGTERM')
})
proc.stderr.on('data', (c) => (out += c))
proc.once('exit', (code, signal) => process.stdout.write(JSON.stringify({ code, signal, stopped: out.includes('"event":"stopped"') })))
`

t.test('a SIGTERM sent the moment the listening line appears drains and exits 0, as any other', async (t) => {
  for (let i = 0; i < 3; i++) {
    const dir = join(t.testdir(), `d${i}`)
    mkdirSync(dir, { mode: 0o700 })
    const watcher = spawn(process.execPath, ['-e', WATCH, AUTHD_BIN, dir], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...(await storeEnv(dir)) },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let report = ''
    watcher.stdout.on('data', (c: Buffer) => (report += c.toString()))
    await within(new Promise((resolve) => watcher.once('exit', resolve)), 15_000, 'the watcher')
    t.same(JSON.parse(report), { code: 0, signal: null, stopped: true }, `run ${i}: exit 0 after draining, not killed by the signal`)
  }
})

t.test('SIGHUP (a terminal hanging up) drains and exits 0 as SIGTERM does', async (t) => {
  const d = await spawnDaemon(t, t.testdir())
  const code = exited(d)
  d.proc.kill('SIGHUP')
  t.equal(await within(code, 15_000, 'exit after SIGHUP'), 0)
  t.match(d.output(), /"event":"stopping","signal":"SIGHUP"/)
  t.match(d.output(), /"event":"stopped"/)
})
