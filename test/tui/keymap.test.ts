/**
 * Keys to actions on their own: what a key means depends only on what has the keyboard (a list,
 * a filter, a form, a confirmation, the help), and the reducer never sees a key.
 */
import t from 'tap'
import type { Action, KeyPress } from '../../src/tui/actions.js'
import { keysToActions, keyToAction, splitInput } from '../../src/tui/keymap.js'
import { reducer } from '../../src/tui/reducer.js'
import { initialState, type State } from '../../src/tui/state.js'
import { key, user } from './fake-deps.js'

function start(): State {
  const s = initialState({ smokeUrl: 'http://127.0.0.1:8080', smokeSteps: ['login'] })
  return reducer(s, { type: 'loaded', snapshot: { users: [user('alice@example.com')], sessions: [], keys: [key('kid-a')] } })
}
const map = (s: State, input: string, k: KeyPress = {}): Action | null => keyToAction(s, input, k)

t.test('one terminal chunk is split into single keys; a single key passes through', async (t) => {
  t.same(splitInput('ab\r', {}), [
    { input: 'a', key: {} },
    { input: 'b', key: {} },
    { input: '', key: { return: true } },
  ])
  t.same(splitInput('\t\x7f', {}), [
    { input: '', key: { tab: true } },
    { input: '', key: { backspace: true } },
  ])
  t.same(splitInput('x', { shift: true }), [{ input: 'x', key: { shift: true } }], 'single keys pass through')
  t.same(splitInput('ab', { ctrl: true }), [{ input: 'ab', key: { ctrl: true } }], 'a chord is not split')
})

t.test('in a list, letters are commands: the view keys, moves, views, help, quit', async (t) => {
  const s = start()
  t.same(map(s, 'j'), { type: 'move', delta: 1 })
  t.same(map(s, '', { upArrow: true }), { type: 'move', delta: -1 })
  t.same(map(s, '3'), { type: 'view', view: 'keys' })
  t.same(map(s, '', { tab: true, shift: true }), { type: 'cycleView', delta: -1 })
  t.same(map(s, 'a'), { type: 'userAdd' })
  t.same(map(s, '', { return: true }), { type: 'open' })
  t.same(map(s, '?'), { type: 'toggleHelp' })
  t.same(map(s, 'q'), { type: 'quit' })
  t.same(map(reducer(s, { type: 'view', view: 'keys' }), 'r'), { type: 'keyRotate' })
  t.same(map(reducer(s, { type: 'view', view: 'smoke' }), 'r'), { type: 'smokeRun' })
  t.equal(map(s, 'r'), null, 'a key another view owns does nothing here')
})

t.test('in a form or a filter, letters are text; in a confirmation only y is yes', async (t) => {
  const form = reducer(start(), { type: 'userAdd' })
  t.same(map(form, 'q'), { type: 'fieldType', text: 'q' })
  t.same(map(form, '', { escape: true }), { type: 'formCancel' })
  const filter = reducer(start(), { type: 'filterStart' })
  t.same(map(filter, 'x'), { type: 'filterType', text: 'x' })
  t.same(map(filter, '', { escape: true }), { type: 'filterClear' })
  const confirm = reducer(start(), { type: 'userDelete' })
  t.same(map(confirm, 'y'), { type: 'confirmYes' })
  t.same(map(confirm, '', { return: true }), { type: 'confirmNo' })
  t.equal(map(confirm, 'x'), null)
  t.same(map(form, 'c', { ctrl: true }), { type: 'quit' }, 'Ctrl-C quits from anywhere')
})

t.test('in a terminal too small to draw the UI, only q and Ctrl-C act (keys typed blind delete nothing)', async (t) => {
  const small = reducer(start(), { type: 'resize', columns: 79, rows: 24 })
  for (const input of ['x', 'y', 'a', '3', 'r']) t.equal(map(small, input), null, input)
  t.equal(map(small, '', { return: true }), null)
  t.same(map(small, 'q'), { type: 'quit' })
  t.same(map(small, 'c', { ctrl: true }), { type: 'quit' })
  t.same(map(reducer(small, { type: 'resize', columns: 80, rows: 24 }), 'x'), { type: 'userDelete' }, 'resized: the keys act again')
})

t.test('a chunk becomes actions, each key read in the state the actions before it left', async (t) => {
  // "a" opens the form, so "q" is then text, and \r moves to the next field
  t.same(keysToActions(start(), 'aq\r', {}, reducer), [
    { type: 'userAdd' },
    { type: 'fieldType', text: 'q' },
    { type: 'formSubmit' },
  ])
  t.same(keysToActions(start(), 'zq', {}, reducer), [{ type: 'quit' }], 'a key that means nothing adds no action')
})
