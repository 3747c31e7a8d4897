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
  if (alg === 'ES256') {
    sig = sign('sha256', Buffer.from(input), { key, dsaEncoding: der ? 'der' : 'ieee-p1363' })
    // authd issues and accepts only the low-S form (s ≤ n/2); a P1363 signature is made so too
    if (!der) sig = lowS(sig)
  }
  else if (alg === 'RS256') sig = sign('sha256', Buffer.from(input), key)
  else if (alg === 'HS256') sig = createHmac('sha256', key).update(input).digest()
  else sig = Buffer.alloc(0)
  return `${input}.${sig.toString('base64url')}`
}

/** P-256's group order */
const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n

/** The low-S twin of a 64-byte r||s signature (itself when s ≤ n/2) */
export function lowS(sig) {
  const s = BigInt(`0x${sig.subarray(32).toString('hex')}`)
  if (s <= P256_N / 2n) return sig
  return Buffer.concat([sig.subarray(0, 32), Buffer.from((P256_N - s).toString(16).padStart(64, '0'), 'hex')])
}

export function decodeSegment(seg) {
  return JSON.parse(Buffer.from(seg, 'base64url').toString('utf8'))
}
