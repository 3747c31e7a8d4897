/**
 * HTTP clients for the stress cases, loopback only. `request` is node:http with keep-alive agents
 * bound to a chosen source address (Linux routes all of 127/8 to loopback, so 127.x.y.z are
 * distinct clients to the daemon). `rawExchange` and `RawConnection` write bytes as given, for
 * requests no well-behaved client would send, and for pipelined floods.
 */
import http from 'node:http'
import net from 'node:net'

const agents = new Map()

/** One keep-alive agent per source address (one socket unless `sockets` says otherwise). */
export function agentFor(localAddress = '127.0.0.1', sockets = 1) {
  const key = `${localAddress}/${sockets}`
  let a = agents.get(key)
  if (a === undefined) {
    a = new http.Agent({ keepAlive: true, maxSockets: sockets, localAddress })
    agents.set(key, a)
  }
  return a
}

/** Closes every pooled socket (between cases, and before a daemon is killed). */
export function closeAgents() {
  for (const a of agents.values()) a.destroy()
  agents.clear()
}

/** The n-th distinct loopback source address, 127.1.0.1 upwards (never 127.0.0.x). */
export function loopbackAddress(n) {
  const v = n + 1
  return `127.${1 + ((v >> 16) & 0x7f)}.${(v >> 8) & 0xff}.${v & 0xff}`
}

/**
 * One request. Resolves with { status, headers, text, body (parsed JSON or undefined), ms };
 * rejects on a socket error or after `timeoutMs`.
 */
export function request(url, method, path, opts = {}) {
  const { json, headers = {}, localAddress, agent, timeoutMs = 30_000 } = opts
  let body = opts.body
  const h = { ...headers }
  if (json !== undefined) {
    body = JSON.stringify(json)
    if (h['content-type'] === undefined) h['content-type'] = 'application/json'
  }
  if (body !== undefined) h['content-length'] = String(Buffer.byteLength(body))
  const target = new URL(path, url)
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method,
        headers: h,
        agent: agent ?? agentFor(localAddress),
      },
      (res) => {
        const chunks = []
        res.on('data', (c) => chunks.push(c))
        res.on('error', reject)
        res.on('end', () => {
          clearTimeout(timer)
          const text = Buffer.concat(chunks).toString('utf8')
          let parsed
          try {
            parsed = JSON.parse(text)
          } catch {
            parsed = undefined
          }
          resolve({ status: res.statusCode, headers: res.headers, text, body: parsed, ms: performance.now() - started })
        })
      },
    )
    const timer = setTimeout(() => req.destroy(new Error(`timeout after ${timeoutMs} ms: ${method} ${path}`)), timeoutMs)
    req.on('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    if (body !== undefined) req.write(body)
    req.end()
  })
}

export const get = (url, path, opts) => request(url, 'GET', path, opts)

/** The refresh cookie value from a response's Set-Cookie, or undefined (cleared counts as undefined). */
export function cookieFrom(res, name) {
  const sc = res.headers['set-cookie']
  for (const c of sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]) {
    if (!c.startsWith(`${name}=`)) continue
    const value = c.slice(name.length + 1).split(';')[0]
    return value === '' || /Max-Age=0/i.test(c) ? undefined : value
  }
  return undefined
}

/**
 * Parses HTTP/1.1 responses out of a byte stream, in order. `expectBody(i)` says whether the
 * i-th response can have a body (not for HEAD). Handles content-length, chunked, and
 * read-until-close.
 */
