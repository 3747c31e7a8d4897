/** Reading a request body: size limit, media type, strict UTF-8 JSON object. */
import type { IncomingMessage } from 'node:http'
import { AppError } from '../errors.js'

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

/** `application/json`, optionally with `charset=utf-8` (any case); nothing else */
export function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false
  const [type, ...params] = value.split(';')
  if (type!.trim().toLowerCase() !== 'application/json') return false
  for (const p of params) {
    const [k, v] = p.split('=')
    if (k!.trim().toLowerCase() === 'charset' && (v ?? '').trim().replace(/^"|"$/g, '').toLowerCase() !== 'utf-8') return false
  }
  return true
}

/**
 * Reads the body as a JSON object. An empty body is `{}`; other media types, oversize bodies,
 * invalid UTF-8, lone surrogates, and anything but an object are client errors.
 */
export function readJsonBody(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const declared = req.headers['content-length']
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(new AppError('BODY_TOO_LARGE'))
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let failed = false
    const fail = (err: AppError): void => {
      if (failed) return
      failed = true
      // stop buffering; the rest of the body is discarded as it arrives
      chunks.length = 0
      reject(err)
    }
    req.on('data', (chunk: Buffer) => {
      if (failed) return
      size += chunk.length
      if (size > limit) fail(new AppError('BODY_TOO_LARGE'))
      else chunks.push(chunk)
    })
    req.on('error', () => fail(new AppError('INVALID_JSON')))
    req.on('end', () => {
      if (failed) return
      if (size === 0) return resolve({})
      if (!isJsonContentType(req.headers['content-type'])) return fail(new AppError('UNSUPPORTED_MEDIA_TYPE'))
      const parsed = parseJsonObject(Buffer.concat(chunks, size))
      if (parsed === null) fail(new AppError('INVALID_JSON'))
      else resolve(parsed)
    })
  })
}

export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> | null {
  let value: unknown
  try {
    value = JSON.parse(decoder.decode(bytes))
  } catch {
    return null
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null
  return wellFormed(value) ? (value as Record<string, unknown>) : null
}

// JSON escapes can produce lone surrogates ("\ud800") that no UTF-8 text can hold; refuse them.
// Iterative, so a deeply nested body cannot overflow the stack.
function wellFormed(root: object): boolean {
  const stack: unknown[] = [root]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v === 'string') {
      if (!v.isWellFormed()) return false
    } else if (typeof v === 'object' && v !== null) {
      if (Array.isArray(v)) for (const x of v) stack.push(x)
      else
        for (const [k, x] of Object.entries(v)) {
          if (!k.isWellFormed()) return false
          stack.push(x)
        }
    }
  }
  return true
}
