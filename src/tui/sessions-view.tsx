/** The Sessions view: the list (filtered by user), or the selected session's details. Render only. */
import { Box, Text } from 'ink'
import { formatRelative, formatTime } from './format.js'
import { ListFrame } from './list-frame.js'
import { Details, Heading, Row } from './parts.js'
import { selectedIndex, visibleSessions, type State } from './state.js'

const COLUMNS = [24, 16, 16, 11, 10]

export function SessionsView(props: { state: State; height: number; now: number }) {
  const { state, now } = props
  const rows = visibleSessions(state)
  const list = state.lists.sessions
  const at = selectedIndex(rows, list)
  if (list.detail && at >= 0) {
    const s = rows[at]
    return (
      <Box flexDirection="column">
        <Text bold>Session of {s.email}</Text>
        <Text> </Text>
        <Details
          rows={[
            ['session id', s.id],
            ['user', `${s.email} (${s.userId})`],
            ['ip', s.ip || '-'],
            ['user agent', s.userAgent || '-'],
            ['created', `${formatTime(s.createdAt)} UTC`],
            ['last used', `${formatTime(s.lastUsedAt)} UTC (${formatRelative(s.lastUsedAt, now)})`],
            ['expires', `${formatTime(s.expiresAt)} UTC (${formatRelative(s.expiresAt, now)})`],
          ]}
        />
      </Box>
    )
  }
  const cells = (values: string[]): Array<[number, string]> => values.map((v, i) => [COLUMNS[i], v])
  return (
    <ListFrame
      list={list}
      rows={rows}
      selected={at}
      height={props.height - 2}
      noun="session"
      empty={list.filter === '' ? 'No live sessions: they start when users log in.' : 'No live sessions of a matching user.'}
      loading={state.snapshot === null}
      total={list.filter === '' ? state.snapshot?.sessionsTotal : undefined}
      heading={<Heading cells={cells(['USER', 'IP', 'USER AGENT', 'LAST USED', 'EXPIRES'])} />}
      row={(s, selected) => (
        <Row
          key={s.id}
          selected={selected}
          cells={cells([s.email, s.ip || '-', s.userAgent || '-', formatRelative(s.lastUsedAt, now), formatRelative(s.expiresAt, now)])}
        />
      )}
    />
  )
}
