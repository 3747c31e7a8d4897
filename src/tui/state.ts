/**
 * The terminal UI's state, and the selectors views and the reducer share. Everything here is
 * plain data: the reducer (reducer.ts) is the only thing that makes a new State.
 */
import type { AuditRow, KeyRow, SessionRow, Snapshot, SmokeStepEvent, UserRow } from './deps.js'

export type ViewName = 'users' | 'sessions' | 'keys' | 'smoke' | 'audit'
export const VIEWS: readonly ViewName[] = ['users', 'sessions', 'keys', 'smoke', 'audit']
export type ListName = 'users' | 'sessions' | 'keys' | 'audit'

export const VIEW_TITLES: Record<ViewName, string> = { users: 'Users', sessions: 'Sessions', keys: 'Keys', smoke: 'Smoke', audit: 'Audit' }

export interface ListState {
  /** the selected row's id; the selection follows the row when the list changes around it */
  selectedId: string | null
  /** the selected row's position, used when the row itself has gone */
  index: number
  /** case-insensitive text the rows' email must contain */
  filter: string
  /** the filter is a whole email, the rows' email must be it (set by `s`: one user's sessions) */
  exact: boolean
  /** the filter line has the keyboard */
  filtering: boolean
  /** Enter opened the selected row's details */
  detail: boolean
}

export interface Field {
  label: string
  value: string
  /** shown as `*` per character */
  hidden: boolean
}

export interface Form {
  kind: 'addUser' | 'setPassword'
  title: string
  /** the user a password is for */
  userId: string | null
  email: string | null
  fields: Field[]
  focus: number
  /** shown under the form: a policy error, a mismatch, a store failure */
  error: string | null
}

/** An operation the effects hook runs; the reducer only describes it. */
export type Task =
  | { kind: 'addUser'; email: string; password: string }
  | { kind: 'setPassword'; userId: string; email: string; password: string }
  | { kind: 'setDisabled'; userId: string; email: string; disabled: boolean }
  | { kind: 'removeUser'; userId: string; email: string }
  | { kind: 'resetMfa'; userId: string; email: string }
  | { kind: 'revokeSession'; sessionId: string; email: string }
  | { kind: 'revokeUserSessions'; userId: string; email: string }
  | { kind: 'rotateKey' }
  | { kind: 'checkRevokeKey'; kid: string; prompt: string }
  | { kind: 'revokeKey'; kid: string }
  | { kind: 'smoke'; url: string; email: string; password: string }

export interface RunningTask {
  id: number
  task: Task
  /** the view it was started in: its outcome is that view's status */
  view: ViewName
}

/** What a finished task hands back, by kind. */
export interface TaskResult {
  user?: UserRow
  key?: KeyRow
  count?: number
  passed?: boolean
  /** resetMfa: whether a second factor was on */
  wasEnabled?: boolean
  /** resetMfa: whether only a set-up not yet confirmed was removed */
  setupRemoved?: boolean
}

export interface Confirm {
  prompt: string
  task: Task
}

export interface SmokeStepRow {
  name: string
  status: 'pending' | SmokeStepEvent['status']
  httpStatus?: number
  ms?: number
  detail?: string
}

export interface SmokeState {
  /** URL, Email, Password */
  fields: Field[]
  /** the selected field: Enter or e edits it, ↑↓ choose another */
  focus: number
  /** the fields have the keyboard */
  editing: boolean
  steps: SmokeStepRow[]
  result: 'pass' | 'fail' | null
  /** a failure outside the steps (bad URL, missing field) */
  error: string | null
}

/** What the Audit view last read (it reads only while it shows, about once a second). */
export interface AuditFeed {
  /** newest first; null until the first read */
  rows: AuditRow[] | null
  /** the last read failed; cleared by the next good one */
  error: string | null
}

/** the status line: it belongs to the view that made it, and shows only there */
export interface Notice {
  kind: 'info' | 'error'
  text: string
  view: ViewName
}

export interface State {
  view: ViewName
  /** null until the first read of the store */
  snapshot: Snapshot | null
  /** the last read of the store failed; cleared by the next good one */
  loadError: string | null
  lists: Record<ListName, ListState>
  form: Form | null
  confirm: Confirm | null
  help: boolean
  /** at most one admin task and one smoke run at a time */
  tasks: RunningTask[]
  nextTaskId: number
  notice: Notice | null
  smoke: SmokeState
  audit: AuditFeed
  /** the terminal's size in characters */
  terminal: { columns: number; rows: number }
  /** rows a list shows at once (from the terminal height) */
  listRows: number
  quit: boolean
}

export const emptyList = (): ListState => ({ selectedId: null, index: 0, filter: '', exact: false, filtering: false, detail: false })

export function smokeFields(url: string): Field[] {
  return [
    { label: 'URL', value: url, hidden: false },
    { label: 'Email', value: '', hidden: false },
    { label: 'Password', value: '', hidden: true },
  ]
}

const firstEmpty = (fields: Field[]): number => Math.max(0, fields.findIndex((f) => f.value === ''))

export function initialState(opts: { smokeUrl: string; smokeSteps: string[]; listRows?: number }): State {
  return {
    view: 'users',
    snapshot: null,
    loadError: null,
    lists: { users: emptyList(), sessions: emptyList(), keys: emptyList(), audit: emptyList() },
    form: null,
    confirm: null,
    help: false,
    tasks: [],
    nextTaskId: 1,
    notice: null,
    smoke: {
      fields: smokeFields(opts.smokeUrl),
      // the first field to fill in (the URL comes from the config)
      focus: firstEmpty(smokeFields(opts.smokeUrl)),
      editing: false,
      steps: opts.smokeSteps.map((name) => ({ name, status: 'pending' })),
      result: null,
      error: null,
    },
    audit: { rows: null, error: null },
    terminal: { columns: MIN_COLUMNS, rows: MIN_ROWS },
    listRows: opts.listRows ?? 14,
    quit: false,
  }
}

