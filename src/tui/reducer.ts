/**
 * The terminal UI's reducer: every change of state, pure. It knows actions, not keys: the key
 * hook maps keys to actions (keymap.ts); the store's answers arrive as `loaded`, `taskDone`,
 * `taskFailed`, `smokeStep`.
 * Operations are only described here (State.tasks); the effects hook runs them.
 */
import { formatTime, plural, promptEmail, shortId } from './format.js'
import type { Action } from './actions.js'
import {
  emptyList,
  isBusy,
  selectedIndex,
  selectedKey,
  selectedSession,
  selectedUser,
  rowId,
  VIEWS,
  visibleRows,
  type Field,
  type Form,
  type ListName,
  type ListState,
  type Notice,
  type State,
  type Task,
  type TaskResult,
  type ViewName,
} from './state.js'

export type { Action } from './actions.js'

/** rows of the screen around a list: header, tabs, rule, headings, position, status (2), footer (2), and one spare */
export const CHROME_ROWS = 10

export function reducer(state: State, action: Action): State {
  switch (action.type) {
    case 'view':
      return switchView(state, action.view)
    case 'cycleView': {
      const at = VIEWS.indexOf(state.view)
      return switchView(state, VIEWS[(at + action.delta + VIEWS.length) % VIEWS.length])
    }
    case 'move':
      if (state.view === 'smoke') return selectSmokeField(state, (i) => i + action.delta)
      return moveSelection(state, (i) => i + action.delta)
    case 'page':
      return moveSelection(state, (i) => i + action.delta * state.listRows)
    case 'moveEdge':
      if (state.view === 'smoke') return selectSmokeField(state, (_i, n) => (action.edge === 'start' ? 0 : n - 1))
      return moveSelection(state, (_i, n) => (action.edge === 'start' ? 0 : n - 1))
    case 'open': {
      const list = currentList(state)
      const rows = list === null ? [] : visibleRows(state, list)
      if (list === null || rows.length === 0) return state
      // the page is of this row (reselect keeps it open only while the row is there)
      const at = selectedIndex(rows, state.lists[list])
      return updateList(state, list, { detail: !state.lists[list].detail, selectedId: rowId(rows[at]), index: at })
    }
    case 'back': {
      const list = currentList(state)
      if (list !== null && state.lists[list].detail) return updateList(state, list, { detail: false })
      return { ...state, notice: null }
    }
    case 'toggleHelp':
      return { ...state, help: !state.help }
    case 'resize':
      return { ...state, terminal: { columns: action.columns, rows: action.rows }, listRows: Math.max(3, action.rows - CHROME_ROWS) }
    case 'quit':
      return { ...state, quit: true }

    // ---- filter
    case 'filterStart': {
      const list = currentList(state)
      if (list === 'users' || list === 'sessions' || list === 'audit') return updateList(state, list, { filtering: true, detail: false })
      return state
    }
    case 'filterType':
      return editFilter(state, (f) => f + printable(action.text))
    case 'filterErase':
      return editFilter(state, (f) => [...f].slice(0, -1).join(''))
    case 'filterDone': {
      const list = currentList(state)
      return list === null ? state : updateList(state, list, { filtering: false })
    }
    case 'filterClear': {
      const list = currentList(state)
      return list === null ? state : reselect(updateList(state, list, { filtering: false, filter: '', exact: false }), list)
    }

    // ---- users
    case 'userAdd':
      return {
        ...state,
        notice: null,
        form: {
          kind: 'addUser',
          title: 'Add user',
          userId: null,
          email: null,
          fields: [
            { label: 'Email', value: '', hidden: false },
            { label: 'Password', value: '', hidden: true },
            { label: 'Repeat', value: '', hidden: true },
          ],
          focus: 0,
          error: null,
        },
      }
    case 'userPassword': {
      const user = selectedUser(state)
      if (user === undefined) return state
      return {
        ...state,
        notice: null,
        form: {
          kind: 'setPassword',
          title: `New password for ${user.email}`,
          userId: user.id,
          email: user.email,
          fields: [
            { label: 'Password', value: '', hidden: true },
            { label: 'Repeat', value: '', hidden: true },
          ],
          focus: 0,
          error: null,
        },
      }
    }
    case 'userToggleDisabled': {
      const user = selectedUser(state)
      if (user === undefined) return state
      const task: Task = { kind: 'setDisabled', userId: user.id, email: user.email, disabled: !user.disabled }
      if (user.disabled) return startTask(state, task)
      const ends = user.sessions === 0 ? '' : user.sessions === 1 ? ' Its session ends now.' : ` Its ${user.sessions} sessions end now.`
      return askFirst(state, `Disable ${promptEmail(user.email)}?${ends}`, task)
    }
    case 'userDelete': {
      const user = selectedUser(state)
      if (user === undefined) return state
      const also = user.sessions === 0 ? '' : user.sessions === 1 ? ' and its session' : ` and its ${user.sessions} sessions`
      return askFirst(state, `Delete ${promptEmail(user.email)}${also}? This cannot be undone.`, { kind: 'removeUser', userId: user.id, email: user.email })
    }
    case 'userResetMfa': {
      const user = selectedUser(state)
      if (user === undefined) return state
      // as the list last read it; a factor turned on since is reset all the same once confirmed
      if (!user.mfaEnabled) return say(state, 'info', `${user.email} has no second factor to reset.`)
      return askFirst(state, `Reset the second factor of ${promptEmail(user.email)}? Its recovery codes become void and the password alone signs in.`, {
        kind: 'resetMfa',
        userId: user.id,
        email: user.email,
      })
    }
    case 'userSessions': {
      const user = selectedUser(state)
      if (user === undefined) return state
      const s = { ...state, view: 'sessions' as const, notice: null }
      return reselect(updateList(s, 'sessions', { filter: user.email, exact: true, filtering: false, detail: false, index: 0, selectedId: null }), 'sessions')
    }

    // ---- sessions
    case 'sessionRevoke': {
      const s = selectedSession(state)
      if (s === undefined) return state
      return askFirst(state, `Revoke session ${shortId(s.id)} of ${promptEmail(s.email)} (${s.ip || 'no ip'})?`, { kind: 'revokeSession', sessionId: s.id, email: s.email })
    }
    case 'sessionRevokeUser': {
      const s = selectedSession(state)
      if (s === undefined) return state
      // the user's count covers sessions beyond those read for the list
      const count = state.snapshot?.users.find((u) => u.id === s.userId)?.sessions ?? (state.snapshot?.sessions ?? []).filter((x) => x.userId === s.userId).length
      const which = count === 1 ? 'the only session' : `all ${count} sessions`
      return askFirst(state, `Revoke ${which} of ${promptEmail(s.email)}?`, { kind: 'revokeUserSessions', userId: s.userId, email: s.email })
    }

    // ---- keys
    case 'keyRotate':
      return startTask(state, { kind: 'rotateKey' })
    case 'keyRevoke': {
      const key = selectedKey(state)
      if (key === undefined) return state
      // a key gone since the list was read is refused before the question
      // a key still next goes with the active key's replacement: named in the question
      const next = key.state === 'active' ? (state.snapshot?.keys ?? []).filter((k) => k.state === 'next').map((k) => k.kid) : []
      const replaced = key.state === 'active' ? ` A new key replaces it first${next.length === 0 ? '' : `, and replaces the next key ${next.join(', ')}`}.` : ''
      const prompt = `Revoke key ${key.kid} (${key.state})? Tokens it signed stop verifying at once.${replaced}`
      return startTask(state, { kind: 'checkRevokeKey', kid: key.kid, prompt })
    }

    // ---- smoke
    case 'smokeEdit':
      // Enter and e alike: typing goes into the selected field
      return { ...state, smoke: { ...state.smoke, editing: true } }
    case 'smokeRun':
      return runSmoke(state)

    // ---- text fields (a form, or the smoke fields)
    case 'fieldType':
      return editField(state, (f) => ({ ...f, value: f.value + printable(action.text) }))
    case 'fieldErase':
      return editField(state, (f) => ({ ...f, value: [...f.value].slice(0, -1).join('') }))
    case 'fieldMove': {
      if (state.form !== null) {
        const n = state.form.fields.length
        return { ...state, form: { ...state.form, focus: (state.form.focus + action.delta + n) % n } }
      }
      if (state.view === 'smoke' && state.smoke.editing) {
        const n = state.smoke.fields.length
        return { ...state, smoke: { ...state.smoke, focus: (state.smoke.focus + action.delta + n) % n } }
      }
      return state
    }
    case 'formSubmit':
      return submit(state)
    case 'formCancel':
      if (state.form !== null) return { ...state, form: null }
      if (state.smoke.editing) return { ...state, smoke: { ...state.smoke, editing: false } }
      return state

    // ---- confirmation
    case 'confirmYes':
      return state.confirm === null ? state : startTask({ ...state, confirm: null }, state.confirm.task)
    case 'confirmNo':
      return state.confirm === null ? state : say({ ...state, confirm: null }, 'info', 'Cancelled.')

    // ---- answers from the store and the network
    case 'loaded': {
      let next: State = { ...state, snapshot: action.snapshot, loadError: null }
      for (const list of ['users', 'sessions', 'keys'] as const) next = reselect(next, list)
      // the details page on screen closed: its row was removed elsewhere (another authctl, a logout)
      const list = currentList(state)
      if (list !== null && list !== 'audit' && state.lists[list].detail && !next.lists[list].detail) return say(next, 'info', GONE[list])
      return next
    }
    case 'loadFailed':
      return { ...state, loadError: action.message }
    case 'taskDone':
      return finishTask(state, action.id, action.result)
    case 'taskFailed':
      return failTask(state, action.id, action.message)
    case 'auditLoaded': {
      // at the top (the newest event selected, or none yet), the list follows new events in;
      // elsewhere, or with an event's details open, the selection stays on its event
      const following = !state.lists.audit.detail && selectedIndex(visibleRows(state, 'audit'), state.lists.audit) <= 0
      const next: State = { ...state, audit: { rows: action.rows, error: null } }
      return reselect(following ? updateList(next, 'audit', { selectedId: null, index: 0 }) : next, 'audit')
    }
    case 'auditFailed':
      return { ...state, audit: { ...state.audit, error: action.message } }
    case 'smokeStep': {
      if (!state.tasks.some((t) => t.id === action.id)) return state
      const { step } = action
      const steps = [...state.smoke.steps]
      while (steps.length <= step.index) steps.push({ name: '', status: 'pending' })
      steps[step.index] = { name: step.name, status: step.status, httpStatus: step.httpStatus, ms: step.ms, detail: step.detail }
      return { ...state, smoke: { ...state.smoke, steps } }
    }
  }
}

