/**
 * The key hook: maps each key Ink reads to actions (keymap.ts) in the current state, and
 * dispatches them. The reducer never sees a key.
 */
import { useInput } from 'ink'
import { useRef, type Dispatch } from 'react'
import type { Action, KeyPress } from './actions.js'
import { keysToActions } from './keymap.js'
import { reducer } from './reducer.js'
import type { State } from './state.js'

export function useKeys(state: State, dispatch: Dispatch<Action>): void {
  // the state the next key is read in: the one rendered, and the keys read since (Ink may read
  // several input events before React renders again)
  const latest = useRef(state)
  latest.current = state
  useInput((input, key) => {
    const press: KeyPress = {
      upArrow: key.upArrow,
      downArrow: key.downArrow,
      pageUp: key.pageUp,
      pageDown: key.pageDown,
      home: key.home,
      end: key.end,
      return: key.return,
      escape: key.escape,
      ctrl: key.ctrl,
      shift: key.shift,
      tab: key.tab,
      backspace: key.backspace,
      delete: key.delete,
      meta: key.meta,
    }
    for (const action of keysToActions(latest.current, input, press, reducer)) {
      latest.current = reducer(latest.current, action)
      dispatch(action)
    }
  })
}
