/** The Keys view: the signing keys with their states and times, or one key's details. Render only. */
import { Box, Text } from 'ink'
import type { KeyRow } from './deps.js'
import { formatTime } from './format.js'
import { ListFrame } from './list-frame.js'
import { Details, Heading, Row } from './parts.js'
import { selectedIndex, visibleKeys, type State } from './state.js'

const COLUMNS = [18, 7, 10, 18, 18]

/** when the key entered the state it is in; for a next key, when it starts signing */
const since = (k: KeyRow): number | null => (k.state === 'active' || k.state === 'next' ? k.activatedAt : k.state === 'retiring' ? k.retiringAt : k.retiredAt)

export function KeysView(props: { state: State; height: number }) {
  const { state } = props
  const rows = visibleKeys(state)
  const list = state.lists.keys
  const at = selectedIndex(rows, list)
  if (list.detail && at >= 0) {
    const k = rows[at]
    const utc = (ms: number | null): string => (ms === null ? '-' : `${formatTime(ms)} UTC`)
    return (
      <Box flexDirection="column">
        <Text bold>Key {k.kid}</Text>
        <Text> </Text>
        <Details
          rows={[
            ['kid', k.kid],
            ['algorithm', k.alg],
            ['state', k.state],
            ['created', utc(k.createdAt)],
            [k.state === 'next' ? 'signs from' : 'activated', utc(k.activatedAt)],
            ['retiring', utc(k.retiringAt)],
            ['retired', utc(k.retiredAt)],
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
      noun="key"
      empty="No keys: authd creates the first one when it starts; r makes one now."
      loading={state.snapshot === null}
      heading={<Heading cells={cells(['KID', 'ALG', 'STATE', 'CREATED (UTC)', 'SINCE / FROM'])} />}
      row={(k, selected) => (
        <Row key={k.kid} selected={selected} cells={cells([k.kid, k.alg, k.state, formatTime(k.createdAt), formatTime(since(k))])} />
      )}
    />
  )
}
