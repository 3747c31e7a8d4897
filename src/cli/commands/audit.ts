/** authctl audit list | verify: compute only, no printing. */
import { parseDuration } from '../../config/duration.js'
import { isAuditEventName, readAudit, verifyChain, type AuditFilter, type ChainFinding } from '../../core/audit.js'
import { canonicalEmail } from '../../core/email.js'
import type { AuditEvent } from '../../store/store.js'
import type { StoreDeps } from '../deps.js'
import { AppError, quoted } from '../../errors.js'
import { cell, type View } from '../output.js'

export const LIST_DEFAULT = 50
export const LIST_MAX = 10_000

export interface AuditListArgs {
  user?: string
  event?: string
  since?: string
  limit?: string
}

/** `--limit`: a whole number from 1 to LIST_MAX (default LIST_DEFAULT) */
export function parseLimit(text: string | undefined): number {
  if (text === undefined) return LIST_DEFAULT
  const n = Number(text)
  if (!/^\d+$/.test(text) || n < 1 || n > LIST_MAX) throw new AppError('AUDIT_LIMIT_INVALID', { params: { max: LIST_MAX, got: quoted(text) } })
  return n
}

// a date, or a date and time with an optional zone (none: UTC, as authctl prints times)
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i

/** the date and time are ones the calendar has: Date.parse rolls 2025-02-30 over to March 2 */
function onTheCalendar(m: RegExpExecArray): boolean {
  const [y, mo, d, h = '0', mi = '0', s = '0'] = m.slice(1, 7).map((v) => (v === undefined ? undefined : Number(v)))
  const day = new Date(Date.UTC(y!, mo! - 1, d!))
  return day.getUTCMonth() === mo! - 1 && day.getUTCDate() === d && Number(h) < 24 && Number(mi) < 60 && Number(s) < 60
}

/** `--since`: a duration back from `now` (`30s`, `15m`, `12h`, `30d`) or an ISO 8601 time; ms */
export function parseSince(text: string, now: number): number {
  const t = text.trim()
  if (/^\d+(?:ms|s|m|h|d)$/.test(t)) {
    try {
      return now - parseDuration(t)
    } catch {
      // too large: said below
    }
  }
  const iso = ISO_TIME.exec(t)
  if (iso !== null && onTheCalendar(iso)) {
    const zoned = t.length > 10 && iso[7] === undefined ? `${t.replace(' ', 'T')}Z` : t.replace(' ', 'T')
    const ms = Date.parse(zoned)
    if (!Number.isNaN(ms)) return ms
  }
  throw new AppError('AUDIT_SINCE_INVALID', { params: { got: quoted(text) } })
}

export function parseEvent(text: string): string {
  if (isAuditEventName(text.trim())) return text.trim()
  throw new AppError('AUDIT_EVENT_UNKNOWN', { params: { got: quoted(text) } })
}

export interface AuditListDoc {
  /** newest first */
  events: AuditEvent[]
  /** whether a filter was given (only for the empty message; not in --json) */
  filtered?: boolean
}

/**
 * `audit list`: the newest events first. `--user` is an email or an id: the user who has it now
 * (their events by id), else, for an email, the events carrying that email (a deleted user, a
 * failed login with an unknown email), else the events of that id (a deleted user's).
 */
export async function auditList(deps: StoreDeps, args: AuditListArgs): Promise<AuditListDoc> {
  const limit = parseLimit(args.limit)
  const filter: AuditFilter = {}
  if (args.event !== undefined) filter.event = parseEvent(args.event)
  if (args.since !== undefined) filter.since = parseSince(args.since, deps.now())
  if (args.user !== undefined) {
    const ref = args.user.trim()
    if (ref === '') throw new AppError('AUDIT_USER_EMPTY')
    const user = await deps.admin.findUser(ref)
    if (user !== undefined) filter.userId = user.id
    else if (ref.includes('@')) filter.email = canonicalEmail(ref)
    else filter.userId = ref
  }
  const events = await readAudit(deps.store, filter, limit)
  return { events, filtered: Object.keys(filter).length > 0 }
}

/** the document `--json` prints: the events as kept, every field */
export const auditListJson = (d: AuditListDoc): { events: AuditEvent[] } => ({ events: d.events })

const SEQ_WIDTH = 7
const TIME_WIDTH = 19
const EVENT_WIDTH = 21
const LINE = 80

/**
 * The plain-text list, two lines per event, at most 80 columns (README, "Audit log"):
 *
 * ```
 *     SEQ  TIME (UTC)           EVENT                  USER
 *      42  2025-03-04 09:05:07  login.failure          alice@example.com
 *          api  ip=203.0.113.7  reason=bad_password  ua=curl/8.5.0
 * ```
 * The first line: seq, time to the second, event, and the user's email (else its id, else `-`);
 * the second, indented: the actor, `ip=`, the detail as `key=value`, `sid=` (the session) and
 * `ua=` (the user agent), cut with `…` at column 80. Control characters are shown escaped.
 */
export function auditLines(events: readonly AuditEvent[]): string[] {
  const seqWidth = Math.max(SEQ_WIDTH, ...events.map((e) => String(e.seq).length))
  const userWidth = LINE - (seqWidth + 2 + TIME_WIDTH + 2 + EVENT_WIDTH + 2)
  const indent = ' '.repeat(seqWidth + 2)
  const head = `${'SEQ'.padStart(seqWidth)}  ${'TIME (UTC)'.padEnd(TIME_WIDTH)}  ${'EVENT'.padEnd(EVENT_WIDTH)}  USER`
  const out = [head]
  for (const e of events) {
    const time = e.time.slice(0, 19).replace('T', ' ')
    const who = cell(e.email ?? e.userId ?? '-', userWidth)
    out.push(`${String(e.seq).padStart(seqWidth)}  ${time.padEnd(TIME_WIDTH)}  ${cell(e.event, EVENT_WIDTH).padEnd(EVENT_WIDTH)}  ${who}`.trimEnd())
    out.push(indent + cell(facts(e).join('  '), LINE - indent.length))
  }
  return out
}

/** the second line's parts */
function facts(e: AuditEvent): string[] {
  const parts = [e.actor]
  if (e.ip !== null) parts.push(`ip=${e.ip}`)
  for (const [k, v] of Object.entries(e.detail)) parts.push(`${k}=${typeof v === 'string' && /^[^\s"]+$/.test(v) ? v : JSON.stringify(v)}`)
  if (e.sessionId !== null) parts.push(`sid=${e.sessionId}`)
  if (e.userAgent !== null) parts.push(`ua=${e.userAgent}`)
  return parts
}

export const auditListView = (d: AuditListDoc): View => ({
  lines: d.events.length === 0 ? [d.filtered === true ? 'No audit events match.' : 'No audit events.'] : auditLines(d.events),
})

/** `audit verify`: the chain recomputed from its anchor over every kept event */
export function auditVerify(deps: StoreDeps): Promise<ChainFinding> {
  return deps.store.auditChain(verifyChain)
}

export const auditVerifyView = (f: ChainFinding): View => ({
  lines: [f.ok ? `Audit log intact: ${f.events} events.` : `Audit log broken at event ${f.brokenAt}.`],
})

/** exit 1's sentence on stderr */
export const auditVerifyFailure = (f: ChainFinding): string | null =>
  f.ok ? null : `Event ${f.brokenAt} of the audit log was changed, removed or moved after it was written.`
