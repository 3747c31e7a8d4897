/**
 * What can happen to the terminal UI's state: the actions its reducer takes. Keys become these in
 * keymap.ts (the key hook dispatches them), the store's answers in the effects hook; the reducer
 * never sees a key.
 */
import type { AuditRow, Snapshot, SmokeStepEvent } from './deps.js'
import type { TaskResult, ViewName } from './state.js'

/** the subset of Ink's Key this map reads */
export interface KeyPress {
  upArrow?: boolean
  downArrow?: boolean
  pageUp?: boolean
  pageDown?: boolean
  home?: boolean
  end?: boolean
  return?: boolean
  escape?: boolean
  ctrl?: boolean
  shift?: boolean
  tab?: boolean
  backspace?: boolean
  delete?: boolean
  meta?: boolean
}

export type Action =
  | { type: 'view'; view: ViewName }
  | { type: 'cycleView'; delta: 1 | -1 }
  | { type: 'move'; delta: number }
  | { type: 'page'; delta: 1 | -1 }
  | { type: 'moveEdge'; edge: 'start' | 'end' }
  | { type: 'open' }
  | { type: 'back' }
  | { type: 'toggleHelp' }
  | { type: 'filterStart' }
  | { type: 'filterType'; text: string }
  | { type: 'filterErase' }
  | { type: 'filterDone' }
  | { type: 'filterClear' }
  | { type: 'userAdd' }
  | { type: 'userToggleDisabled' }
  | { type: 'userPassword' }
  | { type: 'userDelete' }
  | { type: 'userSessions' }
  | { type: 'userResetMfa' }
  | { type: 'sessionRevoke' }
  | { type: 'sessionRevokeUser' }
  | { type: 'keyRotate' }
  | { type: 'keyRevoke' }
  | { type: 'smokeEdit' }
  | { type: 'smokeRun' }
  | { type: 'fieldType'; text: string }
  | { type: 'fieldErase' }
  | { type: 'fieldMove'; delta: 1 | -1 }
  | { type: 'formSubmit' }
  | { type: 'formCancel' }
  | { type: 'confirmYes' }
  | { type: 'confirmNo' }
  /** the terminal's size, at the start and on every resize */
  | { type: 'resize'; columns: number; rows: number }
  | { type: 'quit' }
  | { type: 'loaded'; snapshot: Snapshot }
  | { type: 'loadFailed'; message: string }
  | { type: 'taskDone'; id: number; result: TaskResult }
  | { type: 'taskFailed'; id: number; message: string }
  | { type: 'smokeStep'; id: number; step: SmokeStepEvent }
  | { type: 'auditLoaded'; rows: AuditRow[] }
  | { type: 'auditFailed'; message: string }
