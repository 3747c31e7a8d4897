/**
 * The terminal UI's fifth view, Audit: the reducer's following of new events and its filter, and
 * the view rendered by Ink (ink-testing-library) on a fake whose log grows while it runs.
 */
import t from 'tap'
import type { AuditRow } from '../../src/tui/deps.js'
import type { KeyPress } from '../../src/tui/keymap.js'
import { keysToActions } from '../../src/tui/keymap.js'
import { reducer } from '../../src/tui/reducer.js'
import { initialState, mode, selectedIndex, visibleAudit, type State } from '../../src/tui/state.js'
import { auditRow, fakeDeps, user, type FakeDeps } from './fake-deps.js'
import { flat, KEY, mount, sleep } from './mount.js'

const alice = user('alice@example.com')
const bob = user('bob@example.com')

function log(): AuditRow[] {
  return [
    auditRow('register', alice),
    auditRow('login.success', alice, { sessionId: 'sess-alice-1' }),
    auditRow('login.failure', bob, { detail: { reason: 'bad_password' } }),
    auditRow('admin.user.disable', bob, { actor: 'authctl:root', ip: null, userAgent: null, detail: { revokedSessions: 1 } }),
  ]
}

// ---- the reducer ---------------------------------------------------------------------------

function press(state: State, ...keys: Array<string | KeyPress>): State {
  let s = state
  for (const k of keys) {
    const [input, key] = typeof k === 'string' ? [k, {}] : ['', k]
    s = keysToActions(s, input, key, reducer).reduce(reducer, s)
  }
  return s
}

const selected = (s: State): AuditRow | undefined => visibleAudit(s)[selectedIndex(visibleAudit(s), s.lists.audit)]

t.test('5 opens Audit; new events come in at the top and the selection follows them while it is on the first row', async (t) => {
  const rows = log()
  let s = press(initialState({ smokeUrl: 'http://127.0.0.1:8080', smokeSteps: [] }), '5')
  t.equal(s.view, 'audit')
  t.equal(s.audit.rows, null, 'nothing read yet')
  s = reducer(s, { type: 'auditLoaded', rows: rows.slice(0, 3).reverse() })
  t.equal(selected(s)?.event, 'login.failure', 'the newest')
  s = reducer(s, { type: 'auditLoaded', rows: [...rows].reverse() })
  t.equal(selected(s)?.event, 'admin.user.disable', 'follows the newest in')

  // moved down: the selection stays on its event as others come in
  s = press(s, { downArrow: true })
  t.equal(selected(s)?.event, 'login.failure')
  const newer = auditRow('logout', alice)
  s = reducer(s, { type: 'auditLoaded', rows: [newer, ...[...rows].reverse()] })
  t.equal(selected(s)?.event, 'login.failure', 'stays on its event')

  // back on top, and with the details open, an event coming in does not move them
  s = press(s, 'g', { return: true })
  t.equal(selected(s)?.event, 'logout')
  t.ok(s.lists.audit.detail)
  s = reducer(s, { type: 'auditLoaded', rows: [auditRow('mfa.enable', alice), newer, ...[...rows].reverse()] })
  t.equal(selected(s)?.event, 'logout', 'the details stay on their event')
})

t.test('/ filters by user email or id or event name as one types; a failed read is kept on screen until a good one', async (t) => {
  let s = press(initialState({ smokeUrl: 'http://127.0.0.1:8080', smokeSteps: [] }), '5')
  s = reducer(s, { type: 'auditLoaded', rows: log().reverse() })
  s = press(s, '/')
  t.equal(mode(s), 'filter')
  s = press(s, 'bob')
  t.same(visibleAudit(s).map((e) => e.event), ['admin.user.disable', 'login.failure'])
  s = press(s, { escape: true }, '/', 'login.')
  t.same(visibleAudit(s).map((e) => e.event), ['login.failure', 'login.success'])
  s = press(s, { escape: true }, '/', alice.id)
  t.same(visibleAudit(s).map((e) => e.event), ['login.success', 'register'])
  s = reducer(s, { type: 'auditFailed', message: 'Cannot read the audit log: EIO' })
  t.equal(s.audit.error, 'Cannot read the audit log: EIO')
  t.equal(visibleAudit(s).length, 2, 'the rows stay')
  s = reducer(s, { type: 'auditLoaded', rows: log().reverse() })
  t.equal(s.audit.error, null)
})

