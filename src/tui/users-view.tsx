/** The Users view: the list, or the selected user's details. Render only. */
import { Box, Text } from 'ink'
import { formatTime } from './format.js'
import { ListFrame } from './list-frame.js'
import { Details, Heading, Row } from './parts.js'
import { selectedIndex, visibleUsers, type State } from './state.js'

const COLUMNS = [34, 10, 5, 17, 9]

export function UsersView(props: { state: State; height: number }) {
  const { state } = props
  const rows = visibleUsers(state)
  const list = state.lists.users
  const at = selectedIndex(rows, list)
  if (list.detail && at >= 0) {
    const u = rows[at]
    return (
      <Box flexDirection="column">
        <Text bold>User {u.email}</Text>
        <Text> </Text>
        <Details
          rows={[
            ['id', u.id],
            ['email', u.email],
            ['status', u.disabled ? 'disabled' : 'active'],
            ['2fa', u.mfaEnabled ? 'on' : 'off'],
            ['created', `${formatTime(u.createdAt)} UTC`],
            ['sessions', String(u.sessions)],
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
      noun="user"
      empty={list.filter === '' ? 'No users yet: press a to add one.' : 'No user matches the filter (Esc in the filter clears it).'}
      loading={state.snapshot === null}
      heading={<Heading cells={cells(['EMAIL', 'STATUS', '2FA', 'CREATED (UTC)', 'SESSIONS'])} alignRight={[4]} />}
      row={(u, selected) => (
        <Row
          key={u.id}
          selected={selected}
          cells={cells([u.email, u.disabled ? 'disabled' : 'active', u.mfaEnabled ? 'on' : 'off', formatTime(u.createdAt), String(u.sessions)])}
          alignRight={[4]}
        />
      )}
    />
  )
}
