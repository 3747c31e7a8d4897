/**
 * Every answer authd writes: JSON replies, errors, the JWKS, /metrics, the CORS preflight, and
 * the daemon's own answers to requests node could not read (rawAnswer). They share one base
 * header set (README, "Every response"): `Cache-Control: no-store` unless the answer says
 * otherwise, `X-Content-Type-Options: nosniff`, and the request's id. An error's own headers come
 * from its registry entry (src/errors.ts).
 */
import { STATUS_CODES } from 'node:http'
import { httpErrors, isAppError, isHttpError, isStoreUnavailable, type ErrorEntry, type HttpErrorCode } from '../errors.js'
import type { RefusalLog } from '../core/refusal-log.js'
import type { RefreshCookie } from './cookies.js'
import type { Exchange } from './exchange.js'
import type { Metrics } from './metrics.js'

export type Headers = Record<string, string | string[] | number>

export const JSON_TYPE = 'application/json; charset=utf-8'
const NO_STORE = 'no-store'
const NOSNIFF = 'nosniff'

/**
 * The headers of an answer with a body: the base set, the body's type and length. One object
 * literal of one fixed shape: a constant spread into a fresh object, with keys added after it,
 * cost 12–20 µs more per response under load (measured, docs/performance.md).
 */
export function baseHeaders(id: string, type: string, length: number, cache: string = NO_STORE): Headers {
  return {
    'content-type': type,
    'cache-control': cache,
    'x-content-type-options': NOSNIFF,
    'x-request-id': id,
    'content-length': length,
  }
}

/**
 * The headers of an answer without a body (the 204 of a CORS preflight): the base set alone,
 * baseHeaders' without the body's type and length (a preflight is no hot path: the deletes cost
 * nothing that matters there).
 */
export function bodilessHeaders(id: string): Headers {
  const headers = baseHeaders(id, '', 0)
  delete headers['content-type']
  delete headers['content-length']
  return headers
}

/**
 * The whole text of the error answer for `code` that the daemon writes on a socket itself, for a
 * request node could not read (malformed HTTP, headers too large, a timeout: daemon/server.ts):
 * the registry's status and message, the base set without a request id (no request was handed
 * over) and the code's own headers; the connection is closed whatever they say.
 */
export function rawAnswer(code: HttpErrorCode): string {
  const entry: ErrorEntry & { status: number } = httpErrors[code]
  const body = JSON.stringify({ success: false, message: entry.message })
  const headers = baseHeaders('', JSON_TYPE, Buffer.byteLength(body))
  delete headers['x-request-id']
  if (entry.headers !== undefined) for (const k in entry.headers) headers[k] = entry.headers[k]!
  headers.connection = 'close'
  let head = `HTTP/1.1 ${entry.status} ${STATUS_CODES[entry.status]}\r\n`
  for (const k in headers) head += `${k}: ${String(headers[k])}\r\n`
  return `${head}\r\n${body}`
}

export interface HttpLogger {
  info(obj: object, msg?: string): void
  warn(obj: object, msg?: string): void
  error(obj: object, msg?: string): void
}

export type RequestLog = (reqId: string, method: string, route: string, status: number, ms: number) => void

export interface ReplyDeps {
  metrics: Metrics
  log: HttpLogger
  /** the one line per finished request */
  requestLog: RequestLog
  /** where the request lines of one client's junk are gathered (AppDeps.repeats) */
  repeats?: Pick<RefusalLog, 'repeat'>
  /** the refresh cookie, cleared by the errors whose entry says so */
  refreshCookie: RefreshCookie
}

export interface Reply {
  /** a JSON answer of `body` */
  json(x: Exchange, status: number, body: unknown, extra?: Record<string, string | string[]>): void
  /** a JSON answer whose text is made: `length` is its size in bytes */
  text(x: Exchange, status: number, text: string, length: number, extra?: Record<string, string | string[]>): void
  /** `{success: true, data}` */
  ok(x: Exchange, status: number, data: object, extra?: Record<string, string | string[]>): void
  /** the error answer for `code`: its status, its message (unless given filled in), its headers */
  fail(x: Exchange, code: HttpErrorCode, retryAfterS?: number, message?: string): void
  /**
   * The answer for whatever a handler threw: a deliberate error as it is, the store out of reach
   * or a write it refused as 503, anything else logged (with the request id) and answered with
   * the generic 500.
   */
  error(x: Exchange, err: unknown): void
  /** a 200 of another type (the JWKS, /metrics); `cache` replaces the Cache-Control of the base set */
  other(x: Exchange, type: string, text: string, cache?: string): void
  /** the 204 of a CORS preflight; `cors` holds the access-control-* headers */
  empty(x: Exchange, cors: Readonly<Record<string, string>>): void
}

