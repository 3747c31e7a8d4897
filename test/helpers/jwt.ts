/**
 * Crafting JWS by hand for attack tests: any header, any payload, any signature, signed with
 * node:crypto directly (jsonwebtoken refuses most of what an attacker would send).
 */
import { createHmac, createPrivateKey, sign as cryptoSign, type KeyObject } from 'node:crypto'
import type { Services } from '../../src/daemon/services.js'
import type { KeyRecord } from '../../src/store/store.js'

export const b64url = (value: unknown): string =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')

export interface Decoded {
  header: Record<string, unknown>
  payload: Record<string, unknown>
  signature: string
}

/** Splits a compact JWS without verifying it */
export function decode(token: string): Decoded {
  const [h, p, s] = token.split('.')
  return {
    header: JSON.parse(Buffer.from(h!, 'base64url').toString('utf8')) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(p!, 'base64url').toString('utf8')) as Record<string, unknown>,
    signature: s ?? '',
  }
}

/** The key the app signs with now (private key included: tests read it straight from the store) */
export async function activeKey(app: Pick<Services, 'store'>): Promise<KeyRecord> {
  const key = (await app.store.listKeys()).find((k) => k.state === 'active')
  if (key === undefined) throw new Error('no active key in the store')
  return key
}

/** the order of P-256 */
export const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n

/** s of an ES256 signature (r||s, base64url) */
export const sOf = (signature: string): bigint => BigInt(`0x${Buffer.from(signature, 'base64url').subarray(32, 64).toString('hex')}`)

/** the same ES256 signature with s replaced by n − s (equally valid for plain ECDSA) */
export function flipS(signature: string): string {
  const sig = Buffer.from(signature, 'base64url')
  const flipped = Buffer.from((P256_N - sOf(signature)).toString(16).padStart(64, '0'), 'hex')
  return Buffer.concat([sig.subarray(0, 32), flipped]).toString('base64url')
}

/** the high-S twin of an ES256 token: its signature with s replaced by n − s */
export function highSTwin(token: string): string {
  const dot = token.lastIndexOf('.')
  return `${token.slice(0, dot)}.${flipS(token.slice(dot + 1))}`
}

/** A raw JWS signature over `input` with an ES256 (P-256, IEEE P1363 r||s, low-S as authd issues it) or RS256 key */
export function signWith(alg: 'ES256' | 'RS256', key: KeyObject | string, input: string): string {
  const k = typeof key === 'string' ? createPrivateKey(key) : key
  if (alg === 'RS256') return cryptoSign('sha256', Buffer.from(input), k).toString('base64url')
  const sig = cryptoSign('sha256', Buffer.from(input), { key: k, dsaEncoding: 'ieee-p1363' }).toString('base64url')
  return sOf(sig) > P256_N / 2n ? flipS(sig) : sig
}

/** `header.payload.signature`, signed with the given key record (or a foreign private key) */
export function craft(header: Record<string, unknown>, payload: Record<string, unknown>, key: { alg: 'ES256' | 'RS256'; privateKey: KeyObject | string }): string {
  const input = `${b64url(header)}.${b64url(payload)}`
  return `${input}.${signWith(key.alg, key.privateKey, input)}`
}

/** An HMAC-SHA256 JWS (the "key confusion" attack passes a public key as the HMAC secret) */
export function craftHs256(header: Record<string, unknown>, payload: Record<string, unknown>, secret: string | Buffer): string {
  const input = `${b64url(header)}.${b64url(payload)}`
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`
}

/** The signing material of a store key record, for craft() */
export const signer = (key: KeyRecord): { alg: 'ES256' | 'RS256'; privateKey: string } => ({ alg: key.alg, privateKey: key.privateKeyPem })
