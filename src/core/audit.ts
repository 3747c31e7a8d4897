/**
 * The audit log above the store (README, "Audit log"): the event names, the drafts the use-cases
 * and the admin operations hand to a store write, the chain check of `authctl audit verify`, and
 * the reads of `authctl audit list` and the terminal UI. The store gives each draft its `seq` and
 * `hash` inside the write that makes the change it records (store/audit-chain.ts).
 *
 * No event holds a password, a token, a code, a secret or a hash of one: a draft carries ids,
 * the email, the client's address and user agent, and a `detail` of plain facts (a reason, a
 * count, a kid).
 */
import os from 'node:os'
import { chainHash } from '../store/audit-chain.js'
import type { AuditAnchor, AuditDraft, AuditEvent, AuditQuery, Store } from '../store/store.js'
import type { AuditEventName } from './audit-events.js'

export { AUDIT_EVENTS, isAuditEventName, type AuditEventName } from './audit-events.js'

/** `login.failure`'s `detail.reason` */
export type LoginFailureReason = 'unknown_user' | 'bad_password' | 'disabled'

/** What a draft says beyond its event and actor; a field left out does not apply (null). */
export interface DraftFields {
  /** when it happened (ms), from the caller's clock */
  at: number
  userId?: string | null
  email?: string | null
  sessionId?: string | null
  detail?: Record<string, unknown>
}

/** user agents are kept as sessions keep them: the first 256 characters */
const USER_AGENT_MAX = 256

/** An event caused by an HTTP request: actor `api`, the client's address and user agent. */
export function apiDraft(event: AuditEventName, client: { ip: string; userAgent: string }, fields: DraftFields): AuditDraft {
  return {
    at: fields.at,
    event,
    actor: 'api',
    userId: fields.userId ?? null,
    email: fields.email ?? null,
    sessionId: fields.sessionId ?? null,
    ip: client.ip === '' ? null : client.ip,
    userAgent: client.userAgent === '' ? null : client.userAgent.slice(0, USER_AGENT_MAX),
    detail: fields.detail ?? {},
  }
}

/**
 * An event caused by `authctl` or its terminal UI: actor `authctl:<os user>` (the account that ran
 * it: file permissions on the store are the boundary, so that is who acted). No address.
 */
export function adminDraft(event: AuditEventName, fields: DraftFields & { actor?: string }): AuditDraft {
  return {
    at: fields.at,
    event,
    actor: fields.actor ?? authctlActor(),
    userId: fields.userId ?? null,
    email: fields.email ?? null,
    sessionId: fields.sessionId ?? null,
    ip: null,
    userAgent: null,
    detail: fields.detail ?? {},
  }
}

let actor: string | undefined

/**
 * `authctl:<os user>`: the login name of the process's user; where the system has no name for it
 * (a container's bare uid has no passwd entry), `authctl:uid:<n>`; else `authctl:unknown`.
 */
export function authctlActor(userInfo: () => { username: string } = os.userInfo, uid: (() => number) | null = process.getuid ?? null): string {
  if (userInfo === os.userInfo && actor !== undefined) return actor
  let name: string
  try {
    name = userInfo().username
  } catch {
    name = ''
  }
  const found = name !== '' ? `authctl:${name}` : uid !== null ? `authctl:uid:${uid()}` : 'authctl:unknown'
  if (userInfo === os.userInfo) actor = found
  return found
}

/** What `authctl audit verify` finds. */
export type ChainFinding = { ok: true; events: number } | { ok: false; brokenAt: number }

/**
 * Recomputes the chain from `anchor` over `events` (in seq order, as Store.auditChain gives them).
 *
 * Each event must be the one that belongs next: its `seq` one above the previous one's (the
 * anchor's for the first), and its `hash` the hash of the previous hash and of the event itself.
 * `brokenAt` is the seq that belongs at the first place where that fails, which names the event
 * that was changed (its own seq), removed (the missing seq: 4, 6 → 5) or moved (two swapped
 * events k and k+1 → k). What the chain cannot show is events removed from its newest end: the
 * count (`events`) and the newest hash are what to compare with a copy kept elsewhere.
 */
export async function verifyChain(anchor: AuditAnchor, events: AsyncIterable<AuditEvent>): Promise<ChainFinding> {
  let seq = anchor.seq
  let hash = anchor.hash
  let n = 0
  for await (const e of events) {
    const expected = seq + 1
    if (e.seq !== expected || typeof e.hash !== 'string' || !hashes(hash, e)) return { ok: false, brokenAt: expected }
    seq = expected
    hash = e.hash
    n++
  }
  return { ok: true, events: n }
}

/** whether `e.hash` chains it to `previous` (a value JSON cannot hold is a broken event, not a crash) */
function hashes(previous: string, e: AuditEvent): boolean {
  try {
    return chainHash(previous, e) === e.hash
  } catch {
    return false
  }
}

/** Which events a read wants: the store's own filters, and `email` (matched here, not by the store). */
export interface AuditFilter {
  userId?: string
  event?: string
  /** ms */
  since?: number
  /** an exact canonical email, for a user no longer in the store (a deleted one, an unknown email) */
  email?: string
  /** text each event's email, user id or event name must contain (case-insensitive) */
  text?: string
}

/** events read per store query */
const PAGE = 500

/**
 * The newest events matching `filter`, newest first, at most `limit`. The store filters what it
 * can (user id, event, time); `email` and `text` are matched here on pages read newest first,
 * at most `scan` events read in all (default: no bound).
 */
export async function readAudit(store: Pick<Store, 'auditEvents'>, filter: AuditFilter, limit: number, scan = Infinity): Promise<AuditEvent[]> {
  const query: Omit<AuditQuery, 'limit'> = {}
  if (filter.userId !== undefined) query.userId = filter.userId
  if (filter.event !== undefined) query.event = filter.event
  if (filter.since !== undefined) query.since = filter.since
  const text = filter.text?.trim().toLowerCase() ?? ''
  const local = filter.email !== undefined || text !== ''
  const keep = (e: AuditEvent): boolean =>
    (filter.email === undefined || e.email === filter.email) &&
    (text === '' || [e.email, e.userId, e.event].some((v) => v !== null && v.toLowerCase().includes(text)))
  if (!local) return store.auditEvents({ ...query, limit })
  const out: AuditEvent[] = []
  let read = 0
  let before: number | undefined
  while (out.length < limit && read < scan) {
    const size = Math.min(PAGE, scan - read)
    const page = await store.auditEvents(before === undefined ? { ...query, limit: size } : { ...query, limit: size, before })
    read += page.length
    for (const e of page) if (keep(e) && out.length < limit) out.push(e)
    if (page.length < size) break
    before = page[page.length - 1]!.seq
  }
  return out
}
