/**
 * The terminal UI's state machine without Ink: keys go through the reducer exactly as the key
 * hook sends them, and operations show up as described tasks, not as calls.
 */
import t from 'tap'
import type { KeyPress } from '../../src/tui/keymap.js'
import { keysToActions } from '../../src/tui/keymap.js'
import { reducer, type Action } from '../../src/tui/reducer.js'
import { initialState, mode, selectedUser, visibleUsers, type State, type Task } from '../../src/tui/state.js'
import type { Snapshot } from '../../src/tui/deps.js'
import { key, session, user } from './fake-deps.js'

const STEPS = ['login', 'me', 'refresh', 'me_refreshed', 'logout', 'refresh_after_logout']
const alice = user('alice@example.com', { sessions: 2 })
const bob = user('bob@example.com', { disabled: true })
const carol = user('carol@example.com')
const snap = (over: Partial<Snapshot> = {}): Snapshot => ({
  users: [carol, alice, bob],
  sessions: [session('sess-a1', alice), session('sess-a2', alice, { lastUsedAt: 1 }), session('sess-c1', carol)],
  keys: [key('kid-active'), key('kid-old', { state: 'retiring', createdAt: 0, retiringAt: 5 })],
  ...over,
})

function start(over: Partial<Snapshot> = {}): State {
  return reducer(initialState({ smokeUrl: 'http://127.0.0.1:8080', smokeSteps: STEPS }), { type: 'loaded', snapshot: snap(over) })
}

/** keys as the hook sends them: each chunk split into single keys */
function press(state: State, ...keys: Array<string | KeyPress>): State {
  let s = state
  for (const k of keys) {
    const [input, key] = typeof k === 'string' ? [k, {}] : ['', k]
    s = keysToActions(s, input, key, reducer).reduce(reducer, s)
  }
  return s
}

/** one Ink input event with its own input and flags, as the key hook receives it */
const keyEvent = (state: State, input: string, key: KeyPress): State => keysToActions(state, input, key, reducer).reduce(reducer, state)

const ENTER: KeyPress = { return: true }
const ESC: KeyPress = { escape: true }
const DOWN: KeyPress = { downArrow: true }
const UP: KeyPress = { upArrow: true }
const TAB: KeyPress = { tab: true }
const SHIFT_TAB: KeyPress = { tab: true, shift: true }
const BACKSPACE: KeyPress = { delete: true }
const CTRL_C = { ctrl: true } as const

const tasks = (s: State): Task[] => s.tasks.map((x) => x.task)
const lastTaskId = (s: State): number => s.tasks.at(-1)!.id
const done = (s: State, result: Extract<Action, { type: 'taskDone' }>['result'] = {}): State =>
  reducer(s, { type: 'taskDone', id: lastTaskId(s), result })
const failed = (s: State, message: string): State => reducer(s, { type: 'taskFailed', id: lastTaskId(s), message })

t.test('lists users by email and selects the first; j/k and arrows move within bounds', async (t) => {
  let s = start()
  t.same(visibleUsers(s).map((u) => u.email), ['alice@example.com', 'bob@example.com', 'carol@example.com'])
  t.equal(selectedUser(s)?.email, 'alice@example.com')
  s = press(s, 'j')
  t.equal(selectedUser(s)?.email, 'bob@example.com')
  s = press(s, DOWN, DOWN, DOWN)
  t.equal(selectedUser(s)?.email, 'carol@example.com', 'stops at the last row')
  s = press(s, 'k', UP, UP, UP)
  t.equal(selectedUser(s)?.email, 'alice@example.com', 'stops at the first row')
  s = press(s, 'G')
  t.equal(selectedUser(s)?.email, 'carol@example.com')
  s = press(s, 'g')
  t.equal(selectedUser(s)?.email, 'alice@example.com')
})

t.test('the selection follows its row when the list changes around it, and takes the same place when the row goes', async (t) => {
  let s = press(start(), 'j')
  t.equal(selectedUser(s)?.email, 'bob@example.com')
  s = reducer(s, { type: 'loaded', snapshot: snap({ users: [carol, alice, bob, user('aaron@example.com')] }) })
  t.equal(selectedUser(s)?.email, 'bob@example.com', 'a user added above does not move the selection to another user')
  s = reducer(s, { type: 'loaded', snapshot: snap({ users: [carol, alice, user('aaron@example.com')] }) })
  t.equal(selectedUser(s)?.email, 'carol@example.com', 'bob deleted elsewhere: the row now in his place')
})

