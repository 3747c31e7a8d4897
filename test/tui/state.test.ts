/**
 * The terminal UI's state and its selectors (src/tui/state.ts), on plain data, without the
 * reducer's keys: the first state, the rows each view shows and in what order, where the selection
 * is when its row goes, pages, which input has the keyboard, whose status line shows, what counts
 * as busy, and what a running task is called.
 */
import t from 'tap'
import {
  initialState,
  isBusy,
  matchesFilter,
  mode,
  pageStart,
  rowId,
  selectedIndex,
  selectedKey,
  selectedSession,
  selectedUser,
  taskLabel,
  tooSmall,
  viewNotice,
  visibleAudit,
  visibleKeys,
  visibleRows,
  visibleSessions,
  visibleUsers,
  type ListName,
  type ListState,
  type State,
  type Task,
} from '../../src/tui/state.js'
import type { Snapshot } from '../../src/tui/deps.js'
import { auditRow, key, session, user } from './fake-deps.js'

const STEPS = ['login', 'me']
const alice = user('alice@example.com')
const bob = user('bob@example.com')
const carol = user('carol@example.org')

const base = (): State => initialState({ smokeUrl: 'http://127.0.0.1:8080', smokeSteps: STEPS })
const withList = (s: State, list: ListName, over: Partial<ListState>): State => ({ ...s, lists: { ...s.lists, [list]: { ...s.lists[list], ...over } } })
const loaded = (snapshot: Partial<Snapshot>): State => ({ ...base(), snapshot: { users: [], sessions: [], keys: [], ...snapshot } })

t.test('the first state: Users, nothing read yet, the smoke fields with the first empty one selected', async (t) => {
  const s = base()
  t.equal(s.view, 'users')
  t.equal(s.snapshot, null)
  t.same(visibleUsers(s), [], 'no rows before the first read')
  t.same(visibleAudit(s), [])
  t.same(
    s.smoke.fields.map((f) => [f.label, f.value, f.hidden]),
    [
      ['URL', 'http://127.0.0.1:8080', false],
      ['Email', '', false],
      ['Password', '', true],
    ],
    'the URL from the config, the password hidden',
  )
  t.equal(s.smoke.focus, 1, 'the Email: the first field to fill in')
  t.equal(initialState({ smokeUrl: '', smokeSteps: STEPS }).smoke.focus, 0, 'no URL in the config: the URL')
  t.same(s.smoke.steps, [
    { name: 'login', status: 'pending' },
    { name: 'me', status: 'pending' },
  ])
  t.equal(s.listRows, 14, 'rows a list shows, by default')
  t.equal(initialState({ smokeUrl: '', smokeSteps: [], listRows: 5 }).listRows, 5)
  t.notOk(tooSmall(s), 'the assumed terminal fits the screen')
  t.equal(mode(s), 'nav')
  t.notOk(isBusy(s, 'admin') || isBusy(s, 'smoke'))
})

t.test('a filter matches anywhere in the text, in any case, its spaces around ignored; empty matches all', async (t) => {
  t.ok(matchesFilter('alice@example.com', ''))
  t.ok(matchesFilter('alice@example.com', 'EXAMPLE'))
  t.ok(matchesFilter('Bob@Example.com', 'bob@ex'), 'the text in any case too')
  t.ok(matchesFilter('alice@example.com', '  alice '))
  t.notOk(matchesFilter('alice@example.com', 'bob'))
  t.notOk(matchesFilter('alice@example.com', 'alice bob'))
})

t.test('users by email (the filter on the email), sessions most recently used first, keys newest first', async (t) => {
  const s = loaded({
    users: [carol, bob, alice],
    sessions: [session('s-b', alice, { lastUsedAt: 5 }), session('s-c', carol, { lastUsedAt: 9 }), session('s-a', alice, { lastUsedAt: 5 })],
    keys: [key('k-old', { createdAt: 1 }), key('k-b', { createdAt: 7 }), key('k-a', { createdAt: 7 })],
  })
  t.same(visibleUsers(s).map((u) => u.email), ['alice@example.com', 'bob@example.com', 'carol@example.org'], 'by email')
  t.same(visibleSessions(s).map((x) => x.id), ['s-c', 's-a', 's-b'], 'most recently used first; a tie by id')
  t.same(visibleKeys(s).map((k) => k.kid), ['k-a', 'k-b', 'k-old'], 'newest first; a tie by kid')
  t.same(s.snapshot!.keys.map((k) => k.kid), ['k-old', 'k-b', 'k-a'], 'the snapshot itself is not reordered')
  t.same(s.snapshot!.users.map((u) => u.email), ['carol@example.org', 'bob@example.com', 'alice@example.com'])

  const f = withList(withList(s, 'users', { filter: 'EXAMPLE.COM' }), 'sessions', { filter: 'carol' })
  t.same(visibleUsers(f).map((u) => u.email), ['alice@example.com', 'bob@example.com'])
  t.same(visibleSessions(f).map((x) => x.id), ['s-c'], 'sessions by their user’s email')
  t.same(visibleRows(withList(s, 'keys', { filter: 'k-old' }), 'keys').length, 3, 'keys have no filter')
})

