/** The key hook: hands each key Ink reads to the reducer, which maps it (keymap.ts). */
import { useInput } from 'ink'
import type { Dispatch } from 'react'
import { splitInput, type KeyPress } from './keymap.js'
import type { Action } from './reducer.js'

export function useKeys(dispatch: Dispatch<Action>): void {
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
    for (const one of splitInput(input, press)) dispatch({ type: 'key', ...one })
  })
}
