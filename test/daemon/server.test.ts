/**
 * The listening server (src/daemon/server.ts), in process on real sockets at 127.0.0.1 port 0:
 * its URL and the port the handler is built with, a handler that cannot be built or a port in
 * use, malformed HTTP and oversized headers answered by the server itself (400, 431), the
 * slow-client limits within the 15 s promised, and stop(): stop accepting, answer what is in
 * flight, close idle keep-alive connections at once, cut the rest at the grace period, close the
 * store. The Unix socket is unix-socket.test.ts's, the slow clients' real timing
 * slow-client.test.ts's, the daemon's SIGTERM lifecycle.test.ts's.
 */
import { connect, createServer as createNetServer, type Socket } from 'node:net'
import type { IncomingMessage, ServerResponse } from 'node:http'
import t from 'tap'
import { closeStalledSockets, listen, listenFailure, STALLED_SOCKET_MS, type RunningServer } from '../../src/daemon/server.js'
import { exitCodeOf } from '../../src/exit-codes.js'
import { createServer } from 'node:http'
import { MAX_HEADER_LINES } from '../../src/http/app.js'
import { buildApp, call } from '../helpers/app.js'
import { rawRequest } from '../helpers/raw.js'

const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms).unref())])

const refused = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = connect(port, '127.0.0.1')
    s.once('connect', () => {
      s.destroy()
      resolve(false)
    })
    s.once('error', () => resolve(true))
  })

/** a keep-alive connection: sends `request`, resolves with it once the first answer is in */
function open(port: number, request: string): Promise<{ socket: Socket; text: () => string; closed: Promise<void>; answered: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    let onAnswer: () => void = () => {}
    const answered = new Promise<void>((r) => (onAnswer = r))
    const closed = new Promise<void>((r) => socket.once('close', () => r()))
    socket.on('data', (c: Buffer) => {
      text += c.toString()
      if (/\r\n\r\n/.test(text)) onAnswer()
    })
    socket.on('error', () => undefined)
    socket.once('connect', () => {
      socket.write(request)
      resolve({ socket, text: () => text, closed, answered })
    })
    socket.once('error', reject)
  })
}

t.test('listens on the host and port given; port 0 picks one, the URL names it, the handler is built with it', async (t) => {
  const app = await buildApp(t)
  let builtFor: number | undefined
  const running = await listen(app, { host: '127.0.0.1', port: 0 }, (port) => {
    builtFor = port
    return app.handler
  })
  t.teardown(() => running.stop(1000))
  t.ok(running.port > 0, 'a port was chosen')
  t.equal(builtFor, running.port, 'the handler was built for the bound port')
  t.equal(running.url, `http://127.0.0.1:${running.port}`)
  t.equal(running.socket, null)
  t.equal((await call(running.url, 'GET', '/healthz')).status, 200)

  const plain = await listen(app, '127.0.0.1', 0)
  t.teardown(() => plain.stop(1000))
  t.not(plain.port, running.port)
  t.equal((await call(plain.url, 'GET', '/healthz')).status, 200, 'listen(services, host, port): services.handler')
})

/** why this machine cannot listen on ::1 (asked of node itself), or false */
async function noIpv6Loopback(): Promise<string | false> {
  const probe = createNetServer()
  return new Promise((resolve) => {
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(`no IPv6 loopback here (${err.code})`))
    probe.listen(0, '::1', () => probe.close(() => resolve(false)))
  })
}

t.test('an IPv6 address is bracketed in the URL', async (t) => {
  const missing = await noIpv6Loopback()
  if (missing !== false) return t.plan(0, missing)
  const app = await buildApp(t)
  // where node can listen on ::1, so must authd: any failure here is one
  const running: RunningServer = await listen(app, '::1', 0)
  t.teardown(() => running.stop(1000))
  t.equal(running.url, `http://[::1]:${running.port}`)
  t.equal((await call(running.url, 'GET', '/healthz')).status, 200)
})

t.test('a handler that cannot be built: listen rejects with its error, and nothing is left listening', async (t) => {
  const app = await buildApp(t)
  let port = 0
  await t.rejects(
    listen(app, { host: '127.0.0.1', port: 0 }, (p) => {
      port = p
      throw new Error('config: server.public_url is not valid')
    }),
    { message: 'config: server.public_url is not valid' },
  )
  t.ok(port > 0)
  t.ok(await refused(port), 'the port was let go')
})