export class ResponseReader {
  constructor() {
    this.buf = Buffer.alloc(0)
  }
  push(chunk) {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk])
  }
  /** the next complete response, or null if more bytes are needed; `ended`: the peer closed */
  next(hasBody = true, ended = false) {
    for (;;) {
      const r = this.one(hasBody, ended)
      // interim answers (100 Continue, 103) precede the real one
      if (r === null || r.status >= 200 || r.status === 101) return r
    }
  }
  one(hasBody, ended) {
    const end = this.buf.indexOf('\r\n\r\n')
    if (end === -1) return null
    const head = this.buf.subarray(0, end).toString('latin1')
    const [statusLine, ...lines] = head.split('\r\n')
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)
    if (m === null) throw new Error(`not an HTTP response: ${JSON.stringify(statusLine.slice(0, 80))}`)
    const status = Number(m[1])
    const headers = []
    for (const l of lines) {
      const i = l.indexOf(':')
      if (i > 0) headers.push([l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()])
    }
    const header = (name) => headers.find(([k]) => k === name)?.[1]
    let rest = this.buf.subarray(end + 4)
    let body
    let used
    if (!hasBody || status === 204 || status === 304 || (status >= 100 && status < 200)) {
      body = Buffer.alloc(0)
      used = 0
    } else if (header('content-length') !== undefined) {
      const n = Number(header('content-length'))
      if (rest.length < n) return null
      body = rest.subarray(0, n)
      used = n
    } else if (/chunked/i.test(header('transfer-encoding') ?? '')) {
      const parts = []
      let at = 0
      for (;;) {
        const eol = rest.indexOf('\r\n', at)
        if (eol === -1) return null
        const size = parseInt(rest.subarray(at, eol).toString('latin1'), 16)
        if (Number.isNaN(size)) throw new Error('bad chunk size')
        if (rest.length < eol + 2 + size + 2) return null
        if (size === 0) {
          used = eol + 4
          break
        }
        parts.push(rest.subarray(eol + 2, eol + 2 + size))
        at = eol + 2 + size + 2
      }
      body = Buffer.concat(parts)
    } else {
      if (!ended) return null
      body = rest
      used = rest.length
    }
    this.buf = rest.subarray(used)
    return { status, headers, header, body }
  }
}

/**
 * Writes `data` (string or Buffer, or an array written with a pause between pieces) on a new
 * connection, reads one response, closes. Resolves { status, headers, header, body, ms } or
 * { status: null, closed: true } if the server closed without answering; rejects after `timeoutMs`.
 */
export function rawExchange({ port, data, localAddress = '127.0.0.1', timeoutMs = 10_000, hasBody = true }) {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const reader = new ResponseReader()
    const socket = net.connect({ host: '127.0.0.1', port, localAddress })
    let settled = false
    const finish = (err, value) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      if (err) reject(err)
      else resolve(value)
    }
    const timer = setTimeout(() => finish(new Error(`no response within ${timeoutMs} ms`)), timeoutMs)
    const attempt = (ended) => {
      let r
      try {
        r = reader.next(hasBody, ended)
      } catch (err) {
        return finish(err)
      }
      if (r !== null) finish(null, { ...r, ms: performance.now() - started })
      else if (ended) finish(null, { status: null, closed: true, ms: performance.now() - started })
    }
    socket.on('data', (c) => {
      reader.push(c)
      attempt(false)
    })
    socket.on('end', () => attempt(true))
    socket.on('close', () => attempt(true))
    // a reset after the server has answered and closed is not an error of the exchange
    socket.on('error', () => attempt(true))
    socket.on('connect', () => {
      socket.write(data, () => {})
    })
  })
}

/**
 * A keep-alive connection with pipelining: `send` writes a request at once and resolves with its
 * response when it arrives (responses come back in order).
 */
export class RawConnection {
  constructor(port, localAddress = '127.0.0.1') {
    this.reader = new ResponseReader()
    this.pending = []
    this.closed = false
    this.socket = net.connect({ host: '127.0.0.1', port, localAddress })
    this.socket.setNoDelay(true)
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('connect', resolve)
      this.socket.once('error', reject)
    })
    this.socket.on('data', (c) => {
      this.reader.push(c)
      this.drain(false)
    })
    const fail = (err) => {
      this.closed = true
      this.drain(true)
      for (const p of this.pending.splice(0)) p.reject(err ?? new Error('connection closed'))
    }
    this.socket.on('error', fail)
    this.socket.on('close', () => fail())
  }
  drain(ended) {
    while (this.pending.length > 0) {
      const r = this.reader.next(this.pending[0].hasBody, ended)
      if (r === null) return
      this.pending.shift().resolve(r)
    }
  }
  send(data, hasBody = true) {
    if (this.closed) return Promise.reject(new Error('connection closed'))
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject, hasBody })
      this.socket.write(data)
    })
  }
  close() {
    this.socket.destroy()
  }
}
