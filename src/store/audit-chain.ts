/**
 * The audit log's chain (README, "Audit log"): each event's `hash` is the lowercase hex SHA-256
 * of the previous event's hash, a newline, and the event without `hash` as canonical JSON (object
 * keys sorted by UTF-16 code unit at every level, no whitespace, UTF-8). Both store backends
 * compute it with these functions, and `authctl audit verify` checks it with them.
 */
import { createHash } from 'node:crypto'
import type { AuditAnchor, AuditDraft, AuditEvent } from './store.js'

/** what the first event chains to when retention has removed nothing */
export const GENESIS: AuditAnchor = { seq: 0, hash: '0'.repeat(64) }

/** JSON with object keys sorted by code unit at every level and no whitespace */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value)
    if (text === undefined) throw new TypeError('canonicalJson: a value JSON cannot hold')
    return text
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`
  const keys = Object.keys(value)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`
}

/** the hash of `event` (its own `hash` field, if any, left out) after `previous` */
export function chainHash(previous: string, event: Omit<AuditEvent, 'hash'> | AuditEvent): string {
  const { hash: _ignored, ...rest } = event as AuditEvent
  return createHash('sha256').update(`${previous}\n${canonicalJson(rest)}`, 'utf8').digest('hex')
}

/** the event a draft becomes as number `seq` after an event whose hash is `previous` */
export function sealEvent(draft: AuditDraft, seq: number, previous: string): AuditEvent {
  const body = {
    seq,
    time: new Date(draft.at).toISOString(),
    event: draft.event,
    actor: draft.actor,
    userId: draft.userId,
    email: draft.email,
    sessionId: draft.sessionId,
    ip: draft.ip,
    userAgent: draft.userAgent,
    detail: draft.detail,
  }
  return { ...body, hash: chainHash(previous, body) }
}