t.test('a port in use is refused with EADDRINUSE', async (t) => {
  const app = await buildApp(t)
  const first = await listen(app, '127.0.0.1', 0)
  t.teardown(() => first.stop(1000))
  await t.rejects(listen(await buildApp(t), '127.0.0.1', first.port), { code: 'EADDRINUSE' })
  t.equal((await call(first.url, 'GET', '/healthz')).status, 200, 'the first keeps serving')
})

t.test('listenFailure: what authd start says of an address or socket it cannot listen on, a registered error (exit 1); anything else as it is', async (t) => {
  const errno = (code: string): Error => Object.assign(new Error(`listen ${code}`), { code })
  const address = { host: '127.0.0.1', port: 80 }
  const socket = { socket: '/run/authd/authd.sock' }
  for (const [at, code, message] of [
    [address, 'EADDRINUSE', 'cannot listen on 127.0.0.1:80: the address is already in use (set --port or server.port)'],
    [address, 'EACCES', 'cannot listen on 127.0.0.1:80: permission denied (ports below 1024 need privileges)'],
    [address, 'EADDRNOTAVAIL', 'cannot listen on 127.0.0.1:80: no such address on this machine'],
    [address, 'ENOTFOUND', 'cannot listen on 127.0.0.1:80: the host name does not resolve (set --host or server.host)'],
    [address, 'EAI_AGAIN', 'cannot listen on 127.0.0.1:80: the host name could not be resolved just now (set --host or server.host, or try again)'],
    [address, 'EINVAL', 'cannot listen on 127.0.0.1:80: not an address this machine can listen on (set --host or server.host)'],
    [socket, 'EADDRINUSE', 'cannot listen on /run/authd/authd.sock: another process is listening on that socket'],
    [socket, 'ENAMETOOLONG', 'cannot listen on /run/authd/authd.sock: a socket path is at most 107 bytes (server.socket)'],
    [socket, 'ENOTSOCK', 'cannot listen on /run/authd/authd.sock: the path exists and is not a socket (server.socket)'],
    [{ socket: '/' + 'authd.sock' }, 'EACCES', 'cannot listen on /authd.sock: permission denied (server.socket)'],
    // Linux's answer for a directory that is not there
    [{ socket: '/no-such-dir/authd.sock' }, 'EACCES', 'cannot listen on /no-such-dir/authd.sock: no such directory (server.socket)'],
    [socket, 'ENOENT', 'cannot listen on /run/authd/authd.sock: no such directory (server.socket)'],
  ] as const) {
    const e = listenFailure(errno(code), at)
    t.match(e, { name: 'AppError', code: 'LISTEN_FAILED', message }, `${code} on ${'socket' in at ? 'a socket' : 'host and port'}`)
    t.equal(exitCodeOf((e as { code: 'LISTEN_FAILED' }).code), 1)
  }
  // an errno with no advice (and a name Object has): the error itself, an unexpected one
  for (const [at, code] of [[address, 'ENOTSOCK'], [address, 'EMFILE'], [socket, 'toString']] as const) {
    const original = errno(code)
    t.equal(listenFailure(original, at), original, `${code}: as it is`)
  }
  t.equal(listenFailure('no error at all', address), 'no error at all')
})

t.test('malformed HTTP is answered 400 and headers over 16 KB 431, in the JSON envelope, without a stack', async (t) => {
  const app = await buildApp(t)
  const running = await listen(app, '127.0.0.1', 0)
  t.teardown(() => running.stop(1000))
  const noStack = /at \S+:\d+|Error|HPE_/
  for (const garbage of ['NOT HTTP AT ALL\r\n\r\n', 'GET /healthz HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n', 'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n', 'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n']) {
    const r = await rawRequest(running.port, [garbage])
    t.equal(r.status, 400, JSON.stringify(garbage))
    t.same(JSON.parse(r.body), { success: false, message: 'Bad request' })
    t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
    t.notMatch(r.raw, noStack)
    t.ok(r.closedByServer, 'and the connection closed')
  }
  const headers = (bytes: number): string => `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(bytes)}\r\nConnection: close\r\n\r\n`
  const big = await rawRequest(running.port, [headers(17 * 1024)])
  t.equal(big.status, 431)
  t.same(JSON.parse(big.body), { success: false, message: 'Request headers too large' })
  t.notMatch(big.raw, noStack)
  t.equal((await rawRequest(running.port, [headers(15 * 1024)])).status, 200, '15 KB of headers: served')
})