// ---- the view ------------------------------------------------------------------------------

function seeded(): FakeDeps {
  const d = fakeDeps({ users: [alice, bob] })
  d.audit.push(...log())
  return d
}

t.test('Audit: the fifth tab; newest first, fitting 80×24; Enter opens an event, Esc goes back', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  t.equal(deps.auditReads.length, 0, 'the log is not read while another view shows')
  await ui.press('5')
  const f = await ui.waitFor('admin.user.disable')
  const lines = f.split('\n')
  t.ok(lines.length <= 23, `fits 24 rows (${lines.length} lines)`)
  t.ok(lines.every((l) => [...l].length <= 80), 'fits 80 columns')
  t.match(lines[1], /\[5 Audit\]/)
  t.match(f, /SEQ\s+TIME \(UTC\)\s+EVENT\s+USER/)
  const rows = lines.filter((l) => /^[> ] \d+ +2025-/.test(l))
  t.equal(rows.length, 4)
  t.match(rows[0], /^> \d+\s+2025-03-04 09:04:\d\d\s+admin\.user\.disable\s+bob@example\.com/)
  t.match(rows[3], /register\s+alice@example\.com/)
  t.match(f, /^ {2}4 events$/m)
  t.match(f, /\/ filter by user or event/)
  t.match(f, /1-5\/Tab views/)

  await ui.press(KEY.down, KEY.enter)
  const d = await ui.waitFor(/Event \d+: login\.failure[\s\S]*detail /)
  t.match(d, /Event \d+: login\.failure/)
  t.match(d, /actor\s+api/)
  t.match(d, /user\s+bob@example\.com \(id-bob\)/)
  t.match(d, /ip\s+203\.0\.113\.7/)
  t.match(d, /detail\s+\{"reason":"bad_password"\}/)
  await ui.press(KEY.esc)
  await ui.waitFor(/^ {2}4 events$/m)
})

t.test('Audit: new events appear live, at the top, without a key pressed', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.press('5')
  await ui.waitFor('admin.user.disable')
  deps.audit.push(auditRow('session.revoke', alice, { sessionId: 'sess-alice-1' }))
  const f = await ui.waitFor('session.revoke')
  t.match(f.split('\n').find((l) => l.startsWith('>')) ?? '', /session\.revoke\s+alice@example\.com/, 'selected: the list follows')
  t.match(f, /^ {2}5 events$/m)
})

t.test('Audit: / filters by user or event; the filter is read from the store as it changes', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.press('5')
  await ui.waitFor('admin.user.disable')
  await ui.press('/', 'a', 'l', 'i')
  let f = await ui.waitFor('Filter: ali')
  t.notMatch(f, 'bob@example.com')
  t.match(f, /\(2 events\)/)
  for (let i = 0; i < 100 && !deps.auditReads.some((r) => r.filter === 'ali'); i++) await sleep(10)
  t.ok(deps.auditReads.some((r) => r.filter === 'ali' && r.limit === 200), 'read with the filter')
  await ui.press(KEY.esc, '/', ...'login.failure', KEY.enter)
  f = await ui.waitFor('matching "login.failure"')
  t.match(f, /^ {2}1 event matching "login\.failure"$/m)
  t.match(f, /login\.failure\s+bob@example\.com/)
  await ui.press(KEY.esc, '/', 'z', 'z', 'z')
  await ui.waitFor('No events of a matching user or event.')
})

t.test('Audit: ? lists its keys; a failed read says so and the UI goes on', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.press('5')
  await ui.waitFor('admin.user.disable')
  await ui.press('?')
  let f = await ui.waitFor('Keys: Audit')
  t.match(f, /\/\s+filter by user or event/)
  t.match(f, /1 2 3 4 5\s+Users, Sessions, Keys, Smoke, Audit/)
  t.match(flat(f), /New events come in at the top within a second/)
  t.ok(f.split('\n').every((l) => [...l].length <= 80))
  await ui.press(KEY.esc)
  deps.auditError = 'EIO: i/o error'
  f = await ui.waitFor('Error: Cannot read the audit log: EIO: i/o error')
  t.match(f, 'admin.user.disable', 'the last rows stay')
  deps.auditError = null
  await ui.waitFor('Error:', true)
  await ui.press(KEY.tab)
  await ui.waitFor('[1 Users]')
})
