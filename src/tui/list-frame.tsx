/** The frame every list view shares: headings, one page of rows, and the position or filter line. */
import { Box, Text } from 'ink'
import type { ReactNode } from 'react'
import { plural } from './format.js'
import { CURSOR } from './parts.js'
import { pageStart, type ListState } from './state.js'

/**
 * The position line: `6 users` when the list fits on its page, `15-28 of 40 users` when it
 * pages, `no users` when empty.
 */
export function position(opts: { count: number; start: number; shown: number; height: number; noun: string; nouns?: string; total?: number }): string {
  const { count, noun } = opts
  const nouns = opts.nouns ?? `${noun}s`
  if (count === 0) return `no ${nouns}`
  const beyond = opts.total !== undefined && opts.total > count ? ` (the latest of ${opts.total})` : ''
  const what = count > opts.height ? `${opts.start + 1}-${opts.start + opts.shown} of ${count} ${nouns}` : plural(count, noun, nouns)
  return `${what}${beyond}`
}

export function ListFrame<T>(props: {
  list: ListState
  rows: T[]
  selected: number
  height: number
  /** what one row is (`user`); `nouns` when its plural is not noun + s */
  noun: string
  nouns?: string
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
  const where = position({ count: rows.length, start, shown: page.length, height, noun, nouns: props.nouns, total: props.total })
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
          {CURSOR}
          {`  (${where})`}
        </Text>
      ) : (
        <Text>
          {'  '}
          {where}
          {list.filter === '' ? '' : list.exact ? ` of ${list.filter}` : ` matching "${list.filter}"`}
        </Text>
      )}
    </Box>
  )
}
