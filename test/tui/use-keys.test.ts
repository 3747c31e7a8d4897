/**
 * The key hook (src/tui/use-keys.ts) under Ink, in memory (ink-testing-library): each key Ink
 * reads becomes the key map's actions in the state the keys before it left, even when several
 * arrive before React renders again, and Ink's key flags (page, home, end, Shift-Tab) reach the
 * map. What each key means is keymap.test.ts's; the whole UI is views.test.ts's.
 */
import t, { type Test } from 'tap'
import { Text } from 'ink'
import { render } from 'ink-testing-library'
import { createElement, useReducer } from 'react'
import type { Action } from '../../src/tui/actions.js'
import { reducer } from '../../src/tui/reducer.js'
import { initialState, mode, selectedUser, type State } from '../../src/tui/state.js'
import { useKeys } from '../../src/tui/use-keys.js'
import { user } from './fake-deps.js'
import { sleep } from './mount.js'

const USERS = Array.from({ length: 30 }, (_, i) => user(`user${String(i).padStart(2, '0')}@example.com`))

function start(): State {
  const s = initialState({ smokeUrl: 'http://127.0.0.1:8080', smokeSteps: ['login'], listRows: 10 })
  return reducer(reducer(s, { type: 'resize', columns: 100, rows: 30 }), { type: 'loaded', snapshot: { users: USERS, sessions: [], keys: [] } })
}

/** a component on the hook alone: the reducer's state, each dispatched action recorded */
function mountKeys(t: Test) {
  const actions: Action[] = []
  let latest: State = start()
  function Probe(): ReturnType<typeof createElement> {
    const [state, dispatch] = useReducer(reducer, undefined, start)
    latest = state
    useKeys(state, (a) => {
      actions.push(a)
      dispatch(a)
    })
    return createElement(Text, null, `${state.view} ${mode(state)} [${state.lists.users.filter}] ${state.form === null ? 'no form' : 'form'}`)
  }
  const app = render(createElement(Probe))
  t.teardown(() => app.unmount())
  return { app, actions, state: () => latest }
}

const settle = (): Promise<void> => sleep(30)

t.test('keys that arrive before React renders again are each read in the state the ones before left', async (t) => {
  const { app, actions, state } = mountKeys(t)
  await settle()
  // one after the other, in the same turn: no render in between
  app.stdin.write('/')
  app.stdin.write('a')
  app.stdin.write('d')
  await settle()
  t.same(actions, [{ type: 'filterStart' }, { type: 'filterType', text: 'a' }, { type: 'filterType', text: 'd' }], 'a and d typed into the filter, not read as commands')
  t.equal(state().lists.users.filter, 'ad')
  t.equal(state().form, null, 'no Add user form (a, read in the list)')
  t.match(app.lastFrame(), 'users filter [ad] no form')
})

t.test('Ink’s key flags reach the key map: arrows, page down and up, end and home, Tab and Shift-Tab', async (t) => {
  const { app, actions, state } = mountKeys(t)
  await settle()
  const keys: Array<[string, Action]> = [
    ['\u001b[B', { type: 'move', delta: 1 }],
    ['\u001b[6~', { type: 'page', delta: 1 }],
    ['\u001b[5~', { type: 'page', delta: -1 }],
    ['\u001b[F', { type: 'moveEdge', edge: 'end' }],
    ['\u001b[H', { type: 'moveEdge', edge: 'start' }],
    ['\u001b[A', { type: 'move', delta: -1 }],
    ['\t', { type: 'cycleView', delta: 1 }],
    ['\u001b[Z', { type: 'cycleView', delta: -1 }],
  ]
  const emails: Array<string | undefined> = []
  for (const [input] of keys) {
    app.stdin.write(input)
    await settle()
    emails.push(selectedUser(state())?.email)
  }
  t.same(actions, keys.map(([, action]) => action))
  const page = state().listRows
  t.same(
    emails.slice(0, 6),
    [USERS[1], USERS[1 + page], USERS[1], USERS[29], USERS[0], USERS[0]].map((u) => u!.email),
    'and the reducer moved the selection each time',
  )
  t.equal(state().view, 'users', 'Tab and back')
})