t.test('the slow-client limits close a socket within the 15 s promised, checked every second', async (t) => {
  const app = await buildApp(t)
  const { server, stop } = await listen(app, '127.0.0.1', 0)
  t.teardown(() => stop(1000))
  const check = 1000 // connectionsCheckingInterval: a timeout is noticed up to a second late
  t.ok(server.headersTimeout > 0 && server.headersTimeout + check <= 15_000, `headers within ${server.headersTimeout} ms`)
  t.ok(server.requestTimeout > 0 && server.requestTimeout + check <= 15_000, `the whole request within ${server.requestTimeout} ms`)
  t.ok(server.headersTimeout <= server.requestTimeout, 'the headers inside the request')
  t.ok(STALLED_SOCKET_MS > 0 && STALLED_SOCKET_MS + check <= 15_000, `a socket where nothing moves after ${STALLED_SOCKET_MS} ms`)
  t.equal(server.timeout, 0, "node's own socket timer is off (re-armed on every request): the stalled-socket sweep does its work")
  t.ok(server.keepAliveTimeout > 0 && server.keepAliveTimeout <= 15_000, `an idle keep-alive after ${server.keepAliveTimeout} ms`)
  t.equal(server.maxHeadersCount, MAX_HEADER_LINES + 1, 'one header line more than the app allows, so that it sees too many (431)')
})

t.test('stop: no new connections, the request in flight answered, an idle keep-alive closed at once, /readyz 503, the store closed', async (t) => {
  const app = await buildApp(t)
  let release: () => void = () => {}
  const held = new Promise<void>((r) => (release = r))
  let entered: () => void = () => {}
  const inHandler = new Promise<void>((r) => (entered = r))
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    if (req.url !== '/hold') return void app.handler(req, res)
    entered()
    void held.then(() => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '4' })
      res.end('done')
    })
  }
  const running = await listen(app, { host: '127.0.0.1', port: 0 }, () => handler)
  const idle = await open(running.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
  await within(idle.answered, 5000, 'the idle connection’s first answer')
  const busy = await open(running.port, 'GET /hold HTTP/1.1\r\nHost: x\r\n\r\n')
  await within(inHandler, 5000, 'the held request reaching the handler')

  const stopped = running.stop(60_000)
  t.equal(running.stop(), stopped, 'one stop, however often asked')
  await within(idle.closed, 5000, 'the idle keep-alive connection closing')
  t.ok(await refused(running.port), 'no new connections')
  t.equal((await call(app, 'GET', '/readyz')).status, 503, 'not ready while draining')
  t.notOk(busy.socket.destroyed, 'the request in flight is still open')

  release()
  await within(busy.closed, 3000, 'its connection closing once answered, not a keep-alive timeout (5 s) later')
  t.match(busy.text(), /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\ndone$/, 'answered in full first')
  await within(stopped, 5000, 'stop, well inside its grace period')
  await t.rejects(app.store.listUsers(), 'the store is closed')
})

t.test('stop: a request still running at the end of the grace period is cut, and stop resolves', async (t) => {
  const app = await buildApp(t)
  const running = await listen(app, { host: '127.0.0.1', port: 0 }, () => () => {}) // never answers
  const stuck = await open(running.port, 'GET /forever HTTP/1.1\r\nHost: x\r\n\r\n')
  await new Promise((r) => setImmediate(r))
  await within(running.stop(200), 5000, 'stop after a 200 ms grace period')
  await within(stuck.closed, 5000, 'the stuck connection closing')
  t.equal(stuck.text(), '', 'cut without an answer')
})

