/**
 * The file of `authctl export` / `authctl import` (README, "Export and import"): UTF-8, one JSON
 * record per line (the store's ExportRecords, meta first), and a last line
 * `{"type":"end","records":N}` counting the records before it, so that a file cut short, even
 * at a line break, is refused instead of imported in part.
 *
 * Written and read as a stream: neither side ever holds the whole store as one string.
 */
import { constants, createReadStream } from 'node:fs'
import { open, unlink, type FileHandle } from 'node:fs/promises'
import { AppError } from '../errors.js'
import type { ExportRecord } from '../store/store.js'

/** the last line of a complete export */
export interface EndRecord {
  type: 'end'
  records: number
}

/** A line longer than this is no record of authd's (the largest, an RSA key, is a few kB). */
export const MAX_LINE_BYTES = 4 * 1024 * 1024

/** writes are gathered into chunks of about this size */
const CHUNK_BYTES = 64 * 1024

/** Why a file cannot be read as an export: EXPORT_FILE_INVALID, its sentence naming the line (params.line). */
const notAnExport = (line: number, why: string): AppError => new AppError('EXPORT_FILE_INVALID', { params: { line, why } })

/**
 * Creates `file` (0600, never over an existing file: O_EXCL) and writes `records` into it, one
 * line each, then the end line; durable (fsync) before it resolves to how many records of each
 * type it wrote. A failure part-way removes the file it created. Rejects with code EEXIST, as
 * open(2) does, when the file exists (left untouched).
 */
export async function writeExportFile(file: string, records: AsyncIterable<ExportRecord>): Promise<{ counts: Record<string, number>; bytes: number }> {
  const fh = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600)
  const counts: Record<string, number> = {}
  let bytes = 0
  try {
    // the file holds password hashes and private keys: 0600 whatever the umask
    await fh.chmod(0o600)
    let chunk: string[] = []
    let size = 0
    let n = 0
    const flush = async (): Promise<void> => {
      if (chunk.length === 0) return
      bytes += await writeAll(fh, Buffer.from(chunk.join(''), 'utf8'))
      chunk = []
      size = 0
    }
    for await (const record of records) {
      const line = `${JSON.stringify(record)}\n`
      chunk.push(line)
      size += line.length
      counts[record.type] = (counts[record.type] ?? 0) + 1
      n++
      if (size >= CHUNK_BYTES) await flush()
    }
    chunk.push(`${JSON.stringify({ type: 'end', records: n } satisfies EndRecord)}\n`)
    await flush()
    await fh.sync()
  } catch (err) {
    await fh.close().catch(() => {})
    // only what this call created (O_EXCL): an incomplete export must not look like one
    await unlink(file).catch(() => {})
    throw err
  }
  await fh.close()
  return { counts, bytes }
}

async function writeAll(fh: FileHandle, buf: Buffer): Promise<number> {
  let off = 0
  while (off < buf.length) off += (await fh.write(buf, off, buf.length - off)).bytesWritten
  return buf.length
}

/**
 * The records of the export in `file`, in order, read as a stream (the end line checked and not
 * yielded). Rejects with EXPORT_FILE_INVALID naming the first line that is not UTF-8, not one JSON
 * object with a string `type`, or too long; or, at the end, a file without its end line or with
 * one that does not count the lines before it (cut short). Filesystem errors (ENOENT …) pass
 * through.
 */
export async function* readExportFile(file: string): AsyncGenerator<ExportRecord> {
  const utf8 = new TextDecoder('utf-8', { fatal: true })
  let line = 0
  let records = 0
  let end: EndRecord | undefined
  const parse = (bytes: Buffer): ExportRecord | undefined => {
    line++
    if (end !== undefined) throw notAnExport(line, 'comes after the end line: the file is not one export')
    let text: string
    try {
      text = utf8.decode(bytes)
    } catch {
      throw notAnExport(line, 'is not UTF-8 text: the file is not an export')
    }
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      throw notAnExport(line, text.trim() === '' ? 'is empty: not a record of an export' : 'is not a JSON record: the file is damaged or was cut short')
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value) || typeof (value as { type?: unknown }).type !== 'string') {
      throw notAnExport(line, 'is not a record of an export (a JSON object with a "type")')
    }
    if ((value as { type: string }).type === 'end') {
      end = value as EndRecord
      if (end.records !== records) throw notAnExport(line, `says the export has ${JSON.stringify(end.records)} records, but ${records} lines come before it: the file is damaged`)
      return undefined
    }
    records++
    return value as ExportRecord
  }
  // split on the byte 0x0A, which UTF-8 never uses inside a character
  let pending: Buffer[] = []
  let pendingBytes = 0
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    let start = 0
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, nl)
      const bytes = pendingBytes > 0 ? Buffer.concat([...pending, piece]) : piece
      pending = []
      pendingBytes = 0
      start = nl + 1
      const record = parse(bytes)
      if (record !== undefined) yield record
    }
    if (start < chunk.length) {
      pending.push(chunk.subarray(start))
      pendingBytes += chunk.length - start
      if (pendingBytes > MAX_LINE_BYTES) throw notAnExport(line + 1, `is longer than ${MAX_LINE_BYTES / 1024 / 1024} MiB: not a record of an export`)
    }
  }
  // a last line without its newline: a complete export ends with one, but an editor may drop it
  if (pendingBytes > 0) {
    const record = parse(Buffer.concat(pending))
    if (record !== undefined) yield record
  }
  if (end === undefined) {
    throw notAnExport(line === 0 ? 1 : line, line === 0 ? 'is missing: the file is empty' : 'is the last, and it is not the end line: the file was cut short')
  }
}
