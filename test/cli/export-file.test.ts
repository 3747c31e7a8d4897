import { readFileSync, statSync, writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { MAX_LINE_BYTES, readExportFile, writeExportFile } from '../../src/cli/export-file.js'
import { isAppError } from '../../src/errors.js'
import type { ExportRecord } from '../../src/store/store.js'

const META: ExportRecord = { type: 'meta', format: 1, schema: 5, backend: 'lmdb', exportedAt: '2026-01-02T03:04:05.678Z' }
const SECRET: ExportRecord = { type: 'secret', name: 'device_key', value: 'k€y ✓ \u2028 "quoted"' }
const ANCHOR: ExportRecord = { type: 'audit_anchor', anchor: { seq: 0, hash: '0'.repeat(64) } }

async function* from(records: ExportRecord[]): AsyncGenerator<ExportRecord> {
  for (const r of records) yield r
}

async function readAll(file: string): Promise<ExportRecord[]> {
  const out: ExportRecord[] = []
  for await (const r of readExportFile(file)) out.push(r)
  return out
}

/** the line an EXPORT_FILE_INVALID error names, and its sentence */
async function refusal(t: Test, file: string): Promise<{ line: number; message: string }> {
  const err = await readAll(file).then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!isAppError(err) || err.code !== 'EXPORT_FILE_INVALID') {
    t.fail('expected an EXPORT_FILE_INVALID error', { err })
    return { line: NaN, message: '' }
  }
  return { line: err.params!.line as number, message: err.message }
}

const lines = (...records: unknown[]): string => records.map((r) => `${typeof r === 'string' ? r : JSON.stringify(r)}\n`).join('')

t.test('what is written is read back, record for record, from a file only its owner can read', async (t) => {
  const file = join(t.testdir(), 'export.jsonl')
  const records = [META, SECRET, ANCHOR]
  const { counts, bytes } = await writeExportFile(file, from(records))
  t.same(counts, { meta: 1, secret: 1, audit_anchor: 1 })
  t.equal(bytes, statSync(file).size)
  t.equal(statSync(file).mode & 0o777, 0o600)
  const text = readFileSync(file, 'utf8')
  t.equal(text.split('\n').length, 5, 'one line per record, the end line, and a final newline')
  t.same(JSON.parse(text.split('\n')[3]!), { type: 'end', records: 3 })
  t.same(await readAll(file), records)
})

t.test('never writes over an existing file, and leaves it as it was', async (t) => {
  const file = join(t.testdir(), 'export.jsonl')
  writeFileSync(file, 'something else')
  await t.rejects(writeExportFile(file, from([META])), { code: 'EEXIST' })
  t.equal(readFileSync(file, 'utf8'), 'something else')
})

t.test('an export that fails part-way leaves no file behind', async (t) => {
  const file = join(t.testdir(), 'export.jsonl')
  async function* failing(): AsyncGenerator<ExportRecord> {
    yield META
    throw new Error('the store went away')
  }
  await t.rejects(writeExportFile(file, failing()), /the store went away/)
  t.notOk(existsSync(file))
})

t.test('a file that is not a whole export is refused, naming the line', async (t) => {
  const dir = t.testdir()
  const cases: Array<[string, string | Buffer, number, RegExp]> = [
    ['a garbled line', lines(META, '{"type":"secret","name":', ANCHOR, { type: 'end', records: 3 }), 2, /^line 2 is not a JSON record/],
    ['cut short inside a line', lines(META, SECRET).slice(0, -10), 2, /^line 2 is not a JSON record: the file is damaged or was cut short$/],
    ['cut short at a line break', lines(META, SECRET), 2, /^line 2 is the last, and it is not the end line: the file was cut short$/],
    ['an empty file', '', 1, /^line 1 is missing: the file is empty$/],
    ['an empty line', lines(META, '', SECRET, { type: 'end', records: 3 }), 2, /^line 2 is empty/],
    ['JSON that is no record', lines(META, '[1,2]'), 2, /^line 2 is not a record of an export/],
    ['a record without a type', lines(META, { user: {} }), 2, /^line 2 is not a record of an export/],
    ['an end line that miscounts', lines(META, SECRET, { type: 'end', records: 1 }), 3, /^line 3 says the export has 1 records, but 2 lines come before it/],
    ['a line after the end', lines(META, { type: 'end', records: 1 }, SECRET), 3, /^line 3 comes after the end line/],
    ['text that is not UTF-8', Buffer.concat([Buffer.from(lines(META, SECRET)), Buffer.from([0x7b, 0xff, 0xfe, 0x7d, 0x0a])]), 3, /^line 3 is not UTF-8 text/],
  ]
  for (const [name, content, line, message] of cases) {
    const file = join(dir, `${name.replace(/\W+/g, '-')}.jsonl`)
    writeFileSync(file, content)
    const r = await refusal(t, file)
    t.equal(r.line, line, `${name}: line ${line}`)
    t.match(r.message, message, name)
  }
})

t.test('a line longer than any record is refused without reading it whole', async (t) => {
  const file = join(t.testdir(), 'huge.jsonl')
  writeFileSync(file, lines(META) + '"' + 'x'.repeat(MAX_LINE_BYTES + 10))
  const r = await refusal(t, file)
  t.equal(r.line, 2)
  t.match(r.message, /^line 2 is longer than 4 MiB/)
})

t.test('a last line without its newline and CRLF line ends are read', async (t) => {
  const file = join(t.testdir(), 'edited.jsonl')
  writeFileSync(file, lines(META, SECRET).replace(/\n/g, '\r\n') + JSON.stringify({ type: 'end', records: 2 }))
  t.same(await readAll(file), [META, SECRET])
})

t.test('records are read as the file streams in: one far beyond a read chunk arrives whole', async (t) => {
  const file = join(t.testdir(), 'long.jsonl')
  const big: ExportRecord = { type: 'secret', name: 'mfa_key', value: 'é'.repeat(200_000) }
  await writeExportFile(file, from([META, big, SECRET]))
  t.same(await readAll(file), [META, big, SECRET])
})