t.test('a details page whose row is removed elsewhere closes and says so, rather than show the row now in its place', async (t) => {
  let s = press(start(), 'j', ENTER)
  t.ok(s.lists.users.detail, 'bob opened')
  s = reducer(s, { type: 'loaded', snapshot: snap({ users: [carol, alice, user('aaron@example.com')] }) })
  t.equal(s.lists.users.detail, false, 'bob deleted elsewhere: his page closed')
  t.equal(s.notice?.text, 'That user no longer exists: it was removed elsewhere.')
  t.equal(selectedUser(s)?.email, 'alice@example.com', 'the list: the row now in his place selected, as with no page open')
  // a page stays open while its row is there, wherever the row moved
  s = press(start(), 'j', ENTER)
  s = reducer(s, { type: 'loaded', snapshot: snap({ users: [carol, alice, bob, user('aaron@example.com')] }) })
  t.ok(s.lists.users.detail, 'a user added above: still bob')
  t.equal(selectedUser(s)?.email, 'bob@example.com')
  t.same(s.notice, null)
  // keys: the next key's page, the key revoked elsewhere, must not become the active key's page
  s = press(start({ keys: [key('kid-active'), key('kid-next', { state: 'next' })] }), '3')
  s = press(s, 'j', ENTER)
  t.ok(s.lists.keys.detail)
  t.equal(s.lists.keys.selectedId, 'kid-next')
  s = reducer(s, { type: 'loaded', snapshot: snap({ keys: [key('kid-active')] }) })
  t.equal(s.lists.keys.detail, false, 'the revoked key\'s page closed')
  t.equal(s.notice?.text, 'That key no longer exists: it was revoked elsewhere.')
  // sessions: one ended (a logout) while its page is open
  s = press(start(), '2', ENTER)
  const open = s.lists.sessions.selectedId
  t.ok(s.lists.sessions.detail)
  s = reducer(s, { type: 'loaded', snapshot: snap({ sessions: snap().sessions.filter((x) => x.id !== open) }) })
  t.equal(s.lists.sessions.detail, false)
  t.equal(s.notice?.text, 'That session is no longer listed: it ended, or is no longer among the most recently used.')
})

t.test('acting from a details page: the page closes with the outcome on the status line, not as a removal made elsewhere', async (t) => {
  // delete bob from his page
  let s = press(start(), 'j', ENTER, 'x', 'y')
  s = done(s)
  t.equal(s.lists.users.detail, false)
  s = reducer(s, { type: 'loaded', snapshot: snap({ users: [carol, alice] }) })
  t.equal(s.notice?.text, 'Deleted bob@example.com.')
  // revoke a session from its page
  s = press(start(), '2', ENTER)
  const sid = s.lists.sessions.selectedId
  s = done(press(s, 'x', 'y'))
  s = reducer(s, { type: 'loaded', snapshot: snap({ sessions: snap().sessions.filter((x) => x.id !== sid) }) })
  t.match(s.notice?.text, /^Revoked a session of /)
  t.equal(s.lists.sessions.detail, false)
  // every session of its user, from one of them
  s = press(start(), '2', ENTER)
  const user = snap().sessions.find((x) => x.id === s.lists.sessions.selectedId)!.userId
  s = done(press(s, 'X', 'y'), { count: 2 })
  s = reducer(s, { type: 'loaded', snapshot: snap({ sessions: snap().sessions.filter((x) => x.userId !== user) }) })
  t.match(s.notice?.text, /^Revoked 2 sessions of /)
  // a key revoked from its page
  s = press(start(), '3', 'j', ENTER, 'x')
  s = done(s)
  t.ok(s.confirm, 'asked')
  s = done(press(s, 'y'))
  s = reducer(s, { type: 'loaded', snapshot: snap({ keys: [key('kid-active')] }) })
  t.equal(s.notice?.text, 'Revoked key kid-old.')
  t.equal(s.lists.keys.detail, false)
})

t.test('pages move by the rows the terminal has room for', async (t) => {
  const many = Array.from({ length: 40 }, (_, i) => user(`u${String(i).padStart(2, '0')}@example.com`))
  let s = reducer(start({ users: many }), { type: 'resize', columns: 80, rows: 24 })
  t.equal(s.listRows, 14, '24 rows leave 14 for the list')
  s = press(s, { pageDown: true })
  t.equal(selectedUser(s)?.email, 'u14@example.com')
  s = press(s, { pageDown: true }, { pageDown: true })
  t.equal(selectedUser(s)?.email, 'u39@example.com')
  s = press(s, { pageUp: true })
  t.equal(selectedUser(s)?.email, 'u25@example.com')
})