// ---- helpers ---------------------------------------------------------------------------

/** a status line for the view on screen */
const say = (state: State, kind: Notice['kind'], text: string): State => ({ ...state, notice: { kind, text, view: state.view } })

/** another view: the status of the view left goes with it (one waiting for the new view shows) */
function switchView(state: State, view: ViewName): State {
  return { ...state, view, notice: state.notice?.view === state.view ? null : state.notice }
}

const currentList = (state: State): ListName | null => (state.view === 'smoke' ? null : state.view)

function updateList(state: State, list: ListName, change: Partial<ListState>): State {
  return { ...state, lists: { ...state.lists, [list]: { ...state.lists[list], ...change } } }
}

/** what the status line says when the details page on screen closes because its row is gone */
const GONE = {
  users: 'That user no longer exists: it was removed elsewhere.',
  sessions: 'That session is no longer listed: it ended, or is no longer among the most recently used.',
  keys: 'That key no longer exists: it was revoked elsewhere.',
} as const

/**
 * after the rows changed: keep the selected row if it is still there, else the same place. A
 * details page stays open only on its own row: one whose row is gone closes, rather than show
 * (and offer to act on) the row now in its place.
 */
function reselect(state: State, list: ListName): State {
  const rows = visibleRows(state, list)
  const was = state.lists[list]
  const at = selectedIndex(rows, was)
  const selectedId = at < 0 ? null : rowId(rows[at])
  const detail = was.detail && at >= 0 && (was.selectedId === null || selectedId === was.selectedId)
  return updateList(state, list, { selectedId, index: Math.max(at, 0), detail })
}