t.test('closeStalledSockets: a socket where no byte moves is closed; one that keeps moving is not; the sweep stops with the server', async (t) => {
  const big = Buffer.alloc(48 * 1024 * 1024, 120)
  const server = createServer((req, res) => {
    // /hang: never answered; /big: an answer far larger than the socket buffers
    if (req.url === '/big') res.end(big)
  })
  // the server's side of each connection, in the order they come, with when it closed
  const sides: Array<Promise<number>> = []
  server.on('connection', (s: Socket) => {
    const at = performance.now()
    sides.push(new Promise((r) => s.once('close', () => r(performance.now() - at))))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as { port: number }).port
  closeStalledSockets(server, 400, 100)
  let opened = 0
  const connected = async (): Promise<{ socket: Socket; closed: Promise<number> }> => {
    const socket = await new Promise<Socket>((resolve) => {
      const s = connect(port, '127.0.0.1', () => resolve(s))
      s.on('error', () => {})
    })
    while (sides.length === 0 || sides.length < opened + 1) await new Promise((r) => setTimeout(r, 5))
    return { socket, closed: sides[opened++]! }
  }

  // a whole request, then silence, with no answer coming
  const hang = await connected()
  hang.socket.write('GET /hang HTTP/1.1\r\nHost: x\r\n\r\n')
  // a request whose answer is never read
  const reader = await connected()
  reader.socket.pause()
  reader.socket.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n')
  // a header trickled a byte every 100 ms: never quiet for 400 ms
  const trickle = await connected()
  trickle.socket.write('GET /hang HTTP/1.1\r\nX-Slow: ')
  const drip = setInterval(() => trickle.socket.write('a'), 100)
  let trickleDone = false
  void trickle.closed.then(() => (trickleDone = true))

  const [h, r] = await within(Promise.all([hang.closed, reader.closed]), 5000, 'the stalled sockets closing')
  t.ok(h >= 300 && h < 2000, `the silent request closed after ${Math.round(h)} ms (400 ms of nothing, looked at every 100)`)
  t.ok(r < 3000, `the unread answer's socket closed after ${Math.round(r)} ms`)
  t.ok(reader.socket.bytesRead < big.length, 'its client had not read the answer')
  await new Promise((res) => setTimeout(res, 1200))
  t.notOk(trickleDone, 'the trickling socket is still open after 1.2 s: bytes kept moving')
  clearInterval(drip)
  const q = await within(trickle.closed, 3000, 'the trickle closing once it stops')
  t.ok(q > 1200, `closed only after it went quiet (${Math.round(q)} ms after it opened)`)
  for (const c of [hang, reader, trickle]) c.socket.destroy()
  await new Promise<void>((r) => server.close(() => r()))
  t.equal(server.listenerCount('close'), 0, "the sweep's stop ran with the server's close")
})

t.test('closeStalledSockets: a process held still (a GC pause, a VM without CPU) is one quiet look, not the whole pause of silence', async (t) => {
  const server = createServer(() => {})
  const sides: Socket[] = []
  server.on('connection', (s: Socket) => sides.push(s))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const port = (server.address() as { port: number }).port
  // the sweep's clock, which the test moves on by a pause the looks did not see
  let held = 0
  closeStalledSockets(server, 1000, 100, () => performance.now() + held)
  const client = await new Promise<Socket>((resolve) => {
    const s = connect(port, '127.0.0.1', () => resolve(s))
    s.on('error', () => {})
  })
  t.teardown(() => client.destroy())
  client.write('GET /hang HTTP/1.1\r\nX-Slow: ')
  let dripping = true
  const drip = setInterval(() => dripping && client.write('a'), 20)
  t.teardown(() => clearInterval(drip))
  await new Promise((r) => setTimeout(r, 300))
  // a pause of 2 s as the process resumes from it: the looks after it find nothing read (the
  // bytes that came meanwhile are not read yet: here the client holds them back a moment), then
  // the client's bytes move again
  dripping = false
  await new Promise((r) => setTimeout(r, 150))
  held = 2000
  await new Promise((r) => setTimeout(r, 150))
  dripping = true
  await new Promise((r) => setTimeout(r, 300))
  t.equal(sides.length, 1)
  t.notOk(sides[0]!.destroyed, 'the socket that kept moving is still open after the pause')
  clearInterval(drip)
  await within(new Promise((r) => sides[0]!.once('close', r)), 5000, 'the socket closing once it went quiet')
})
