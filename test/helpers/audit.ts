/**
 * Audit-log helpers for tests: chains built the way the store builds them, and a scan of events
 * for the secrets a test used (README, "Audit log": no event holds a password, a token, a code,
 * a secret or a hash of one).
 */
import { createHash } from 'node:crypto'
import { GENESIS, sealEvent } from '../../src/store/audit-chain.js'
import type { AuditAnchor, AuditDraft, AuditEvent } from '../../src/store/store.js'

export const T0 = Date.UTC(2025, 2, 4, 9, 5, 0)

/** a draft with every field, distinct per `i` */
export function draft(i: number, over: Partial<AuditDraft> = {}): AuditDraft {
  return {
    at: T0 + i * 1000,
    event: i % 2 === 0 ? 'login.success' : 'login.failure',
    actor: 'api',
    userId: `user-${i % 3}`,
    email: `user${i % 3}@example.com`,
    sessionId: i % 2 === 0 ? `sess-${i}` : null,
    ip: '203.0.113.7',
    userAgent: 'curl/8.5.0',
    detail: i % 2 === 0 ? {} : { reason: 'bad_password' },
    ...over,
  }
}

/** `n` events sealed after `anchor`, as a store appends them */
export function buildChain(n: number, anchor: AuditAnchor = GENESIS, make: (i: number) => AuditDraft = draft): AuditEvent[] {
  const out: AuditEvent[] = []
  let previous = anchor.hash
  for (let i = 0; i < n; i++) {
    const e = sealEvent(make(i), anchor.seq + i + 1, previous)
    out.push(e)
    previous = e.hash
  }
  return out
}

export async function* iterate<T>(items: readonly T[]): AsyncIterable<T> {
  for (const i of items) yield i
}

/**
 * Where in `events` a secret shows up: the secret itself, its SHA-256 (hex, base64url, base64),
 * in any string at any depth (keys included). Answers `seq field: secret` lines; empty is clean.
 */
export function secretsIn(events: readonly AuditEvent[], secrets: readonly string[]): string[] {
  const needles: Array<[string, string]> = []
  for (const s of secrets) {
    if (s.length < 4) throw new Error(`secretsIn: ${JSON.stringify(s)} is too short to look for`)
    const digest = createHash('sha256').update(s, 'utf8').digest()
    needles.push([s, s], [digest.toString('hex'), `sha256(${s})`], [digest.toString('base64url'), `sha256(${s})`], [digest.toString('base64'), `sha256(${s})`])
  }
  const found: string[] = []
  const visit = (value: unknown, path: string, seq: number): void => {
    if (typeof value === 'string') {
      for (const [needle, name] of needles) if (value.includes(needle)) found.push(`${seq} ${path}: ${name}`)
    } else if (Array.isArray(value)) value.forEach((v, i) => visit(v, `${path}[${i}]`, seq))
    else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        visit(k, `${path}.<key>`, seq)
        visit(v, `${path}.${k}`, seq)
      }
    }
  }
  for (const e of events) {
    const { hash: _chain, ...rest } = e
    visit(rest, 'event', e.seq)
  }
  return found
}
