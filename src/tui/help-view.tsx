/**
 * `?`: every key of the current view and the global ones. Render only. No blank rows: the Users
 * view's keys and the global ones fill the 16 rows of the body at 80×24 exactly.
 */
import { Box, Text } from 'ink'
import { GLOBAL_KEY_LABELS, VIEW_KEY_LABELS } from './keymap.js'
import { VIEW_TITLES, type ViewName } from './state.js'

function KeyTable(props: { rows: Array<[string, string]> }) {
  return (
    <Box flexDirection="column">
      {props.rows.map(([k, what]) => (
        <Box key={k}>
          <Box width={12} flexShrink={0}>
            <Text bold>{`  ${k}`}</Text>
          </Box>
          <Text>{what}</Text>
        </Box>
      ))}
    </Box>
  )
}

export function HelpView(props: { view: ViewName }) {
  return (
    <Box flexDirection="column">
      <Text bold>Keys: {VIEW_TITLES[props.view]}</Text>
      <KeyTable rows={VIEW_KEY_LABELS[props.view]} />
      <Text bold>Keys: everywhere</Text>
      <KeyTable
        rows={[
          ['1 2 3 4 5', 'Users, Sessions, Keys, Smoke, Audit'],
          ['Tab', 'next view (Shift-Tab: previous)'],
          ['↑ ↓ j k', 'move; PgUp PgDn g G: page, first, last'],
          ['Enter', 'open the details (again: back)'],
          ['Esc', 'back, cancel'],
          ['q Ctrl-C', 'quit'],
        ]}
      />
      {props.view === 'audit' ? (
        <Text>New events come in at the top within a second; the list follows them while its first row is selected.</Text>
      ) : (
        <Text>Destructive actions ask first: y confirms; n, Esc or Enter cancels.</Text>
      )}
    </Box>
  )
}
