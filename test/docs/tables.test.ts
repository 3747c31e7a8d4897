/**
 * Every Markdown table of the README and docs/ is whole, as GitHub renders it: it starts after a
 * blank line with a header row and its delimiter row, every row has the header's cells, and it
 * ends at a blank line. A paragraph written into a table (or rows left after one) renders as
 * stray text or as rows of prose.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ROOT } from '../helpers/app.js'

const documents = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

/** the cells of a row: split at every `|` not escaped as `\|` (GitHub splits inside code spans too) */
const cells = (row: string): number => row.trim().replace(/\\\|/g, '').replace(/^\||\|$/g, '').split('|').length
const isRow = (l: string | undefined): boolean => l !== undefined && l.startsWith('|')
const isDelimiter = (l: string | undefined): boolean => l !== undefined && /^\|(\s*:?-+:?\s*\|)+$/.test(l.trim())
/** what may stand next to a table: nothing, a blank line, or an HTML comment (a marker a test reads) */
const isBoundary = (l: string | undefined): boolean => l === undefined || l.trim() === '' || /^<!--.*-->$/.test(l.trim())

/** Problems with the tables of `text`, each with its line number; fenced code blocks are skipped. */
function tableProblems(text: string): string[] {
  const lines = text.split('\n')
  const problems: string[] = []
  let fenced = false
  let header: number | undefined
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!
    if (/^```/.test(l)) fenced = !fenced
    if (fenced || !isRow(l)) {
      header = undefined
      continue
    }
    const at = `line ${i + 1}`
    if (header === undefined) {
      // the first row of a table: its header
      if (!isBoundary(lines[i - 1])) problems.push(`${at}: a table row right after text (a table starts after a blank line): ${l.slice(0, 60)}`)
      if (!isDelimiter(lines[i + 1])) problems.push(`${at}: a table row that is no table's header (no |---| line after it): ${l.slice(0, 60)}`)
      else if (cells(lines[i + 1]!) !== cells(l)) problems.push(`${at}: the header has ${cells(l)} cells, its delimiter row ${cells(lines[i + 1]!)}`)
      header = cells(l)
    } else if (!isDelimiter(l) && cells(l) !== header) problems.push(`${at}: ${cells(l)} cells in a table of ${header}: ${l.slice(0, 60)}`)
    if (!isRow(lines[i + 1]) && !isBoundary(lines[i + 1])) problems.push(`line ${i + 2}: text right after a table (it renders as a row): ${lines[i + 1]!.slice(0, 60)}`)
  }
  return problems
}

t.test('every table of the README and docs/ renders as one table', async (t) => {
  for (const doc of documents) {
    t.same(tableProblems(readFileSync(join(ROOT, doc), 'utf8')), [], doc)
  }
})

t.test('the check finds a paragraph inside a table, rows after it, and a row of the wrong width', async (t) => {
  const table = '| a | b |\n|---|---|\n| 1 | 2 |\n'
  t.same(tableProblems(`text\n\n${table}\nmore text\n`), [], 'a whole table')
  t.same(tableProblems(`<!-- x:start -->\n${table}<!-- x:end -->\n`), [], 'between comment markers')
  t.same(tableProblems('```\n| not | a table |\n```\n'), [], 'not in a code block')
  t.same(tableProblems('| `a\\|b` | c |\n|---|---|\n| 1 | 2 |\n'), [], 'an escaped pipe is no cell boundary')
  // the README's endpoint table once held a paragraph, with three rows after it
  const broken = tableProblems(`${table}A paragraph.\n| 3 | 4 |\n`)
  t.match(broken, [/^line 4: text right after a table/, /^line 5: a table row right after text/, /^line 5: a table row that is no table's header/])
  t.match(tableProblems('| a | b |\n|---|---|\n| 1 | 2 | 3 |\n'), [/^line 3: 3 cells in a table of 2/])
  t.match(tableProblems('| a | b |\n|---|\n'), [/^line 1: the header has 2 cells, its delimiter row 1/])
})
