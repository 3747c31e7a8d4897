import t from 'tap'
import { cell, formatTable, iso, jsonArrayPages, renderJson, renderView, shortTime, tablePages } from '../../src/cli/output.js'

t.test('tables align columns by characters, not bytes, and trim trailing space', async (t) => {
  t.equal(
    formatTable(['ID', 'EMAIL', 'N'], [['a', 'ünïcode@example.com', '1'], ['bbbb', 'x@y', '22']]),
    'ID    EMAIL                N\na     ünïcode@example.com  1\nbbbb  x@y                  22\n',
  )
  t.equal(formatTable(['A', 'B'], [['x', '']]), 'A  B\nx\n')
})

t.test('cells escape control characters and cut long text', async (t) => {
  t.equal(cell('curl\u001b[2J\r\n'), 'curl\\x1b[2J\\x0d\\x0a')
  // a right-to-left override would turn the rest of the line around; a zero-width space hides
  t.equal(cell('evil\u202e/8.5.0 lruc\u200b'), 'evil\\u202e/8.5.0 lruc\\u200b')
  t.equal(cell('tag\u{e0041}'), 'tag\\u{e0041}', 'a character past the BMP in braces')
  t.equal(cell('abcdef', 4), 'abc…')
  t.equal(cell('abcd', 4), 'abcd')
})

t.test('views and JSON', async (t) => {
  t.equal(renderView({ table: { columns: ['A'], rows: [] }, empty: 'Nothing.' }), 'Nothing.\n')
  t.equal(renderView({ fields: [['id', '1'], ['email', 'a@b']], note: 'Done.' }), 'id:    1\nemail: a@b\nDone.\n')
  t.equal(renderView({ lines: ['one', 'two'] }), 'one\ntwo\n')
  t.equal(renderJson({ a: [1] }), '{\n  "a": [\n    1\n  ]\n}\n')
  t.equal(iso(Date.UTC(2025, 2, 4, 9, 5, 0, 7)), '2025-03-04T09:05:00.007Z')
  t.equal(iso(null), null)
  t.equal(shortTime(Date.UTC(2025, 2, 4, 9, 5, 0, 7)), '2025-03-04T09:05:00Z')
  t.equal(shortTime(null), '-')
})

t.test('a document written a page at a time is the one renderJson prints', async (t) => {
  const items = [{ id: 'a', n: 1, nested: { x: [1, 2] } }, { id: 'b', s: 'two\nlines' }, { id: 'c' }]
  for (const pages of [[], [[]], [items], [items.slice(0, 1), [], items.slice(1)], items.map((i) => [i])]) {
    const doc = jsonArrayPages('sessions')
    const text = doc.open() + pages.map((p) => doc.items(p)).join('') + doc.close()
    t.equal(text, renderJson({ sessions: pages.flat() }), `${pages.length} pages`)
  }
})

t.test('a table printed a page at a time: one page is formatTable; later pages keep its widths', async (t) => {
  const rows = [['a', 'ünïcode@example.com', '1'], ['bbbb', 'x@y', '22']]
  t.equal(tablePages(['ID', 'EMAIL', 'N'])(rows), formatTable(['ID', 'EMAIL', 'N'], rows))
  const pages = tablePages(['ID', 'EMAIL', 'N'])
  t.equal(pages(rows) + pages([['cc', 'y@z', '3'], ['a-much-longer-id', 'q', '4']]), formatTable(['ID', 'EMAIL', 'N'], rows) + 'cc    y@z                  3\na-much-longer-id  q                    4\n')
})
