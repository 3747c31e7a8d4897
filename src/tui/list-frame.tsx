/** The frame every list view shares: headings, one page of rows, and the position or filter line. */
import { Box, Text } from 'ink'
import type { ReactNode } from 'react'
import { pageStart, type ListState } from './state.js'

export function ListFrame<T>(props: {
  list: ListState
  rows: T[]
  selected: number
  height: number
  noun: string
  /** what an empty list says */
  empty: string
  heading: ReactNode
  row: (row: T, selected: boolean) => ReactNode
  /** shown instead of the rows while the store has not been read */
  loading: boolean
  /** how many there are in all, when `rows` holds only the first of them */
  total?: number
}) {
  const { list, rows, selected, height, noun } = props
  const start = pageStart(selected, height)
  const page = rows.slice(start, start + height)
  const beyond = props.total !== undefined && props.total > rows.length ? ` (the latest of ${props.total})` : ''
  const where = rows.length === 0 ? `no ${noun}` : `${start + 1}-${start + page.length} of ${rows.length} ${noun}${beyond}`
  return (
    <Box flexDirection="column">
      {props.heading}
      <Box flexDirection="column" height={height}>
        {props.loading ? (
          <Text>  Reading the store…</Text>
        ) : rows.length === 0 ? (
          <Text>  {props.empty}</Text>
        ) : (
          page.map((r, i) => props.row(r, start + i === selected))
        )}
      </Box>
      {list.filtering ? (
        <Text>
          {'  Filter: '}
          {list.filter}
          <Text inverse> </Text>
          {`  (${where})`}
        </Text>
      ) : (
        <Text>
          {'  '}
          {where}
          {list.filter !== '' ? ` matching "${list.filter}"` : ''}
        </Text>
      )}
    </Box>
  )
}
