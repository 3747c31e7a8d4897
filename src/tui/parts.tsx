/** Small pieces the views share: a fixed-width cell, a list row, a text field. Render only. */
import { Box, Text } from 'ink'
import type { ReactNode } from 'react'
import type { Field } from './state.js'
import { visible } from '../errors.js'

/**
 * one column of a row: fixed width, cut with … when the text is longer. Text is shown with what
 * a terminal would act on or hide escaped: a user agent is a client's, and Ink writes text as it is
 */
export function Cell(props: { width: number; children: ReactNode; bold?: boolean; inverse?: boolean; align?: 'left' | 'right' }) {
  return (
    <Box width={props.width} flexShrink={0} justifyContent={props.align === 'right' ? 'flex-end' : 'flex-start'} paddingRight={1}>
      <Text wrap="truncate-end" bold={props.bold} inverse={props.inverse}>
        {typeof props.children === 'string' ? visible(props.children) : props.children}
      </Text>
    </Box>
  )
}

/** a list row; the selected one carries a `>` (not only a colour) */
export function Row(props: { selected: boolean; cells: Array<[number, string]>; alignRight?: number[] }) {
  return (
    <Box>
      <Text bold={props.selected}>{props.selected ? '> ' : '  '}</Text>
      {props.cells.map(([width, text], i) => (
        <Cell key={i} width={width} inverse={props.selected} align={props.alignRight?.includes(i) === true ? 'right' : 'left'}>
          {text}
        </Cell>
      ))}
    </Box>
  )
}

export function Heading(props: { cells: Array<[number, string]>; alignRight?: number[] }) {
  return (
    <Box>
      <Text>{'  '}</Text>
      {props.cells.map(([width, text], i) => (
        <Cell key={i} width={width} bold align={props.alignRight?.includes(i) === true ? 'right' : 'left'}>
          {text}
        </Cell>
      ))}
    </Box>
  )
}

/**
 * Where typing goes. Ink hides the terminal's own cursor, and an inverse space at the end of a
 * line is lost (tmux's capture, a copy of the screen), so it is a visible block.
 */
export const CURSOR = '█'

/**
 * A labelled input line; a hidden one shows one `*` per character. The selected one has a `>`,
 * and the cursor when it has the keyboard (`typing`).
 */
export function FieldLine(props: { field: Field; selected: boolean; typing: boolean; labelWidth?: number }) {
  const { field, selected } = props
  const shown = field.hidden ? '*'.repeat([...field.value].length) : field.value
  return (
    <Box>
      <Text bold={selected}>{selected ? '> ' : '  '}</Text>
      <Box width={props.labelWidth ?? 10} flexShrink={0}>
        <Text bold={selected}>{field.label}</Text>
      </Box>
      <Text wrap="truncate-start">
        {shown}
        {selected && props.typing ? CURSOR : ''}
      </Text>
    </Box>
  )
}

/** label and value pairs of a details page (values escaped as a Cell's are) */
export function Details(props: { rows: Array<[string, string]> }) {
  return (
    <Box flexDirection="column">
      {props.rows.map(([label, value]) => (
        <Box key={label}>
          <Box width={14} flexShrink={0}>
            <Text bold>{label}</Text>
          </Box>
          <Text wrap="wrap">{visible(value)}</Text>
        </Box>
      ))}
    </Box>
  )
}
