/**
 * HTTP by hand over a plain TCP socket, for what a client library will not send: a declared
 * length with no body, chunked bodies without a length, half a header. Loopback only; bounded.
 */
import { connect } from 'node:net'

export interface RawReply {
  status: number
  headers: Record<string, string>
  body: string
  /** everything the server sent */
  raw: string
  /** the server closed the connection (rather than our timeout) */
  closedByServer: boolean
  ms: number
}

/**
 * Writes `parts` one by one (`gapMs` apart), stops writing once the server has answered, and
 * collects until the server closes or `timeoutMs` passes.
 */
export function rawRequest(port: number, parts: Array<string | Buffer>, opts: { gapMs?: number; timeoutMs?: number } = {}): Promise<RawReply> {
  const { gapMs = 5, timeoutMs = 5000 } = opts
  return new Promise((resolve) => {
    const started = performance.now()
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    let closedByServer = false
    let done = false
    const finish = (): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      const raw = Buffer.concat(chunks).toString('utf8')
      const split = raw.indexOf('\r\n\r\n')
      const head = split === -1 ? raw : raw.slice(0, split)
      const [statusLine, ...lines] = head.split('\r\n')
      const headers: Record<string, string> = {}
      for (const l of lines) {
        const i = l.indexOf(':')
        if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim()
      }
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0)
      resolve({ status, headers, body: split === -1 ? '' : raw.slice(split + 4), raw, closedByServer, ms: performance.now() - started })
    }
    const timer = setTimeout(finish, timeoutMs)
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('end', () => {
      closedByServer = true
      finish()
    })
    socket.on('close', () => {
      closedByServer = true
      finish()
    })
    // a reset while we still write is expected once the server has refused the body
    socket.on('error', () => undefined)
    socket.once('connect', async () => {
      for (const part of parts) {
        if (done || chunks.length > 0 || socket.destroyed) break
        socket.write(part)
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs))
      }
    })
  })
}

/** One chunk of a chunked transfer-encoded body */
export const chunk = (data: string | Buffer): Buffer => {
  const b = typeof data === 'string' ? Buffer.from(data) : data
  return Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')])
}