function moveSelection(state: State, to: (index: number, count: number) => number): State {
  const list = currentList(state)
  if (list === null) return state
  const rows = visibleRows(state, list)
  if (rows.length === 0) return state
  const at = Math.min(Math.max(to(selectedIndex(rows, state.lists[list]), rows.length), 0), rows.length - 1)
  return updateList(state, list, { index: at, selectedId: rowId(rows[at]) })
}

function editFilter(state: State, edit: (filter: string) => string): State {
  const list = currentList(state)
  if (list === null || !state.lists[list].filtering) return state
  // typed: a text to contain again, even where `s` had put a whole email
  return reselect(updateList(state, list, { filter: edit(state.lists[list].filter), exact: false }), list)
}

/** typed or pasted text without control characters (a paste may carry a newline) */
const printable = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '')

function editField(state: State, edit: (field: Field) => Field): State {
  if (state.form !== null) {
    const form = state.form
    const fields = form.fields.map((f, i) => (i === form.focus ? edit(f) : f))
    return { ...state, form: { ...form, fields } }
  }
  if (state.view === 'smoke' && state.smoke.editing) {
    const smoke = state.smoke
    return { ...state, smoke: { ...smoke, fields: smoke.fields.map((f, i) => (i === smoke.focus ? edit(f) : f)) } }
  }
  return state
}

