/**
 * `authctl audit list | verify` computed and printed in process, on a store that holds a built
 * chain: the filters, the bad-flag sentences, the 80-column list, and the verify findings.
 */
import t from 'tap'
import { auditLines, auditList, auditListView, auditVerify, auditVerifyFailure, auditVerifyView, parseLimit, parseSince } from '../../src/cli/commands/audit.js'
import type { StoreDeps } from '../../src/cli/deps.js'
import { exitCodes } from '../../src/exit-codes.js'
import { renderView } from '../../src/cli/output.js'
import { auditEventsHelp, AUDIT_EVENTS } from '../../src/core/audit-events.js'
import type { CliErrorCode } from '../../src/errors.js'
import { GENESIS } from '../../src/store/audit-chain.js'
import type { AuditEvent, AuditQuery } from '../../src/store/store.js'
import { buildChain, draft, iterate, T0 } from '../helpers/audit.js'

function depsOver(chain: AuditEvent[], users: Record<string, string> = {}) {
  const queries: AuditQuery[] = []
  const deps = {
    now: () => T0 + 3600_000,
    store: {
      auditEvents: async (q: AuditQuery) => {
        queries.push(q)
        return chain
          .filter((e) => (q.before === undefined || e.seq < q.before) && (q.userId === undefined || e.userId === q.userId) && (q.event === undefined || e.event === q.event))
          .filter((e) => q.since === undefined || Date.parse(e.time) >= q.since)
          .reverse()
          .slice(0, q.limit)
      },
      auditChain: <T>(walk: (anchor: typeof GENESIS, events: AsyncIterable<AuditEvent>) => Promise<T>) => walk(GENESIS, iterate(chain)),
    },
    admin: { findUser: (ref: string) => (users[ref] === undefined ? undefined : { id: users[ref], email: ref }) },
  } as unknown as StoreDeps
  return { deps, queries }
}

/** a usage error (exit 2) with this code and sentence */
const usage = (code: CliErrorCode, message: RegExp) => {
  if (exitCodes[code] !== 2) throw new Error(`${code} is not a usage error`)
  return { name: 'AppError', code, message }
}

t.test('--limit: 1 to 10000, default 50; anything else is a usage error', async (t) => {
  t.equal(parseLimit(undefined), 50)
  t.equal(parseLimit('1'), 1)
  t.equal(parseLimit('10000'), 10000)
  for (const bad of ['0', '-1', '10001', '1.5', 'ten', '', ' 5', '1e3']) {
    t.throws(() => parseLimit(bad), usage('AUDIT_LIMIT_INVALID', /^--limit takes a whole number from 1 to 10000 \(got ".*"\)\.$/), bad)
  }
})

t.test('--since: a duration back from now, or an ISO time (UTC unless it says); anything else is a usage error', async (t) => {
  const now = T0
  t.equal(parseSince('30m', now), now - 30 * 60_000)
  t.equal(parseSince('7d', now), now - 7 * 86400_000)
  t.equal(parseSince('2025-03-04', now), Date.UTC(2025, 2, 4))
  t.equal(parseSince('2025-03-04T09:05:00Z', now), T0)
  t.equal(parseSince('2025-03-04T09:05', now), T0, 'no zone: UTC')
  t.equal(parseSince('2025-03-04 09:05:00.250', now), T0 + 250)
  t.equal(parseSince('2025-03-04T11:05:00+02:00', now), T0)
  t.equal(parseSince('2024-02-29', now), Date.UTC(2024, 1, 29), 'a leap day')
  // days the calendar does not have: Date.parse would roll them over into the next month
  for (const bad of ['yesterday', '30', '1h30m', '-5m', '2025-13-45', '2025-03-04T25:00Z', '99999999999999999d', '', '2025-02-30', '2025-02-29', '2025-04-31T10:00Z', '2025-01-01T24:00Z', '2025-01-01T10:60Z', '2025-00-10']) {
    t.throws(() => parseSince(bad, now), usage('AUDIT_SINCE_INVALID', /^--since takes a duration \(30s, 15m, 12h, 30d\) or an ISO 8601 time \(2025-03-04T09:05:00Z\), not ".*"\.$/), bad)
  }
})

