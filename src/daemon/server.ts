/** The listening server: the only place that calls listen(). */
import { chmodSync, existsSync, lstatSync, unlinkSync } from 'node:fs'
import { dirname } from 'node:path'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { MAX_SOCKET_PATH } from '../config/validate.js'
import { AppError } from '../errors.js'
import { MAX_HEADER_LINES, type Handler } from '../http/app.js'
import { rawAnswer } from '../http/reply.js'
import type { Services } from './services.js'

export interface RunningServer {
  server: Server
  /** e.g. http://127.0.0.1:8080, or unix:/run/authd/authd.sock */
  url: string
  /** the TCP port; 0 on a Unix socket */
  port: number
  /** the Unix socket listened on, or null */
  socket: string | null
  /** stop accepting, drain in-flight requests (at most `graceMs`), close the store */
  stop(graceMs?: number): Promise<void>
}

// Slow-client protection: a half-open socket (slowloris headers, a trickled body, an idle
// keep-alive) is closed within 15 s of opening. Node checks these every second, so the request
// timeout sits 2 s under that promise (a 16 KB body in 12 s is 1.4 KB/s: any real client).
const HEADERS_TIMEOUT_MS = 10_000
const REQUEST_TIMEOUT_MS = 12_000
const KEEP_ALIVE_TIMEOUT_MS = 5_000
/** a socket on which no byte has moved for this long is closed (checked every second) */
export const STALLED_SOCKET_MS = 14_000

/** Where to listen: host and port, or a Unix socket path (server.socket) instead. */
export type ListenAt = { host: string; port: number } | { socket: string }

/**
 * Binds, then attaches the request handler: `handlerFor(port)` with the port bound (0 on a Unix
 * socket), so that an app whose config names its own URL is built once that URL is known (port 0:
 * daemon/main.ts); by default `services.handler`. It is attached before the first request can
 * be read, in the same turn as the bind.
 */