t.test('1-5 and Tab switch views; Shift-Tab goes back', async (t) => {
  let s = start()
  s = press(s, '3')
  t.equal(s.view, 'keys')
  s = press(s, TAB)
  t.equal(s.view, 'smoke')
  s = press(s, TAB)
  t.equal(s.view, 'audit')
  s = press(s, TAB)
  t.equal(s.view, 'users', 'Tab wraps around')
  s = press(s, SHIFT_TAB)
  t.equal(s.view, 'audit')
  s = press(s, '4')
  t.equal(s.view, 'smoke')
  s = press(s, '2')
  t.equal(s.view, 'sessions')
})

t.test('/ filters the list as one types; the typed letters are text, not commands', async (t) => {
  let s = press(start(), '/')
  t.equal(mode(s), 'filter')
  s = press(s, 'xq')
  t.equal(tasks(s).length, 0)
  t.equal(s.confirm, null, 'x in the filter did not ask to delete anyone')
  t.equal(s.quit, false, 'q in the filter did not quit')
  t.same(visibleUsers(s), [], 'no email contains "xq"')
  s = press(s, BACKSPACE, BACKSPACE, 'BO')
  t.same(visibleUsers(s).map((u) => u.email), ['bob@example.com'], 'case-insensitive')
  t.equal(selectedUser(s)?.email, 'bob@example.com')
  s = press(s, ENTER)
  t.equal(mode(s), 'nav')
  t.equal(s.lists.users.filter, 'BO', 'Enter keeps the filter')
  s = press(s, '/', ESC)
  t.equal(s.lists.users.filter, '', 'Esc clears it')
  t.equal(visibleUsers(s).length, 3)
})

t.test('a adds a user: email, password twice (hidden), then the addUser task', async (t) => {
  let s = press(start(), 'a')
  t.equal(mode(s), 'form')
  t.same(s.form?.fields.map((f) => [f.label, f.hidden]), [['Email', false], ['Password', true], ['Repeat', true]])
  s = press(s, '  dave@example.com ', ENTER, 'correct horse 9', ENTER, 'correct horse 9')
  t.equal(tasks(s).length, 0, 'nothing runs before the last Enter')
  s = press(s, ENTER)
  t.same(tasks(s), [{ kind: 'addUser', email: 'dave@example.com', password: 'correct horse 9' }])

  const dave = user('dave@example.com')
  s = done(s, { user: dave })
  t.equal(s.form, null, 'the form closes')
  t.equal(selectedUser(s)?.email, 'dave@example.com', 'the new user is selected')
  t.match(s.notice, { kind: 'info', text: 'Added dave@example.com.' })
  t.equal(s.tasks.length, 0)
})

t.test('mismatched passwords never leave the form; both are typed again', async (t) => {
  let s = press(start(), 'a', 'dave@example.com', ENTER, 'one password', ENTER, 'another one', ENTER)
  t.equal(tasks(s).length, 0)
  t.equal(s.form?.error, 'The passwords do not match.')
  t.same(s.form?.fields.map((f) => f.value), ['dave@example.com', '', ''])
  t.equal(s.form?.fields[s.form.focus].label, 'Password')
})

t.test('a policy error from the store shows in the form, which stays open at the password', async (t) => {
  let s = press(start(), 'a', 'dave@example.com', ENTER, 'password', ENTER, 'password', ENTER)
  s = failed(s, 'Password is too common')
  t.equal(s.form?.error, 'Password is too common')
  t.equal(s.form?.fields[s.form.focus].label, 'Password')
  t.same(s.form?.fields.map((f) => f.value), ['dave@example.com', '', ''], 'the email stays, the passwords go')
  s = failed(press(s, 'x9!long enough', ENTER, 'x9!long enough', ENTER), 'A user with email dave@example.com already exists.')
  t.equal(s.form?.fields[s.form.focus].label, 'Email', 'an email error puts the cursor on the email')
})

t.test('q and digits are text inside a form; Esc cancels it; Ctrl-C quits from anywhere', async (t) => {
  let s = press(start(), 'a', 'q1?')
  t.equal(s.quit, false)
  t.equal(s.view, 'users')
  t.equal(s.form?.fields[0].value, 'q1?')
  s = press(s, ESC)
  t.equal(s.form, null)
  s = press(press(start(), 'a'), { ...CTRL_C })
  t.equal(s.quit, false, 'a bare ctrl flag is not Ctrl-C')
  s = keyEvent(press(start(), 'a'), 'c', CTRL_C)
  t.equal(s.quit, true)
  t.equal(press(start(), 'q').quit, true)
})