t.test('audit events newest first; the filter finds the email, the user id or the event name', async (t) => {
  const rows = [auditRow('register', alice), auditRow('login.failure', bob), auditRow('keys.rotate', null, { actor: 'authctl:root' })]
  const s: State = { ...base(), audit: { rows, error: null } }
  t.same(visibleAudit(s).map((e) => e.event), ['keys.rotate', 'login.failure', 'register'])
  const by = (filter: string): string[] => visibleAudit(withList(s, 'audit', { filter })).map((e) => e.event)
  t.same(by('alice@'), ['register'], 'the email')
  t.same(by('ID-BOB'), ['login.failure'], 'the user id')
  t.same(by('rotate'), ['keys.rotate'], 'the event name, on an event with no user')
  t.same(by('authctl'), [], 'not the actor')
  t.same(by('nobody'), [])
})

t.test('each row is known by its id: a user’s and a session’s id, a key’s kid, an event’s seq', async (t) => {
  t.equal(rowId(alice), alice.id)
  t.equal(rowId(session('sess-1', alice)), 'sess-1')
  t.equal(rowId(key('kid-1')), 'kid-1')
  t.equal(rowId(auditRow('register', alice, { seq: 42 })), '42')
})

t.test('the selection is its row wherever it moved; when the row is gone, the same place, within the rows', async (t) => {
  const rows = [alice, bob, carol]
  t.equal(selectedIndex([], { selectedId: alice.id, index: 2, filter: '', exact: false, filtering: false, detail: false }), -1, 'no rows: none')
  const list = (selectedId: string | null, index: number): ListState => ({ selectedId, index, filter: '', exact: false, filtering: false, detail: false })
  t.equal(selectedIndex(rows, list(carol.id, 0)), 2, 'the row, not the stale index')
  t.equal(selectedIndex(rows, list('gone', 1)), 1, 'gone: the same place')
  t.equal(selectedIndex(rows, list('gone', 7)), 2, 'past the end: the last row')
  t.equal(selectedIndex(rows, list(null, -3)), 0, 'never before the first')
  t.equal(selectedIndex(rows, list(null, 1)), 1, 'nothing selected by id: the index')

  const s = withList(loaded({ users: [carol, bob, alice], sessions: [session('s-1', alice), session('s-2', carol)], keys: [key('k-1')] }), 'users', { filter: 'example.com', selectedId: carol.id, index: 1 })
  t.equal(selectedUser(s)?.email, 'bob@example.com', 'a selected row the filter hides: the same place among the rows shown')
  t.equal(selectedSession(withList(s, 'sessions', { selectedId: 's-2' }))?.id, 's-2')
  t.equal(selectedKey(s)?.kid, 'k-1')
  t.equal(selectedUser(loaded({})), undefined, 'an empty list: no selection')
})

t.test('a page starts at a multiple of the rows shown', async (t) => {
  t.equal(pageStart(-1, 10), 0)
  t.equal(pageStart(0, 10), 0)
  t.equal(pageStart(9, 10), 0)
  t.equal(pageStart(10, 10), 10)
  t.equal(pageStart(25, 10), 20)
  t.equal(pageStart(5, 1), 5)
})