export async function listen(services: Services, host: string, port: number): Promise<RunningServer>
export async function listen(services: Services, at: ListenAt, handlerFor?: (port: number) => Handler): Promise<RunningServer>
export async function listen(services: Services, hostOrAt: string | ListenAt, portOrHandler?: number | ((port: number) => Handler)): Promise<RunningServer> {
  const at: ListenAt = typeof hostOrAt === 'string' ? { host: hostOrAt, port: typeof portOrHandler === 'number' ? portOrHandler : 0 } : hostOrAt
  const handlerFor = typeof portOrHandler === 'function' ? portOrHandler : () => services.handler
  const server = createServer({
    headersTimeout: HEADERS_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: 1_000,
    maxHeaderSize: 16 * 1024,
    // an HTTP/1.1 request without Host is refused by the app (app.ts), with the registry's 400
    // like the other malformed requests, not by node with an empty body of its own
    requireHostHeader: false,
  })
  // A socket that sends nothing at all, or a response nobody reads, falls under none of node's
  // request timeouts: closeStalledSockets ends it within 15 s. (node's own `server.timeout` would
  // too, but re-arms a timer on every request and refreshes it on every read and write.)
  const stopSweep = closeStalledSockets(server, STALLED_SOCKET_MS)
  // node drops the header lines past maxHeadersCount without a word (an Origin or X-Forwarded-For
  // after 100 others would go unread): it keeps one more than the app allows, so that the app sees
  // there were too many and refuses the request whole with 431 (app.ts)
  server.maxHeadersCount = MAX_HEADER_LINES + 1
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // malformed HTTP, headers too large, a request not read in time: the registry's 400, 431 or
    // 408 without a stack (or just close, when nobody is there to read it)
    if (!socket.writable || err.code === 'ECONNRESET') return socket.destroy()
    refuseAfterPending(socket, rawAnswer(err.code === 'HPE_HEADER_OVERFLOW' ? 'HEADERS_TOO_LARGE' : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'REQUEST_TIMEOUT' : 'BAD_REQUEST'))
  })
  // CONNECT asks for a tunnel, which authd is not: 400 (node would close the socket unanswered)
  server.on('connect', (_req: IncomingMessage, socket: Socket) => {
    if (socket.writable) socket.end(rawAnswer('BAD_REQUEST'))
    else socket.destroy()
  })
  server.on('connection', (socket: Socket) => {
    // the peer's address, read (and kept by node) while the socket is open: a request whose
    // handler first asks for it after its client hung up is still counted and audited under it
    void socket.remoteAddress
  })
  if ('socket' in at) {
    // sun_path holds 108 bytes with its NUL: libuv would bind a longer path cut short, elsewhere
    if (Buffer.byteLength(at.socket) > MAX_SOCKET_PATH) throw Object.assign(new Error(`socket path longer than ${MAX_SOCKET_PATH} bytes: ${at.socket}`), { code: 'ENAMETOOLONG' })
    await removeStaleSocket(at.socket)
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    const listening = (): void => {
      server.off('error', reject)
      try {
        const handler = handlerFor('socket' in at ? 0 : (server.address() as AddressInfo).port)
        server.on('request', handler)
        // an Expect other than 100-continue is ignored and the request answered as any other
        // (node would answer 417 with an empty body of its own)
        server.on('checkExpectation', handler)
        resolve()
      } catch (err) {
        // the app could not be built: nothing is served, the caller is told
        server.close()
        reject(err as Error)
      }
    }
    if ('socket' in at) {
      // created 0660 whatever the umask: bind() creates the file, synchronously within listen(),
      // with the process umask; the chmod after it is for certainty (the directory, systemd's
      // RuntimeDirectory, keeps everyone else out in the meantime)
      const umask = process.umask(0o117)
      try {
        server.listen(at.socket, listening)
      } finally {
        process.umask(umask)
      }
    } else server.listen(at.port, at.host, listening)
  })
  let url: string
  let boundPort = 0
  const socketPath = 'socket' in at ? at.socket : null
  if (socketPath !== null) {
    chmodSync(socketPath, 0o660)
    url = `unix:${socketPath}`
  } else {
    const addr = server.address() as AddressInfo
    const shownHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address
    url = `http://${shownHost}:${addr.port}`
    boundPort = addr.port
  }
  let stopping: Promise<void> | undefined
  return {
    server,
    url,
    port: boundPort,
    socket: socketPath,
    stop(graceMs = 10_000) {
      stopping ??= (async () => {
        services.setReady(false)
        const closed = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeIdleConnections()
        // a keep-alive connection whose request finishes during the drain goes idle: close it
        // then, rather than a keep-alive timeout later
        const idle = setInterval(() => server.closeIdleConnections(), 100)
        const timer = setTimeout(() => server.closeAllConnections(), graceMs)
        await closed
        stopSweep()
        clearInterval(idle)
        clearTimeout(timer)
        if (socketPath !== null) removeSocketFile(socketPath)
        await services.close()
      })()
      return stopping
    },
  }
}

/** what to change when the socket cannot be listened on, by errno */
const SOCKET_FAILURES: Readonly<Record<string, string>> = {
  EADDRINUSE: 'another process is listening on that socket',
  ENAMETOOLONG: `a socket path is at most ${MAX_SOCKET_PATH} bytes (server.socket)`,
  ENOTSOCK: 'the path exists and is not a socket (server.socket)',
  EACCES: 'permission denied (server.socket)',
  ENOENT: 'no such directory (server.socket)',
}
/** what to change when host and port cannot be listened on, by errno */
const ADDRESS_FAILURES: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the address is already in use (set --port or server.port)',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'no such address on this machine',
  // a host name that does not resolve, now or for a while (set --host or server.host)
  ENOTFOUND: 'the host name does not resolve (set --host or server.host)',
  EAI_AGAIN: 'the host name could not be resolved just now (set --host or server.host, or try again)',
  // an IPv6 address whose zone (%if) names no interface here
  EINVAL: 'not an address this machine can listen on (set --host or server.host)',
}

/**
 * What `authd start` reports when listen() fails at `at`: for a failure the operator can fix, the
 * registry's LISTEN_FAILED naming the address (or socket) and what to change; anything else as it is.
 */
export function listenFailure(err: unknown, at: ListenAt): unknown {
  const errno = (err as { code?: unknown } | null)?.code
  const reasons = 'socket' in at ? SOCKET_FAILURES : ADDRESS_FAILURES
  if (typeof errno !== 'string' || !Object.hasOwn(reasons, errno)) return err
  const where = 'socket' in at ? at.socket : `${at.host}:${at.port}`
  // Linux answers a socket in a directory that does not exist with EACCES, not ENOENT
  const why = 'socket' in at && errno === 'EACCES' && !existsSync(dirname(at.socket)) ? SOCKET_FAILURES.ENOENT! : reasons[errno]!
  return new AppError('LISTEN_FAILED', { params: { where, why } })
}

