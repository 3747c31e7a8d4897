/**
 * Header values read from a request's raw header list. The first read of `req.headers` builds an
 * object of every header the client sent, which /me (the hottest path) and a refused login (the
 * 429 path) have no use for.
 */
import type { IncomingMessage } from 'node:http'

/**
 * The value of header `name` (lower-case) as node's `req.headers` gives it for a header it keeps
 * only once (authorization among them): the first one sent.
 */
export function firstHeader(req: IncomingMessage, name: string): string | undefined {
  const raw = req.rawHeaders
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!
    if (k.length === name.length && (k === name || k.toLowerCase() === name)) return raw[i + 1]
  }
  return undefined
}

/**
 * The value of header `name` (lower-case), a header a request may carry once (Authorization): when
 * sent more than once, `''`, a value of no form, so that the request is read as carrying none that
 * is valid, rather than as the first (a proxy in front may have read the last).
 */
export function soleHeader(req: IncomingMessage, name: string): string | undefined {
  const raw = req.rawHeaders
  let value: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!
    if (k.length === name.length && (k === name || k.toLowerCase() === name)) {
      if (value !== undefined) return ''
      value = raw[i + 1]
    }
  }
  return value
}

/**
 * The value of header `name` (lower-case) as node's `req.headers` gives it for a header it joins
 * when sent more than once (Origin, X-Forwarded-For: the values in order, `, ` between them).
 */
export function joinedHeader(req: IncomingMessage, name: string): string | undefined {
  const raw = req.rawHeaders
  let value: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!
    if (k.length === name.length && (k === name || k.toLowerCase() === name)) value = value === undefined ? raw[i + 1] : `${value}, ${raw[i + 1]}`
  }
  return value
}

/** how many Host headers a request has (node keeps the first in `req.headers`, silently) */
export function hostCount(raw: string[]): number {
  let n = 0
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!
    if (k.length === 4 && (k === 'Host' || k === 'host' || k.toLowerCase() === 'host')) n++
  }
  return n
}
