/** The Audit view: the newest events first (filtered by user or event), or one event's details. Render only. */
import { Box, Text } from 'ink'
import { AUDIT_READ } from './deps.js'
import { formatRelative } from './format.js'
import { ListFrame } from './list-frame.js'
import { Details, Heading, Row } from './parts.js'
import { selectedIndex, visibleAudit, type State } from './state.js'

// with the row's two-column marker: 2 + 8 + 21 + 22 + 26 = 79
const COLUMNS = [8, 21, 22, 26]

/** `2025-03-04 09:05:07` (UTC) */
const formatSecond = (ms: number): string => new Date(ms).toISOString().slice(0, 19).replace('T', ' ')

const detailText = (detail: Record<string, unknown>): string => (Object.keys(detail).length === 0 ? '-' : JSON.stringify(detail))

export function AuditView(props: { state: State; height: number; now: number }) {
  const { state, now } = props
  const rows = visibleAudit(state)
  const list = state.lists.audit
  const at = selectedIndex(rows, list)
  if (list.detail && at >= 0) {
    const e = rows[at]
    return (
      <Box flexDirection="column">
        <Text bold>
          Event {e.seq}: {e.event}
        </Text>
        <Text> </Text>
        <Details
          rows={[
            ['time', `${formatSecond(e.at)} UTC (${formatRelative(e.at, now)})`],
            ['actor', e.actor],
            ['user', e.email === null ? (e.userId ?? '-') : `${e.email}${e.userId === null ? '' : ` (${e.userId})`}`],
            ['session', e.sessionId ?? '-'],
            ['ip', e.ip ?? '-'],
            ['user agent', e.userAgent ?? '-'],
            ['detail', detailText(e.detail)],
          ]}
        />
      </Box>
    )
  }
  const cells = (values: string[]): Array<[number, string]> => values.map((v, i) => [COLUMNS[i], v])
  const all = state.audit.rows ?? []
  return (
    <ListFrame
      list={list}
      rows={rows}
      selected={at}
      height={props.height - 2}
      noun={all.length >= AUDIT_READ ? 'latest event' : 'event'}
      empty={list.filter === '' ? 'No audit events yet.' : 'No events of a matching user or event.'}
      loading={state.audit.rows === null}
      heading={<Heading cells={cells(['SEQ', 'TIME (UTC)', 'EVENT', 'USER'])} />}
      row={(e, selected) => <Row key={e.seq} selected={selected} cells={cells([String(e.seq), formatSecond(e.at), e.event, e.email ?? e.userId ?? '-'])} />}
    />
  )
}