/** the sockets whose error answer waits for the responses before it (refuseAfterPending) */
const refusing = new WeakSet<Socket>()

/**
 * Writes `answer`, a whole raw error response, and closes the connection: at once, or, when the
 * requests before the malformed one on this connection were read whole (a client pipelining a
 * good request and then a bad one), once their responses are written, in order. node would write
 * the 400 at once, in place of an answer still being made, and close the socket under it: the
 * request was carried out and its client told it was refused. When the request in flight is the
 * one that could not be read (its body was malformed), it is refused at once.
 */
function refuseAfterPending(socket: Socket, answer: string): void {
  if (refusing.has(socket)) return
  // node's response in flight on this socket (the next one queued is given the socket when it ends)
  const pending = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
  if (pending === null || pending === undefined || pending.writableFinished || pending.req?.complete !== true) {
    socket.end(answer)
    return
  }
  refusing.add(socket)
  pending.once('finish', () => {
    refusing.delete(socket)
    if (socket.writable) refuseAfterPending(socket, answer)
  })
}

/**
 * Closes every socket of `server` on which no byte has been read or written (handed to the
 * kernel) for `idleMs`, looking once a second: a client that connects and says nothing, or sends
 * a request and never reads a response larger than the socket's buffers. The cost is one look per
 * connection per second, none per request. Returns what stops it.
 *
 * Quiet means both: `idleMs` by the clock, and as many looks in a row as fit in it that saw
 * nothing move. A process held still (a long GC pause, a VM without CPU for a while) looks once
 * when it resumes, before it has read what arrived meanwhile: that is one quiet look, not the
 * whole pause of silence, so a client that kept sending is not cut off for it.
 */
export function closeStalledSockets(server: Server, idleMs: number, everyMs = 1_000, clock: () => number = () => performance.now()): () => void {
  const watched = new Map<Socket, { read: number; written: number; since: number; quiet: number }>()
  const looks = Math.max(1, Math.ceil(idleMs / everyMs))
  server.on('connection', (socket: Socket) => {
    watched.set(socket, { read: 0, written: 0, since: clock(), quiet: 0 })
    socket.once('close', () => watched.delete(socket))
  })
  const timer = setInterval(() => {
    const now = clock()
    for (const [socket, seen] of watched) {
      const read = socket.bytesRead
      const written = socket.bytesWritten
      if (read !== seen.read || written !== seen.written) {
        seen.read = read
        seen.written = written
        seen.since = now
        seen.quiet = 0
      } else if (++seen.quiet >= looks && now - seen.since >= idleMs) {
        watched.delete(socket)
        socket.destroy()
      }
    }
  }, everyMs).unref()
  const stop = (): void => clearInterval(timer)
  server.once('close', stop)
  return stop
}

/** Removes the socket file if it is (still) there and a socket; anything else at the path is left. */
function removeSocketFile(path: string): void {
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path)
  } catch {
    // already gone (node removes it on close)
  }
}

/**
 * A socket file left by an authd that crashed is replaced; one that a running authd still answers
 * on is not (EADDRINUSE, as for a port in use), and a path that is not a socket is never removed.
 * Stale means refused (ECONNREFUSED: nothing listens on it): a socket whose listener is alive but
 * busy or held still (its queue full: EAGAIN) is in use, not stale.
 */
async function removeStaleSocket(path: string): Promise<void> {
  let isSocket: boolean
  try {
    isSocket = lstatSync(path).isSocket()
  } catch {
    return // nothing there
  }
  if (!isSocket) throw Object.assign(new Error(`${path} exists and is not a socket`), { code: 'ENOTSOCK' })
  const alive = await new Promise<boolean>((resolve) => {
    const probe = connect(path)
    probe.once('connect', () => {
      probe.destroy()
      resolve(true)
    })
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code !== 'ECONNREFUSED'))
  })
  if (alive) throw Object.assign(new Error(`listen EADDRINUSE: ${path}`), { code: 'EADDRINUSE' })
  unlinkSync(path)
}