/** ↑↓ in the Smoke view (not editing): another field is selected */
function selectSmokeField(state: State, to: (index: number, count: number) => number): State {
  const n = state.smoke.fields.length
  const focus = Math.min(Math.max(to(state.smoke.focus, n), 0), n - 1)
  return { ...state, smoke: { ...state.smoke, focus } }
}

function askFirst(state: State, prompt: string, task: Task): State {
  if (isBusy(state, 'admin')) return say(state, 'error', 'Busy: wait for the current operation to finish.')
  return { ...state, confirm: { prompt, task }, notice: null }
}

function startTask(state: State, task: Task): State {
  const kind = task.kind === 'smoke' ? 'smoke' : 'admin'
  if (isBusy(state, kind)) return say(state, 'error', 'Busy: wait for the current operation to finish.')
  return {
    ...state,
    tasks: [...state.tasks, { id: state.nextTaskId, task, view: state.view }],
    nextTaskId: state.nextTaskId + 1,
    notice: kind === 'admin' ? null : state.notice,
  }
}

/** Enter in a form: the next field, or on the last one, the operation */
function submit(state: State): State {
  if (state.view === 'smoke' && state.form === null) {
    if (!state.smoke.editing) return state
    const { focus, fields } = state.smoke
    if (focus < fields.length - 1) return { ...state, smoke: { ...state.smoke, focus: focus + 1 } }
    return runSmoke(state)
  }
  const form = state.form
  if (form === null) return state
  if (isBusy(state, 'admin')) return state
  if (form.focus < form.fields.length - 1) return { ...state, form: { ...form, focus: form.focus + 1, error: null } }
  const value = (label: string): string => form.fields.find((f) => f.label === label)?.value ?? ''
  const fieldAt = (label: string): number => form.fields.findIndex((f) => f.label === label)
  if (form.kind === 'addUser' && value('Email').trim() === '') {
    return { ...state, form: { ...form, focus: fieldAt('Email'), error: 'Email is required.' } }
  }
  if (value('Password') === '') {
    return { ...state, form: { ...form, focus: fieldAt('Password'), error: 'Password is required.' } }
  }
  if (value('Password') !== value('Repeat')) {
    return { ...state, form: { ...clearPasswords(form), focus: fieldAt('Password'), error: 'The passwords do not match.' } }
  }
  const task: Task =
    form.kind === 'addUser'
      ? { kind: 'addUser', email: value('Email').trim(), password: value('Password') }
      : { kind: 'setPassword', userId: form.userId ?? '', email: form.email ?? '', password: value('Password') }
  return startTask({ ...state, form: { ...form, error: null } }, task)
}

const clearPasswords = (form: Form): Form => ({ ...form, fields: form.fields.map((f) => (f.hidden ? { ...f, value: '' } : f)) })

function runSmoke(state: State): State {
  const smoke = state.smoke
  const [url, email, password] = smoke.fields.map((f) => f.value)
  const missing = smoke.fields.findIndex((f) => f.value.trim() === '')
  if (missing >= 0) {
    return { ...state, smoke: { ...smoke, editing: true, focus: missing, error: `${smoke.fields[missing].label} is required.` } }
  }
  if (isBusy(state, 'smoke')) return say(state, 'error', 'The smoke test is already running.')
  const next = startTask(state, { kind: 'smoke', url: url.trim(), email: email.trim(), password })
  return {
    ...next,
    smoke: { ...smoke, editing: false, error: null, result: null, steps: smoke.steps.map((s) => ({ name: s.name, status: 'pending' })) },
  }
}