export function createReply(deps: ReplyDeps): Reply {
  const { metrics, log, requestLog, repeats, refreshCookie } = deps

  // The request is counted and logged when its response is handed to the socket, by whichever
  // answer wrote it: no per-request 'finish' listener.
  const finished = (x: Exchange, status: number): void => {
    const ms = performance.now() - x.started
    const method = x.req.method ?? ''
    metrics.observe(x.route, method, status, ms / 1000)
    const rounded = Math.round(ms * 100) / 100
    if (repeats !== undefined && (status === 404 || status === 405 || status === 400 || status === 431)) {
      // keyed by the limiter's key (an IPv6 client by its /64): a client cannot get a line per address
      const c = x.client()
      repeats.repeat(`request ${status} ${c.ipKey}`, () => requestLog(x.id, method, x.route, status, rounded), { event: 'request_repeated', ip: c.ip, status }, 'request')
    } else requestLog(x.id, method, x.route, status, rounded)
  }

  const text = (x: Exchange, status: number, body: string, length: number, extra?: Record<string, string | string[]>): void => {
    const headers = baseHeaders(x.id, JSON_TYPE, length)
    if (extra !== undefined) for (const k in extra) headers[k] = extra[k]!
    x.res.writeHead(status, headers)
    x.res.end(body)
    finished(x, status)
  }

  const json = (x: Exchange, status: number, body: unknown, extra?: Record<string, string | string[]>): void => {
    const s = JSON.stringify(body)
    text(x, status, s, Buffer.byteLength(s), extra)
  }

  // each error's body with the registry's message, made once: a 429 flood or a stream of 401s
  // writes the same few texts over and over
  const failBodies = new Map<HttpErrorCode, { text: string; length: number }>()
  const failBody = (entry: ErrorEntry, message: string | undefined): { text: string; length: number } => {
    const text = JSON.stringify({ success: false, message: message ?? entry.message })
    return { text, length: Buffer.byteLength(text) }
  }

  // a refused write is logged at once, then at most once per 10 s with how many more there were:
  // on a full disk every write fails, and the log is on a disk too
  let writeFailedAt = -Infinity
  let writeFailedSince = 0
  const writeFailed = (reqId: string, why: string): void => {
    const now = Date.now()
    if (now - writeFailedAt < 10_000) {
      writeFailedSince++
      return
    }
    log.error({ reqId, why, ...(writeFailedSince > 0 && { repeated: writeFailedSince }) }, 'store write failed')
    writeFailedAt = now
    writeFailedSince = 0
  }

  const fail = (x: Exchange, code: HttpErrorCode, retryAfterS?: number, message?: string): void => {
    const entry: ErrorEntry & { status: number } = httpErrors[code]
    const usual = message === undefined || message === entry.message
    let body = usual ? failBodies.get(code) : undefined
    if (body === undefined) {
      body = failBody(entry, message)
      if (usual) failBodies.set(code, body)
    }
    const headers = baseHeaders(x.id, JSON_TYPE, body.length)
    if (retryAfterS !== undefined) headers['retry-after'] = String(retryAfterS)
    if (entry.headers !== undefined) for (const k in entry.headers) headers[k] = entry.headers[k]!
    if (entry.clearsRefreshCookie === true) headers['set-cookie'] = refreshCookie.clear()
    x.res.writeHead(entry.status, headers)
    x.res.end(body.text)
    finished(x, entry.status)
  }

  return {
    json,
    text,
    ok: (x, status, data, extra) => json(x, status, { success: true, data }, extra),
    fail,
    error(x, err) {
      if (x.res.headersSent) return
      // the store's database cannot be reached: try again in a second (never a 500); its detail
      // is for logs and authctl, the client gets the registry's sentence
      if (isStoreUnavailable(err)) return fail(x, 'STORE_UNAVAILABLE', 1)
      // a write the store's disk refused (LMDB: a full disk, an I/O error; none of it was
      // written): like a failing database, try again in a second. The cause is for the log
      if (isAppError(err) && err.code === 'STORE_WRITE_FAILED') {
        writeFailed(x.id, err.message)
        return fail(x, 'STORE_UNAVAILABLE', 1)
      }
      // an error of the store's or authctl's (no status) is a fault here, like any other
      if (isHttpError(err)) return fail(x, err.code, err.retryAfterS, err.message)
      log.error({ reqId: x.id, err }, 'unexpected error')
      fail(x, 'INTERNAL')
    },
    other(x, type, body, cache) {
      x.res.writeHead(200, baseHeaders(x.id, type, Buffer.byteLength(body), cache))
      x.res.end(body)
      finished(x, 200)
    },
    empty(x, cors) {
      const headers = bodilessHeaders(x.id)
      for (const k in cors) headers[k] = cors[k]!
      x.res.writeHead(204, headers)
      x.res.end()
      finished(x, 204)
    },
  }
}