/** the smallest terminal the screen fits: below it, only a line saying so is drawn */
export const MIN_COLUMNS = 80
export const MIN_ROWS = 24

// ---- selectors ---------------------------------------------------------------------------

export const tooSmall = (state: State): boolean => state.terminal.columns < MIN_COLUMNS || state.terminal.rows < MIN_ROWS

/** whether a list's filter lets `text` through: containing it, or, `exact`, being it (case aside) */
export const matchesFilter = (text: string, filter: string, exact = false): boolean =>
  filter === '' || (exact ? text.toLowerCase() === filter.trim().toLowerCase() : text.toLowerCase().includes(filter.trim().toLowerCase()))
const contains = matchesFilter

/** users whose email matches the filter, by email */
export function visibleUsers(state: State): UserRow[] {
  const rows = state.snapshot?.users ?? []
  return rows.filter((u) => contains(u.email, state.lists.users.filter)).sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0))
}

/** sessions whose user's email matches the filter, most recently used first */
export function visibleSessions(state: State): SessionRow[] {
  const rows = state.snapshot?.sessions ?? []
  const { filter, exact } = state.lists.sessions
  return rows.filter((s) => contains(s.email, filter, exact)).sort((a, b) => b.lastUsedAt - a.lastUsedAt || (a.id < b.id ? -1 : 1))
}

/** keys, newest first (the active key is normally on top) */
export function visibleKeys(state: State): KeyRow[] {
  return [...(state.snapshot?.keys ?? [])].sort((a, b) => b.createdAt - a.createdAt || (a.kid < b.kid ? -1 : 1))
}

/** audit events whose email, user id or event name contain the filter, newest first */
export function visibleAudit(state: State): AuditRow[] {
  const f = state.lists.audit.filter
  const rows = state.audit.rows ?? []
  return rows.filter((e) => f === '' || [e.email, e.userId, e.event].some((v) => v !== null && contains(v, f))).sort((a, b) => b.seq - a.seq)
}

export type ListRow = UserRow | SessionRow | KeyRow | AuditRow

export const rowId = (row: ListRow): string => ('kid' in row ? row.kid : 'seq' in row ? String(row.seq) : row.id)

export function visibleRows(state: State, list: ListName): ListRow[] {
  if (list === 'users') return visibleUsers(state)
  if (list === 'sessions') return visibleSessions(state)
  if (list === 'audit') return visibleAudit(state)
  return visibleKeys(state)
}

/** the position of the selection in the visible rows: the selected row, else the same place */
export function selectedIndex(rows: ReadonlyArray<ListRow>, list: ListState): number {
  if (rows.length === 0) return -1
  const at = list.selectedId === null ? -1 : rows.findIndex((r) => rowId(r) === list.selectedId)
  return at >= 0 ? at : Math.min(Math.max(list.index, 0), rows.length - 1)
}

export function selectedUser(state: State): UserRow | undefined {
  const rows = visibleUsers(state)
  return rows[selectedIndex(rows, state.lists.users)]
}

export function selectedSession(state: State): SessionRow | undefined {
  const rows = visibleSessions(state)
  return rows[selectedIndex(rows, state.lists.sessions)]
}

export function selectedKey(state: State): KeyRow | undefined {
  const rows = visibleKeys(state)
  return rows[selectedIndex(rows, state.lists.keys)]
}

/** the first row of the page the selection is on */
export const pageStart = (index: number, rows: number): number => (index <= 0 ? 0 : Math.floor(index / rows) * rows)

/** which text input, if any, has the keyboard; `small`: the terminal is too small to show the UI */
export type Mode = 'small' | 'help' | 'confirm' | 'form' | 'filter' | 'smokeEdit' | 'nav'

export function mode(state: State): Mode {
  if (tooSmall(state)) return 'small'
  if (state.help) return 'help'
  if (state.confirm !== null) return 'confirm'
  if (state.form !== null) return 'form'
  if (state.view === 'smoke') return state.smoke.editing ? 'smokeEdit' : 'nav'
  return state.lists[state.view].filtering ? 'filter' : 'nav'
}

/** the status line of the view on screen, if it has one */
export const viewNotice = (state: State): Notice | null => (state.notice !== null && state.notice.view === state.view ? state.notice : null)

export const isBusy = (state: State, kind: 'admin' | 'smoke'): boolean =>
  state.tasks.some((t) => (t.task.kind === 'smoke') === (kind === 'smoke'))

/** what a running task is doing, for the status line */
export function taskLabel(task: Task): string {
  switch (task.kind) {
    case 'addUser':
      return `Adding ${task.email}…`
    case 'setPassword':
      return `Setting the password of ${task.email}…`
    case 'setDisabled':
      return `${task.disabled ? 'Disabling' : 'Enabling'} ${task.email}…`
    case 'removeUser':
      return `Deleting ${task.email}…`
    case 'resetMfa':
      return `Resetting the second factor of ${task.email}…`
    case 'revokeSession':
    case 'revokeUserSessions':
      return `Revoking sessions of ${task.email}…`
    case 'rotateKey':
      return 'Rotating the signing key…'
    case 'checkRevokeKey':
      return `Checking key ${task.kid}…`
    case 'revokeKey':
      return `Revoking key ${task.kid}…`
    case 'smoke':
      return 'Running the smoke test…'
  }
}
