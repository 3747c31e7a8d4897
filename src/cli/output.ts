/**
 * Printing for authctl: a command's data becomes either one JSON document (`--json`) or a
 * readable view (a table, labelled fields, or lines). Commands never print; main calls this once.
 */

import { visible } from '../errors.js'

/** What a command shows without --json. */
export type View =
  | { table: { columns: string[]; rows: string[][] }; empty?: string; note?: string }
  | { fields: Array<[label: string, value: string]>; note?: string }
  | { lines: string[] }

/**
 * Times in JSON documents are ISO 8601 UTC strings with milliseconds (or null); tables show the
 * same instant to the second.
 */
export const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

export const shortTime = (ms: number | null): string => (ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'))

/**
 * one cell of text: control characters (a hostile user agent, say) are shown escaped, and so are
 * those that show nothing or turn the text around (a right-to-left override); long text cut
 */
export function cell(value: string, max = 60): string {
  // eslint-disable-next-line no-control-regex
  const clean = visible(value.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`))
  const chars = [...clean]
  return chars.length > max ? chars.slice(0, max - 1).join('') + '…' : clean
}

const width = (s: string): number => [...s].length

const tableLine = (widths: number[], cells: string[]): string =>
  cells
    .map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat(Math.max(0, widths[i]! - width(c)))))
    .join('  ')
    .trimEnd()

const fitWidths = (columns: string[], rows: string[][]): number[] => columns.map((c, i) => rows.reduce((w, r) => Math.max(w, width(r[i] ?? '')), width(c)))

export function formatTable(columns: string[], rows: string[][]): string {
  const widths = fitWidths(columns, rows)
  return [tableLine(widths, columns), ...rows.map((r) => tableLine(widths, r))].join('\n') + '\n'
}

/**
 * A table printed a page at a time (a list too long to hold): the header comes with the first
 * page, and the column widths are fitted to it, so a list of one page prints as formatTable does.
 */
export function tablePages(columns: string[]): (rows: string[][]) => string {
  let widths: number[] | undefined
  return (rows) => {
    const first = widths === undefined
    widths ??= fitWidths(columns, rows)
    const lines = rows.map((r) => tableLine(widths!, r))
    return (first ? [tableLine(widths, columns), ...lines] : lines).join('\n') + '\n'
  }
}

/**
 * `{"<key>": [...]}` as renderJson prints it, written an array page at a time: `open()` starts it,
 * `items(page)` continues it, `close()` ends it.
 */
export function jsonArrayPages(key: string): { open(): string; items(page: unknown[]): string; close(): string } {
  let count = 0
  const item = (v: unknown): string => '    ' + JSON.stringify(v, null, 2).replace(/\n/g, '\n    ')
  return {
    open: () => `{\n  ${JSON.stringify(key)}: [`,
    items(page) {
      if (page.length === 0) return ''
      const text = (count === 0 ? '\n' : ',\n') + page.map(item).join(',\n')
      count += page.length
      return text
    },
    close: () => (count === 0 ? ']\n}\n' : '\n  ]\n}\n'),
  }
}

export function renderView(view: View): string {
  if ('table' in view) {
    const { columns, rows } = view.table
    const body = rows.length === 0 && view.empty !== undefined ? `${view.empty}\n` : formatTable(columns, rows)
    return view.note === undefined ? body : `${body}${view.note}\n`
  }
  if ('fields' in view) {
    const w = Math.max(0, ...view.fields.map(([label]) => width(label)))
    const body = view.fields.map(([label, value]) => `${label}:${' '.repeat(w - width(label) + 1)}${value}`.trimEnd()).join('\n') + '\n'
    return view.note === undefined ? body : `${body}${view.note}\n`
  }
  return view.lines.map((l) => l + '\n').join('')
}

export function renderJson(data: unknown): string {
  return JSON.stringify(data, null, 2) + '\n'
}
