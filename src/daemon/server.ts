/** The listening server: the only place that calls listen(). */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Services } from './services.js'

export interface RunningServer {
  server: Server
  /** e.g. http://127.0.0.1:8080 */
  url: string
  port: number
  /** stop accepting, drain in-flight requests (at most `graceMs`), close the store */
  stop(graceMs?: number): Promise<void>
}

// Slow-client protection: a half-open socket (slowloris headers, a trickled body, an idle
// keep-alive) is closed within 15 s of opening. Node checks these every second, so the request
// timeout sits 2 s under that promise (a 16 KB body in 12 s is 1.4 KB/s: any real client).
const HEADERS_TIMEOUT_MS = 10_000
const REQUEST_TIMEOUT_MS = 12_000
const KEEP_ALIVE_TIMEOUT_MS = 5_000

export async function listen(services: Services, host: string, port: number): Promise<RunningServer> {
  const server = createServer(
    {
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: 1_000,
      maxHeaderSize: 16 * 1024,
    },
    services.handler,
  )
  // socket inactivity once a request is in (a response nobody reads, say): as before, 15 s
  server.timeout = 15_000
  server.maxHeadersCount = 100
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // malformed HTTP or a timed-out socket: answer 400 (or just close) without a stack
    if (!socket.writable || err.code === 'ECONNRESET') return socket.destroy()
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
    const body = JSON.stringify({ success: false, message: status === 431 ? 'Request headers too large' : status === 408 ? 'Request timeout' : 'Bad request' })
    socket.end(
      `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request'}\r\n` +
        `content-type: application/json; charset=utf-8\r\ncache-control: no-store\r\nx-content-type-options: nosniff\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const addr = server.address() as AddressInfo
  const shownHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address
  let stopping: Promise<void> | undefined
  return {
    server,
    url: `http://${shownHost}:${addr.port}`,
    port: addr.port,
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
        clearInterval(idle)
        clearTimeout(timer)
        await services.close()
      })()
      return stopping
    },
  }
}