t.test('audit list: --event must be a name of the log; --user resolves an email or id', async (t) => {
  const chain = buildChain(30)
  const { deps, queries } = depsOver(chain, { 'user1@example.com': 'user-1' })
  await t.rejects(auditList(deps, { event: 'login' }), usage('AUDIT_EVENT_UNKNOWN', /^"login" is not an audit event name \(authctl audit list --help lists them\)\.$/))
  await t.rejects(auditList(deps, { user: '  ' }), usage('AUDIT_USER_EMPTY', /^--user takes an email or a user id\.$/))
  await t.rejects(auditList(deps, { limit: '0' }), usage('AUDIT_LIMIT_INVALID', /--limit/))

  const all = await auditList(deps, {})
  t.same(all.events.map((e) => e.seq), chain.map((e) => e.seq).reverse(), 'newest first')
  t.equal(all.filtered, false)

  queries.length = 0
  const mine = await auditList(deps, { user: 'user1@example.com', event: 'login.failure', limit: '3' })
  t.same(queries, [{ userId: 'user-1', event: 'login.failure', limit: 3 }], 'the user as an id, in the store query')
  t.same(mine.events.map((e) => e.seq), [26, 20, 14])

  // an email no user has now (deleted, or never registered): matched on the events' email field
  const gone = await auditList(deps, { user: ' USER2@Example.COM ', limit: '100' })
  t.ok(gone.events.length === 10 && gone.events.every((e) => e.email === 'user2@example.com'))
  // an id no user has now: a deleted user's events by id
  t.equal((await auditList(deps, { user: 'user-0' })).events.length, 10)

  const since = await auditList(deps, { since: '2025-03-04T09:05:25Z' })
  t.same(since.events.map((e) => e.seq), [30, 29, 28, 27, 26])
})

t.test('the list fits 80 columns: two lines per event, the second cut with …; control characters escaped', async (t) => {
  const events = buildChain(3, GENESIS, (i) =>
    i === 0
      ? draft(0, { actor: 'authctl:root', event: 'admin.sessions.revoke', ip: null, userAgent: null, sessionId: null, detail: { revoked: 3 } })
      : i === 1
        ? draft(1, { email: `${'very-long-local-part'.repeat(3)}@example.com`, userAgent: `Mozilla/5.0 ${'x'.repeat(100)}` })
        : draft(2, { email: null, userId: null, userAgent: 'evil\u001b[2J', detail: { reason: 'has space' } }),
  ).reverse()
  const lines = auditLines(events)
  t.ok(lines.every((l) => [...l].length <= 80), lines.map((l) => [...l].length).join(' '))
  t.same(lines, [
    '    SEQ  TIME (UTC)           EVENT                  USER',
    '      3  2025-03-04 09:05:02  login.success          -',
    '         api  ip=203.0.113.7  reason="has space"  sid=sess-2  ua=evil\\x1b[2J',
    '      2  2025-03-04 09:05:01  login.failure          very-long-local-partvery-l…',
    '         api  ip=203.0.113.7  reason=bad_password  ua=Mozilla/5.0 xxxxxxxxxxxxx…',
    '      1  2025-03-04 09:05:00  admin.sessions.revoke  user0@example.com',
    '         authctl:root  revoked=3',
  ])
  t.equal(renderView(auditListView({ events: [], filtered: false })), 'No audit events.\n')
  t.equal(renderView(auditListView({ events: [], filtered: true })), 'No audit events match.\n')
  // an eight-digit seq widens its column and narrows the user's
  const big = auditLines([{ ...events[1]!, seq: 12345678 }])
  t.ok(big.every((l) => [...l].length <= 80))
  t.match(big[1], /^12345678 {2}2025/)
})

t.test('the help lists every event name within 80 columns', async (t) => {
  const help = auditEventsHelp()
  for (const name of AUDIT_EVENTS) t.match(help, name)
  t.ok(help.split('\n').every((l) => l.length <= 78))
})

t.test('audit verify: intact → its count; broken → the seq, and a sentence for stderr', async (t) => {
  const chain = buildChain(12)
  const intact = await auditVerify(depsOver(chain).deps)
  t.same(intact, { ok: true, events: 12 })
  t.equal(renderView(auditVerifyView(intact)), 'Audit log intact: 12 events.\n')
  t.equal(auditVerifyFailure(intact), null)
  const broken = await auditVerify(depsOver(chain.filter((e) => e.seq !== 9)).deps)
  t.same(broken, { ok: false, brokenAt: 9 })
  t.equal(renderView(auditVerifyView(broken)), 'Audit log broken at event 9.\n')
  t.equal(auditVerifyFailure(broken), 'Event 9 of the audit log was changed, removed or moved after it was written.')
})