function finishTask(state: State, id: number, result: TaskResult): State {
  const running = state.tasks.find((t) => t.id === id)
  if (running === undefined) return state
  const s: State = { ...state, tasks: state.tasks.filter((t) => t.id !== id) }
  // the outcome is the status of the view the task was started in, shown when that view is
  const done = (text: string): State => ({ ...s, notice: { kind: 'info', text, view: running.view } })
  const task = running.task
  switch (task.kind) {
    case 'addUser': {
      const user = result.user
      if (user === undefined) return done(`Added ${task.email}.`)
      const snapshot = s.snapshot === null ? null : { ...s.snapshot, users: [...s.snapshot.users.filter((u) => u.id !== user.id), user] }
      const added: State = { ...done(`Added ${user.email}.`), form: null, snapshot }
      // show the new user: select it, and drop a filter that would hide it
      const filter = user.email.includes(added.lists.users.filter.trim().toLowerCase()) ? added.lists.users.filter : ''
      return reselect(updateList(added, 'users', { selectedId: user.id, filter, detail: false }), 'users')
    }
    case 'setPassword':
      return { ...done(`Password of ${task.email} set; ${plural(result.count ?? 0, 'session')} revoked.`), form: null }
    case 'setDisabled':
      return done(task.disabled ? `Disabled ${task.email}; ${plural(result.count ?? 0, 'session')} revoked.` : `Enabled ${task.email}.`)
    case 'removeUser':
      return closeDetail(done(`Deleted ${task.email}.`), 'users', (id) => id === task.userId)
    case 'resetMfa':
      return done(
        result.wasEnabled !== false
          ? `Reset the second factor of ${task.email}; the password alone signs in.`
          : result.setupRemoved === true
            ? `${task.email} had no second factor; removed the set-up not yet confirmed.`
            : `${task.email} had no second factor; nothing to reset.`,
      )
    case 'revokeSession':
      return closeDetail(done(`Revoked a session of ${task.email}.`), 'sessions', (id) => id === task.sessionId)
    case 'revokeUserSessions': {
      const ofUser = (id: string): boolean => s.snapshot?.sessions.some((x) => x.id === id && x.userId === task.userId) === true
      return closeDetail(done(`Revoked ${plural(result.count ?? 0, 'session')} of ${task.email}.`), 'sessions', ofUser)
    }
    case 'rotateKey': {
      const key = result.key
      if (key === undefined) return done('Rotated the signing key.')
      const when = key.state === 'next' ? `is in the JWKS and signs from ${formatTime(key.activatedAt)} UTC.` : 'signs from now on.'
      // show the new key: select it (not the key it replaces)
      const snapshot = s.snapshot === null ? null : { ...s.snapshot, keys: [...s.snapshot.keys.filter((k) => k.kid !== key.kid), key] }
      const rotated: State = { ...done(`Rotated: key ${key.kid} (${key.alg}) ${when}`), snapshot }
      return reselect(updateList(rotated, 'keys', { selectedId: key.kid, detail: false }), 'keys')
    }
    case 'checkRevokeKey':
      // the question is asked where x was pressed; one who has left the view has moved on
      if (s.view !== running.view) return s
      return { ...s, confirm: { prompt: task.prompt, task: { kind: 'revokeKey', kid: task.kid } }, notice: null }
    case 'revokeKey':
      return closeDetail(done(`Revoked key ${task.kid}.`), 'keys', (id) => id === task.kid)
    case 'smoke':
      return { ...s, smoke: { ...s.smoke, result: result.passed === true ? 'pass' : 'fail' } }
  }
}

/**
 * The details page of `list` closed when it shows a record this UI has just removed (`removed`
 * of its id): the outcome stays on the status line, where the reload would have said the record
 * went elsewhere.
 */
function closeDetail(state: State, list: ListName, removed: (id: string) => boolean): State {
  const l = state.lists[list]
  return l.detail && l.selectedId !== null && removed(l.selectedId) ? updateList(state, list, { detail: false }) : state
}

function failTask(state: State, id: number, message: string): State {
  const running = state.tasks.find((t) => t.id === id)
  if (running === undefined) return state
  const s: State = { ...state, tasks: state.tasks.filter((t) => t.id !== id) }
  const task = running.task
  if (task.kind === 'smoke') {
    const steps = s.smoke.steps.map((st) => (st.status === 'running' ? { ...st, status: 'fail' as const } : st))
    return { ...s, smoke: { ...s.smoke, steps, result: 'fail', error: message } }
  }
  if ((task.kind === 'addUser' || task.kind === 'setPassword') && s.form !== null) {
    // a policy or conflict error shows under the form; the passwords are typed again
    const form = clearPasswords(s.form)
    const onPassword = /password/i.test(message) || task.kind === 'setPassword'
    const focus = onPassword ? form.fields.findIndex((f) => f.hidden) : 0
    return { ...s, notice: null, form: { ...form, focus, error: message } }
  }
  return { ...s, notice: { kind: 'error', text: message, view: running.view } }
}
