/** Hand-made JWS for the token attacks: any header, any claims, any key (or none). */
import { createHmac, sign } from 'node:crypto'

export const b64u = (x) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x)).toString('base64url')

/**
 * Signs `header.payload` (objects are JSON-encoded, strings taken as the raw segment text) with
 * `key`: a KeyObject for ES256/RS256 (ES256 as the 64-byte JOSE form unless `der`), a secret
 * for HS256, nothing for none.
 */
export function signJws(header, payload, { alg = header.alg, key, der = false } = {}) {
  const input = `${b64u(header)}.${b64u(payload)}`
  let sig
  if (alg === 'ES256') sig = sign('sha256', Buffer.from(input), { key, dsaEncoding: der ? 'der' : 'ieee-p1363' })
  else if (alg === 'RS256') sig = sign('sha256', Buffer.from(input), key)
  else if (alg === 'HS256') sig = createHmac('sha256', key).update(input).digest()
  else sig = Buffer.alloc(0)
  return `${input}.${sig.toString('base64url')}`
}

export function decodeSegment(seg) {
  return JSON.parse(Buffer.from(seg, 'base64url').toString('utf8'))
}