t.test('d disables an active user only after a yes, naming the sessions that end', async (t) => {
  let s = press(start(), 'd')
  t.match(s.confirm?.prompt, 'Disable alice@example.com? Its 2 sessions end now.')
  t.equal(tasks(s).length, 0)
  s = press(s, 'n')
  t.equal(s.confirm, null)
  t.equal(tasks(s).length, 0)
  s = press(s, 'd', 'y')
  t.same(tasks(s), [{ kind: 'setDisabled', userId: alice.id, email: alice.email, disabled: true }])
  s = done(s, { count: 2 })
  t.match(s.notice?.text, 'Disabled alice@example.com; 2 sessions revoked.')
})

t.test('d enables a disabled user without asking', async (t) => {
  const s = press(start(), 'j', 'd')
  t.equal(s.confirm, null)
  t.same(tasks(s), [{ kind: 'setDisabled', userId: bob.id, email: bob.email, disabled: false }])
})

t.test('x deletes only after y; Enter and Esc answer no', async (t) => {
  let s = press(start(), 'x')
  t.match(s.confirm?.prompt, 'Delete alice@example.com and its 2 sessions? This cannot be undone.')
  s = press(s, ENTER)
  t.equal(s.confirm, null)
  t.equal(tasks(s).length, 0)
  t.match(s.notice?.text, 'Cancelled')
  s = press(s, 'x', ESC)
  t.equal(tasks(s).length, 0)
  s = press(s, 'x', 'Y')
  t.same(tasks(s), [{ kind: 'removeUser', userId: alice.id, email: alice.email }])
})

t.test('m resets the second factor only after y; a user without one gets a notice and no question', async (t) => {
  let s = press(start({ users: [carol, { ...alice, mfaEnabled: true }, bob] }), 'm')
  t.equal(s.confirm?.prompt, 'Reset the second factor of alice@example.com? Its recovery codes become void and the password alone signs in.')
  t.equal(tasks(s).length, 0)
  s = press(s, ENTER)
  t.equal(s.confirm, null)
  t.equal(tasks(s).length, 0, 'Enter answers no')
  s = press(s, 'm', ESC)
  t.equal(tasks(s).length, 0, 'Esc answers no')
  s = press(s, 'm', 'y')
  t.same(tasks(s), [{ kind: 'resetMfa', userId: alice.id, email: alice.email }])
  s = done(s, { wasEnabled: true })
  t.equal(s.notice?.text, 'Reset the second factor of alice@example.com; the password alone signs in.')

  // turned off elsewhere between the read and the yes
  s = done(press(start({ users: [{ ...alice, mfaEnabled: true }] }), 'm', 'y'), { wasEnabled: false })
  t.equal(s.notice?.text, 'alice@example.com had no second factor; nothing to reset.')
  s = done(press(start({ users: [{ ...alice, mfaEnabled: true }] }), 'm', 'y'), { wasEnabled: false, setupRemoved: true })
  t.equal(s.notice?.text, 'alice@example.com had no second factor; removed the set-up not yet confirmed.')

  s = press(start(), 'm')
  t.equal(s.confirm, null)
  t.equal(tasks(s).length, 0)
  t.equal(s.notice?.text, 'alice@example.com has no second factor to reset.')

  // one admin operation at a time, as for the others
  s = press(start({ users: [{ ...alice, mfaEnabled: true }] }), 'x', 'y', 'm')
  t.equal(s.confirm, null)
  t.match(s.notice?.text, 'Busy')
})

t.test('p sets a password for the selected user, typed twice', async (t) => {
  let s = press(start(), 'j', 'j', 'p')
  t.equal(s.form?.title, 'New password for carol@example.com')
  s = press(s, 'n3w-Passw0rd!', ENTER, 'n3w-Passw0rd!', ENTER)
  t.same(tasks(s), [{ kind: 'setPassword', userId: carol.id, email: carol.email, password: 'n3w-Passw0rd!' }])
  s = done(s, { count: 1 })
  t.equal(s.form, null)
  t.match(s.notice?.text, 'Password of carol@example.com set; 1 session revoked.')
})

