/**
 * The whole screen: header (data dir, counts), view tabs, the current view, a status line and
 * the keys of what has the keyboard. Render only: it reads State and nothing else. At 80×24
 * it uses 23 lines (writing the last line of a terminal can scroll it).
 */
import { Spinner } from '@inkjs/ui'
import { Box, Text } from 'ink'
import { AuditView } from './audit-view.js'
import { plural } from './format.js'
import { FormView } from './form-view.js'
import { HelpView } from './help-view.js'
import { GLOBAL_KEY_LABELS, VIEW_KEY_LABELS } from './keymap.js'
import { KeysView } from './keys-view.js'
import { SessionsView } from './sessions-view.js'
import { SmokeView } from './smoke-view.js'
import { MIN_COLUMNS, MIN_ROWS, mode, taskLabel, tooSmall, viewNotice, VIEWS, VIEW_TITLES, type State } from './state.js'
import { UsersView } from './users-view.js'

export const WIDTH = 79

function Header(props: { state: State; storeLabel: string }) {
  const s = props.state.snapshot
  // every live session of the store (each user's count), not the Sessions view's filtered list
  const sessions = s === null ? 0 : s.users.reduce((n, u) => n + u.sessions, 0)
  const counts = s === null ? 'reading…' : [plural(s.users.length, 'user'), plural(sessions, 'session'), plural(s.keys.length, 'key')].join(' · ')
  return (
    <Box width={WIDTH} justifyContent="space-between">
      <Box flexShrink={1} paddingRight={2}>
        <Text wrap="truncate-start">
          <Text bold>authd</Text> · {props.storeLabel}
        </Text>
      </Box>
      <Box flexShrink={0}>
        <Text>{counts}</Text>
      </Box>
    </Box>
  )
}

function Tabs(props: { state: State }) {
  return (
    <Box width={WIDTH}>
      {VIEWS.map((v, i) => {
        const current = v === props.state.view
        const label = `${i + 1} ${VIEW_TITLES[v]}`
        return (
          <Box key={v} marginRight={1}>
            <Text bold={current} inverse={current}>
              {current ? `[${label}]` : ` ${label} `}
            </Text>
          </Box>
        )
      })}
    </Box>
  )
}

function Body(props: { state: State; height: number; now: number }) {
  const { state, height } = props
  const busy = state.tasks.find((t) => t.task.kind !== 'smoke')
  let body
  if (state.help) body = <HelpView view={state.view} />
  else if (state.form !== null) body = <FormView form={state.form} busy={busy === undefined ? null : taskLabel(busy.task)} />
  else if (state.view === 'users') body = <UsersView state={state} height={height} />
  else if (state.view === 'sessions') body = <SessionsView state={state} height={height} now={props.now} />
  else if (state.view === 'keys') body = <KeysView state={state} height={height} />
  else if (state.view === 'audit') body = <AuditView state={state} height={height} now={props.now} />
  else body = <SmokeView state={state} />
  return (
    <Box flexDirection="column" height={height} width={WIDTH} overflow="hidden">
      {body}
    </Box>
  )
}

/**
 * the two lines under the view: a confirmation, a running operation, or the last outcome. A
 * confirmation has three, the footer's second line with them (its keys take one line), so the
 * whole question shows, the record it names and what the action also does.
 */
function Status(props: { state: State; lines: number }) {
  const { state } = props
  const busy = state.tasks.find((t) => t.task.kind !== 'smoke')
  const notice = viewNotice(state)
  let line
  if (state.confirm !== null) line = <Text bold>Confirm (y/N): {state.confirm.prompt}</Text>
  else if (busy !== undefined && state.form === null) line = <Spinner label={taskLabel(busy.task)} />
  else if (notice !== null) line = <Text>{notice.kind === 'error' ? `Error: ${notice.text}` : notice.text}</Text>
  else if (state.view === 'audit' && state.audit.error !== null) line = <Text>Error: {state.audit.error}</Text>
  else if (state.loadError !== null) line = <Text>Error: {state.loadError}</Text>
  else line = <Text> </Text>
  return (
    <Box height={props.lines} width={WIDTH} overflow="hidden" flexDirection="column">
      {line}
    </Box>
  )
}

const keysLine = (pairs: Array<[string, string]>): string => pairs.map(([k, what]) => `${k} ${what}`).join('  ')

/** the keys that work now: those of the view, or of the form, confirmation or filter that has the keyboard */
export function footerLines(state: State): [string, string] {
  switch (mode(state)) {
    case 'small':
      return ['', '']
    case 'help':
      return ['Esc/?/Enter close help', keysLine([['q', 'quit']])]
    case 'confirm':
      // one line: the question has the second (Status)
      return [keysLine([['y', 'yes'], ['n/Esc/Enter', 'no']]), '']
    case 'form':
      return [keysLine([['Enter', 'next field / submit'], ['Tab/↑↓', 'field'], ['Esc', 'cancel']]), 'Ctrl-C quit']
    case 'smokeEdit':
      return [keysLine([['Enter', 'next field / run'], ['Tab/↑↓', 'field'], ['Esc', 'stop editing']]), 'Ctrl-C quit']
    case 'filter':
      return [keysLine([['type', 'to filter'], ['Enter', 'keep'], ['Esc', 'clear'], ['↑↓', 'move']]), 'Ctrl-C quit']
    case 'nav':
      // in Smoke, Enter edits the fields (the view's own keys say so)
      return [keysLine(VIEW_KEY_LABELS[state.view]), keysLine(GLOBAL_KEY_LABELS.filter(([k]) => state.view !== 'smoke' || k !== 'Enter'))]
  }
}

export function Screen(props: { state: State; storeLabel: string; now: number }) {
  const { state } = props
  // drawn in less room, the layout would break: say what it needs instead, until resized
  if (tooSmall(state)) {
    const { columns, rows } = state.terminal
    return <Text>{`authctl tui needs ${MIN_COLUMNS}×${MIN_ROWS} (this terminal is ${columns}×${rows})`}</Text>
  }
  const [line1, line2] = footerLines(state)
  const confirming = mode(state) === 'confirm'
  return (
    <Box flexDirection="column" width={WIDTH}>
      <Header state={state} storeLabel={props.storeLabel} />
      <Tabs state={state} />
      <Text>{'─'.repeat(WIDTH)}</Text>
      <Body state={state} height={state.listRows + 2} now={props.now} />
      <Status state={state} lines={confirming ? 3 : 2} />
      <Text wrap="truncate-end">{line1}</Text>
      {!confirming && <Text wrap="truncate-end">{line2 === '' ? ' ' : line2}</Text>}
    </Box>
  )
}
