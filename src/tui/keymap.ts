/**
 * Keys to actions, by what has the keyboard (mode): a text field takes letters as text, a
 * confirmation takes y/n, the lists take commands. Pure, so it is tested without a terminal;
 * the key hook (use-keys.ts) feeds it Ink's input and dispatches the actions it returns. The
 * reducer knows actions only, never keys.
 */
import type { Action, KeyPress } from './actions.js'
import { mode, VIEWS, type State, type ViewName } from './state.js'

export type { KeyPress } from './actions.js'

/**
 * The actions one Ink input event means, in order: each key of the chunk (see splitInput) is
 * mapped in the state the actions before it left. `reduce` is the reducer, passed in so that
 * the keymap and the reducer do not import each other.
 */
export function keysToActions(state: State, input: string, key: KeyPress, reduce: (state: State, action: Action) => State): Action[] {
  const actions: Action[] = []
  let s = state
  for (const one of splitInput(input, key)) {
    const action = keyToAction(s, one.input, one.key)
    if (action === null) continue
    actions.push(action)
    s = reduce(s, action)
  }
  return actions
}

export function keyToAction(state: State, input: string, key: KeyPress): Action | null {
  // Ctrl-C quits from anywhere (raw mode: the terminal does not turn it into a signal)
  if (key.ctrl === true && input === 'c') return { type: 'quit' }
  const erase = key.backspace === true || key.delete === true
  switch (mode(state)) {
    case 'small':
      // nothing else is on screen to act on: keys typed blind must not delete anything
      return input === 'q' ? { type: 'quit' } : null
    case 'help':
      if (input === 'q') return { type: 'quit' }
      if (key.escape === true || key.return === true || input === '?') return { type: 'toggleHelp' }
      return null
    case 'confirm':
      if (input === 'y' || input === 'Y') return { type: 'confirmYes' }
      if (input === 'n' || input === 'N' || key.escape === true || key.return === true) return { type: 'confirmNo' }
      return null
    case 'form':
    case 'smokeEdit':
      if (key.escape === true) return { type: 'formCancel' }
      if (key.return === true) return { type: 'formSubmit' }
      if (key.tab === true) return { type: 'fieldMove', delta: key.shift === true ? -1 : 1 }
      if (key.downArrow === true) return { type: 'fieldMove', delta: 1 }
      if (key.upArrow === true) return { type: 'fieldMove', delta: -1 }
      if (erase) return { type: 'fieldErase' }
      return typed(input, key) ? { type: 'fieldType', text: input } : null
    case 'filter':
      if (key.escape === true) return { type: 'filterClear' }
      if (key.return === true) return { type: 'filterDone' }
      if (key.downArrow === true) return { type: 'move', delta: 1 }
      if (key.upArrow === true) return { type: 'move', delta: -1 }
      if (erase) return { type: 'filterErase' }
      return typed(input, key) ? { type: 'filterType', text: input } : null
    case 'nav':
      return navigation(state, input, key)
  }
}

/**
 * One Ink input event as single keys. A terminal delivers fast typing, a paste or a scripted
 * `tmux send-keys` as one chunk ("bob@example.com\r"): each character is a key of its own, and
 * is read in the state the keys before it left.
 */
export function splitInput(input: string, key: KeyPress): Array<{ input: string; key: KeyPress }> {
  const chars = [...input]
  if (chars.length <= 1 || key.ctrl === true || key.meta === true) return [{ input, key }]
  return chars.map((c) => {
    if (c === '\r' || c === '\n') return { input: '', key: { return: true } }
    if (c === '\t') return { input: '', key: { tab: true } }
    if (c === '\x7f' || c === '\b') return { input: '', key: { backspace: true } }
    return { input: c, key: {} }
  })
}

/** text for a field: not a control chord, not an unnamed escape sequence */
const typed = (input: string, key: KeyPress): boolean => input !== '' && key.ctrl !== true && key.meta !== true

function navigation(state: State, input: string, key: KeyPress): Action | null {
  if (key.tab === true) return { type: 'cycleView', delta: key.shift === true ? -1 : 1 }
  if (key.upArrow === true) return { type: 'move', delta: -1 }
  if (key.downArrow === true) return { type: 'move', delta: 1 }
  if (key.pageUp === true) return { type: 'page', delta: -1 }
  if (key.pageDown === true) return { type: 'page', delta: 1 }
  if (key.home === true) return { type: 'moveEdge', edge: 'start' }
  if (key.end === true) return { type: 'moveEdge', edge: 'end' }
  if (key.escape === true) return { type: 'back' }
  if (key.return === true) return state.view === 'smoke' ? { type: 'smokeEdit' } : { type: 'open' }
  if (key.ctrl === true || key.meta === true) return null
  if (input >= '1' && input <= '5' && input.length === 1) return { type: 'view', view: VIEWS[Number(input) - 1] as ViewName }
  switch (input) {
    case 'q':
      return { type: 'quit' }
    case '?':
      return { type: 'toggleHelp' }
    case 'j':
      return { type: 'move', delta: 1 }
    case 'k':
      return { type: 'move', delta: -1 }
    case 'g':
      return { type: 'moveEdge', edge: 'start' }
    case 'G':
      return { type: 'moveEdge', edge: 'end' }
  }
  return VIEW_KEYS[state.view][input] ?? null
}

/** each view's own keys (the footer and the help are written from the same table) */
export const VIEW_KEYS: Record<ViewName, Record<string, Action>> = {
  users: {
    '/': { type: 'filterStart' },
    a: { type: 'userAdd' },
    d: { type: 'userToggleDisabled' },
    p: { type: 'userPassword' },
    x: { type: 'userDelete' },
    s: { type: 'userSessions' },
    m: { type: 'userResetMfa' },
  },
  sessions: {
    '/': { type: 'filterStart' },
    x: { type: 'sessionRevoke' },
    X: { type: 'sessionRevokeUser' },
  },
  keys: {
    r: { type: 'keyRotate' },
    x: { type: 'keyRevoke' },
  },
  smoke: {
    e: { type: 'smokeEdit' },
    r: { type: 'smokeRun' },
  },
  audit: {
    '/': { type: 'filterStart' },
  },
}

/** what each view's keys do, for the footer and the help */
export const VIEW_KEY_LABELS: Record<ViewName, Array<[string, string]>> = {
  users: [
    ['/', 'filter'],
    ['a', 'add'],
    ['d', 'disable/enable'],
    ['p', 'password'],
    ['x', 'delete'],
    ['s', 'sessions'],
    ['m', '2FA off'],
  ],
  sessions: [
    ['/', 'filter by user'],
    ['x', 'revoke'],
    ['X', 'revoke all of user'],
  ],
  keys: [
    ['r', 'rotate'],
    ['x', 'revoke'],
  ],
  smoke: [
    ['Enter/e', 'edit field'],
    ['r', 'run'],
  ],
  audit: [['/', 'filter by user or event']],
}

export const GLOBAL_KEY_LABELS: Array<[string, string]> = [
  ['1-5/Tab', 'views'],
  ['↑↓/jk', 'move'],
  ['Enter', 'details'],
  ['Esc', 'back'],
  ['?', 'help'],
  ['q', 'quit'],
]