t.test('one operation at a time: a second is refused with a message, not queued', async (t) => {
  let s = press(start(), '3', 'r')
  t.equal(tasks(s).length, 1)
  s = press(s, 'r')
  t.equal(tasks(s).length, 1)
  t.match(s.notice, { kind: 'error', text: /Busy/ })
})

t.test('sessions: x revokes the selected one, X all of its user, each after a yes', async (t) => {
  let s = press(start(), '2')
  t.equal(s.lists.sessions.selectedId, 'sess-a1', 'most recently used first')
  s = press(s, 'x')
  t.match(s.confirm?.prompt, /Revoke session sess-a1 of alice@example.com \(203\.0\.113\.7\)\?/)
  s = press(s, 'y')
  t.same(tasks(s), [{ kind: 'revokeSession', sessionId: 'sess-a1', email: alice.email }])
  s = done(s)
  s = press(s, 'X')
  t.match(s.confirm?.prompt, 'Revoke all 2 sessions of alice@example.com?')
  s = press(s, 'y')
  t.same(tasks(s), [{ kind: 'revokeUserSessions', userId: alice.id, email: alice.email }])
})

t.test('s on a user opens the sessions view filtered to that user', async (t) => {
  const s = press(start(), 'j', 'j', 's')
  t.equal(s.view, 'sessions')
  t.equal(s.lists.sessions.filter, 'carol@example.com')
  t.equal(s.lists.sessions.selectedId, 'sess-c1')
})

t.test('keys: r rotates and selects the new key (regression: the selection stayed on the key it replaces); x asks only once the store agrees the key may go', async (t) => {
  let s = press(start(), '3', 'r')
  t.same(tasks(s), [{ kind: 'rotateKey' }])
  t.equal(s.lists.keys.selectedId, 'kid-active')
  const T = Date.UTC(2025, 2, 4, 9, 5)
  s = done(s, { key: key('kid-new', { state: 'next', createdAt: T, activatedAt: T + 5 * 60_000 }) })
  t.match(s.notice?.text, 'Rotated: key kid-new (ES256) is in the JWKS and signs from 2025-03-04 09:10 UTC.')
  t.equal(s.lists.keys.selectedId, 'kid-new', 'the new key is selected')
  t.match(s.snapshot?.keys.map((k) => k.kid), ['kid-active', 'kid-old', 'kid-new'], 'and listed before the next reload')
  s = press(s, 'r')
  s = done(s, { key: key('kid-now', { createdAt: T + 1 }) })
  t.match(s.notice?.text, 'Rotated: key kid-now (ES256) signs from now on.')
  t.equal(s.lists.keys.selectedId, 'kid-now')
  s = reducer(s, { type: 'loaded', snapshot: snap() })
  t.equal(s.lists.keys.selectedId, 'kid-active')

  s = press(s, 'x')
  t.equal(s.confirm, null, 'no question yet')
  t.match(tasks(s), [{ kind: 'checkRevokeKey', kid: 'kid-active' }])
  s = failed(s, 'No key with kid "kid-active".')
  t.equal(s.confirm, null, 'a refusal (the key went meanwhile) comes instead of the question')
  t.match(s.notice, { kind: 'error', text: 'No key with kid "kid-active".' })
  s = press(s, 'x')
  s = done(s)
  t.match(s.confirm?.prompt, 'Revoke key kid-active (active)? Tokens it signed stop verifying at once. A new key replaces it first.', 'the active key: said so')
  s = press(s, 'n')

  s = press(s, 'j', 'x')
  s = done(s)
  t.match(s.confirm?.prompt, 'Revoke key kid-old (retiring)? Tokens it signed stop verifying at once.')
  s = press(s, 'y')
  t.same(tasks(s), [{ kind: 'revokeKey', kid: 'kid-old' }])
})

t.test('Enter opens the details of the selected row, Enter or Esc goes back', async (t) => {
  let s = press(start(), ENTER)
  t.equal(s.lists.users.detail, true)
  s = press(s, ESC)
  t.equal(s.lists.users.detail, false)
  s = press(s, ENTER, ENTER)
  t.equal(s.lists.users.detail, false)
  s = press(start({ users: [] }), ENTER)
  t.equal(s.lists.users.detail, false, 'nothing to open in an empty list')
})