t.test('what has the keyboard: a terminal too small, then help, a question, a form, the smoke fields or a filter', async (t) => {
  const s = base()
  const form = { kind: 'addUser' as const, title: 'Add user', userId: null, email: null, fields: [], focus: 0, error: null }
  const confirm = { prompt: 'Delete?', task: { kind: 'rotateKey' } as Task }
  const everything: State = { ...withList(s, 'users', { filtering: true }), help: true, confirm, form, terminal: { columns: 79, rows: 24 } }
  t.equal(mode(everything), 'small')
  t.equal(mode({ ...everything, terminal: { columns: 80, rows: 24 } }), 'help')
  t.equal(mode({ ...everything, terminal: { columns: 80, rows: 24 }, help: false }), 'confirm')
  t.equal(mode({ ...everything, terminal: { columns: 80, rows: 24 }, help: false, confirm: null }), 'form')
  t.equal(mode({ ...everything, terminal: { columns: 80, rows: 24 }, help: false, confirm: null, form: null }), 'filter')
  t.equal(mode({ ...s, view: 'sessions' }), 'nav', 'the filter is the view’s own')
  t.equal(mode({ ...s, view: 'smoke' }), 'nav')
  t.equal(mode({ ...s, view: 'smoke', smoke: { ...s.smoke, editing: true } }), 'smokeEdit')
  t.ok(tooSmall({ ...s, terminal: { columns: 80, rows: 23 } }), '80×23 is too small')
  t.ok(tooSmall({ ...s, terminal: { columns: 79, rows: 100 } }), '79 columns are too few')
  t.notOk(tooSmall({ ...s, terminal: { columns: 80, rows: 24 } }), '80×24 fits')
})

t.test('a status line shows only on the view that made it', async (t) => {
  const s: State = { ...base(), notice: { kind: 'info', text: 'Deleted alice@example.com.', view: 'users' } }
  t.same(viewNotice(s), s.notice)
  t.equal(viewNotice({ ...s, view: 'keys' }), null)
  t.equal(viewNotice(base()), null)
})

t.test('busy: a smoke run and an admin task are counted apart', async (t) => {
  const s = base()
  const smoke: State = { ...s, tasks: [{ id: 1, task: { kind: 'smoke', url: 'u', email: 'e', password: 'p' }, view: 'smoke' }] }
  t.ok(isBusy(smoke, 'smoke'))
  t.notOk(isBusy(smoke, 'admin'), 'an admin task may run beside a smoke run')
  const admin: State = { ...s, tasks: [{ id: 2, task: { kind: 'rotateKey' }, view: 'keys' }] }
  t.ok(isBusy(admin, 'admin'))
  t.notOk(isBusy(admin, 'smoke'))
})

t.test('a running task is named for the status line, with whom or what it is about, never a password', async (t) => {
  const labels: Array<[Task, string]> = [
    [{ kind: 'addUser', email: 'ann@example.com', password: 'secret pw 1' }, 'Adding ann@example.com…'],
    [{ kind: 'setPassword', userId: 'u1', email: 'ann@example.com', password: 'secret pw 2' }, 'Setting the password of ann@example.com…'],
    [{ kind: 'setDisabled', userId: 'u1', email: 'ann@example.com', disabled: true }, 'Disabling ann@example.com…'],
    [{ kind: 'setDisabled', userId: 'u1', email: 'ann@example.com', disabled: false }, 'Enabling ann@example.com…'],
    [{ kind: 'removeUser', userId: 'u1', email: 'ann@example.com' }, 'Deleting ann@example.com…'],
    [{ kind: 'resetMfa', userId: 'u1', email: 'ann@example.com' }, 'Resetting the second factor of ann@example.com…'],
    [{ kind: 'revokeSession', sessionId: 's1', email: 'ann@example.com' }, 'Revoking sessions of ann@example.com…'],
    [{ kind: 'revokeUserSessions', userId: 'u1', email: 'ann@example.com' }, 'Revoking sessions of ann@example.com…'],
    [{ kind: 'rotateKey' }, 'Rotating the signing key…'],
    [{ kind: 'checkRevokeKey', kid: 'kid-1', prompt: 'Revoke?' }, 'Checking key kid-1…'],
    [{ kind: 'revokeKey', kid: 'kid-1' }, 'Revoking key kid-1…'],
    [{ kind: 'smoke', url: 'http://127.0.0.1:8080', email: 'ann@example.com', password: 'secret pw 3' }, 'Running the smoke test…'],
  ]
  for (const [task, label] of labels) {
    t.equal(taskLabel(task), label, task.kind)
    t.notMatch(taskLabel(task), /secret pw/, `${task.kind}: no password`)
  }
})
