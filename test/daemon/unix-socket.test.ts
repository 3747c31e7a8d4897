/**
 * server.socket: authd listens on a Unix socket instead of host and port, so that only the
 * processes allowed to open the file (mode 0660: the proxy's group) reach it, and X-Forwarded-For
 * arriving over it is believed (README, Deploy on a VM).
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { buildApp } from '../helpers/app.js'
import { spawnDaemon } from '../helpers/daemon.js'
import { listen } from '../../src/daemon/server.js'

interface Answer {
  status: number
  body: any
  headers: Record<string, unknown>
}

function over(socketPath: string, method: string, path: string, opts: { json?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = opts.json === undefined ? undefined : JSON.stringify(opts.json)
    const req = request({ socketPath, method, path, agent: false, timeout: 10_000, headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...opts.headers } })
    req.on('response', (res) => {
      let text = ''
      res.on('data', (c: Buffer) => (text += c.toString()))
      res.on('end', () => resolve({ status: res.statusCode!, body: text === '' ? undefined : JSON.parse(text), headers: res.headers }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** a short directory: a socket path is at most 107 bytes, and tap's test directories are longer */
function shortDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'authd-sock-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 30))

t.test('listens on the socket, created 0660 whatever the umask, and removes it at stop', async (t) => {
  const app = await buildApp(t)
  const path = join(shortDir(t), 'authd.sock')
  const umask = process.umask(0o000)
  let running
  try {
    running = await listen(app, { socket: path })
  } finally {
    process.umask(umask)
  }
  t.teardown(() => running!.stop(1000))
  t.ok(lstatSync(path).isSocket())
  t.equal(lstatSync(path).mode & 0o777, 0o660, 'mode 0660')
  t.equal(running.url, `unix:${path}`)
  t.same((await over(path, 'GET', '/readyz')).body, { success: true, data: { status: 'ready' } })
  t.equal((await over(path, 'GET', '/healthz')).status, 200)
  await running.stop(1000)
  t.notOk(existsSync(path), 'the socket file is gone after the stop')
})

t.test('X-Forwarded-For over the socket is believed: the right-most entry that is not a trusted proxy', async (t) => {
  const path = join(shortDir(t), 'authd.sock')
  const app = await buildApp(t, { env: { AUTHD_SERVER_SOCKET: path, AUTHD_SERVER_TRUST_PROXY: '10.0.0.0/8' } })
  const running = await listen(app, { socket: path })
  t.teardown(() => running.stop(1000))
  const loginIp = async (xff: string | undefined): Promise<unknown> => {
    const before = app.logs.lines.length
    const r = await over(path, 'POST', '/api/auth/login', { json: { email: 'nobody@example.com', password: 'not the password' }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } })
    t.equal(r.status, 401)
    await settle()
    return app.logs.lines.slice(before).find((l) => l.event === 'login')?.ip
  }
  t.equal(await loginIp('198.51.100.66, 203.0.113.7'), '203.0.113.7', 'what the proxy appended, not what the client made up')
  t.equal(await loginIp('203.0.113.7, 10.1.2.3'), '203.0.113.7', 'past a trusted proxy in the chain')
  t.equal(await loginIp('2001:db8::1'), '2001:db8::1')
  t.equal(await loginIp(undefined), '127.0.0.1', 'without the header: a local process, counted as 127.0.0.1')
  t.equal(await loginIp('not-an-address'), '127.0.0.1', 'an unreadable header is not believed')
})

t.test('a stale socket file from a crash is replaced; a live one or another file is left alone', async (t) => {
  const app = await buildApp(t)
  const path = join(shortDir(t), 'stale.sock')
  // a process that dies (kill -9) while listening leaves its socket file behind
  const crashed = spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`])
  t.equal(crashed.signal, 'SIGKILL')
  t.ok(lstatSync(path).isSocket(), 'the stale socket file is there')
  const running = await listen(app, { socket: path })
  t.teardown(() => running.stop(1000))
  t.equal((await over(path, 'GET', '/healthz')).status, 200, 'replaced by a live one')

  const second = await buildApp(t)
  await t.rejects(listen(second, { socket: path }), { code: 'EADDRINUSE' }, 'a socket a running authd answers on is not taken over')
  t.equal((await over(path, 'GET', '/healthz')).status, 200, 'and keeps answering')
  const file = join(dirname(path), 'not-a-socket')
  writeFileSync(file, 'keep me')
  await t.rejects(listen(second, { socket: file }), { code: 'ENOTSOCK' })
  const long = join(app.dir, `${'x'.repeat(120)}.sock`)
  await t.rejects(listen(second, { socket: long }), { code: 'ENAMETOOLONG' }, 'a path longer than a socket takes is refused, not bound cut short')
  t.notOk(existsSync(long.slice(0, 107)), 'nothing bound at a shortened path')
  t.equal(readFileSync(file, 'utf8'), 'keep me', 'a file that is not a socket is never removed')
})

t.test('a socket whose listener is alive but held still (its queue full: EAGAIN) is in use, not stale: not taken over', async (t) => {
  const path = join(shortDir(t), 'busy.sock')
  // a listener with a queue of one, then held still (SIGSTOP), its queue filled
  const holder = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, 1, () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'ignore'] })
  t.teardown(() => {
    holder.kill('SIGKILL')
  })
  await new Promise<void>((r) => holder.stdout.once('data', () => r()))
  const inode = lstatSync(path).ino
  holder.kill('SIGSTOP')
  const held: Socket[] = []
  t.teardown(() => held.forEach((c) => c.destroy()))
  let again = false
  for (let i = 0; i < 64 && !again; i++) {
    again = await new Promise<boolean>((resolve) => {
      const c = connect(path)
      held.push(c)
      c.once('connect', () => resolve(false))
      c.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EAGAIN'))
    })
  }
  t.ok(again, 'the queue is full: a connection gets EAGAIN')
  const app = await buildApp(t)
  await t.rejects(listen(app, { socket: path }), { code: 'EADDRINUSE' })
  t.equal(lstatSync(path).ino, inode, "the held listener's socket file is still there, not replaced")
  holder.kill('SIGCONT')
})

t.test('authd start with server.socket: the log line names the socket, readyz answers, SIGTERM removes it', async (t) => {
  const dir = t.testdir()
  const path = join(shortDir(t), 'run.sock')
  const d = await spawnDaemon(t, join(dir, 'data'), { socket: path, cwd: dir })
  const out = d.output()
  t.match(out, /"event":"listening"/, out)
  const line = JSON.parse(out.split('\n').find((l) => l.includes('"event":"listening"'))!) as Record<string, unknown>
  t.equal(line.msg, `authd listening on unix:${path}`)
  t.equal(line.socket, path)
  t.equal(lstatSync(path).mode & 0o777, 0o660)
  t.same((await over(path, 'GET', '/readyz')).body, { success: true, data: { status: 'ready' } })
  t.equal(await d.stop(), 0)
  t.notOk(existsSync(path), 'removed at shutdown')
})