t.test('smoke: r with an empty field asks for it; Enter on the password runs the steps', async (t) => {
  let s = press(start(), '4', 'r')
  t.equal(tasks(s).length, 0)
  t.equal(s.smoke.error, 'Email is required.')
  t.equal(mode(s), 'smokeEdit')
  t.equal(s.smoke.fields[s.smoke.focus].label, 'Email')
  s = press(s, 'alice@example.com', ENTER, 's3cret-pass', ENTER)
  t.same(tasks(s), [{ kind: 'smoke', url: 'http://127.0.0.1:8080', email: 'alice@example.com', password: 's3cret-pass' }])
  t.equal(mode(s), 'nav')

  const id = lastTaskId(s)
  s = reducer(s, { type: 'smokeStep', id, step: { index: 0, name: 'login', status: 'running' } })
  t.equal(s.smoke.steps[0].status, 'running')
  s = reducer(s, { type: 'smokeStep', id, step: { index: 0, name: 'login', status: 'pass', httpStatus: 200, ms: 84 } })
  s = reducer(s, { type: 'smokeStep', id, step: { index: 1, name: 'me', status: 'fail', httpStatus: 401, ms: 3, detail: 'expected 200, got 401' } })
  t.match(s.smoke.steps.slice(0, 2), [
    { status: 'pass', httpStatus: 200, ms: 84 },
    { status: 'fail', httpStatus: 401, detail: 'expected 200, got 401' },
  ])
  s = reducer(s, { type: 'taskDone', id, result: { passed: false } })
  t.equal(s.smoke.result, 'fail')

  s = press(s, 'r')
  t.same(
    s.smoke.steps.map((x) => x.status),
    STEPS.map(() => 'pending'),
    'a new run starts from a clean slate',
  )
  s = reducer(s, { type: 'smokeStep', id, step: { index: 0, name: 'login', status: 'pass' } })
  t.equal(s.smoke.steps[0].status, 'pending', 'steps of an earlier run are ignored')
})

t.test('a network failure of the whole smoke run ends the running step and says why', async (t) => {
  let s = press(start(), '4', ENTER, 'a@b.c', ENTER, 'pw', ENTER)
  s = reducer(s, { type: 'smokeStep', id: lastTaskId(s), step: { index: 0, name: 'login', status: 'running' } })
  s = failed(s, 'The URL must be an absolute http:// or https:// URL (got "x").')
  t.equal(s.smoke.steps[0].status, 'fail')
  t.equal(s.smoke.result, 'fail')
  t.match(s.smoke.error, 'absolute http')
})

t.test('? shows the help over any view; letters do nothing there', async (t) => {
  let s = press(start(), '?')
  t.equal(s.help, true)
  s = press(s, 'x', 'a', '3')
  t.equal(s.confirm, null)
  t.equal(s.form, null)
  t.equal(s.view, 'users')
  s = press(s, ESC)
  t.equal(s.help, false)
})

t.test('a failed read of the store is shown and cleared by the next good read', async (t) => {
  let s = reducer(start(), { type: 'loadFailed', message: 'Cannot read the store: EACCES' })
  t.equal(s.loadError, 'Cannot read the store: EACCES')
  t.equal(visibleUsers(s).length, 3, 'the last rows stay on screen')
  s = reducer(s, { type: 'loaded', snapshot: snap() })
  t.equal(s.loadError, null)
})

t.test('answers for tasks that are not running change nothing', async (t) => {
  const s = start()
  t.equal(reducer(s, { type: 'taskDone', id: 99, result: {} }), s)
  t.equal(reducer(s, { type: 'taskFailed', id: 99, message: 'x' }), s)
})

t.test('one terminal chunk is split into keys, each read in the state the previous left', async (t) => {
  // "a" opens the form, so the rest of the same chunk is the email, and \r moves to the password
  const s = press(start(), 'adave@example.com\rpw')
  t.equal(s.form?.fields[0].value, 'dave@example.com')
  t.equal(s.form?.fields[1].value, 'pw')
  t.equal(s.form?.fields[s.form.focus].label, 'Password')
})

t.test('control characters in a paste never reach a field', async (t) => {
  const s = keyEvent(press(start(), 'a'), 'a\u0007b\u0085c\u001b', {})
  t.equal(s.form?.fields[0].value, 'abc')
})

t.test('keys: the question for the active key names a next key that its replacement replaces too', async (t) => {
  let s = start({ keys: [key('kid-active'), key('kid-next', { state: 'next' })] })
  s = press(s, '3', 'x')
  s = done(s)
  t.equal(s.confirm?.prompt, 'Revoke key kid-active (active)? Tokens it signed stop verifying at once. A new key replaces it first, and replaces the next key kid-next.')
})
