/**
 * authctl export / authctl import: a portable copy of the whole store, either backend (README,
 * "Export and import"), through the Store interface only. Compute only, no printing.
 */
import { statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { adminDraft } from '../../core/audit.js'
import { canonicalEmail, checkEmail, storedEmailProblem } from '../../core/email.js'
import { AppError, isAppError } from '../../errors.js'
import type { BaseDeps, StoreDeps } from '../deps.js'
import { readExportFile, writeExportFile } from '../export-file.js'
import type { View } from '../output.js'
import { fileError } from '../file-errors.js'
import { readImport } from '../../store/import-records.js'
import type { ExportRecord, ImportCounts } from '../../store/store.js'

/** `1 key`, `2 keys` */
const count = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`

export interface ExportDoc {
  /** absolute path of the file written */
  file: string
  backend: string
  users: number
  sessions: number
  keys: number
  auditEvents: number
  bytes: number
}

export async function exportStore(deps: StoreDeps, args: { file: string }): Promise<ExportDoc> {
  const file = resolve(deps.cwd, args.file)
  // `out/` names a directory (resolve would drop the slash and write a file `out`)
  if (/[/\\]$/.test(args.file)) throw new AppError('IS_A_DIRECTORY', { params: { file } })
  let written: Awaited<ReturnType<typeof writeExportFile>>
  try {
    written = await writeExportFile(file, deps.store.exportRecords())
  } catch (err) {
    throw fileError(err, file, 'export') ?? err
  }
  const n = (type: string): number => written.counts[type] ?? 0
  return { file, backend: deps.store.backend, users: n('user'), sessions: n('session'), keys: n('key'), auditEvents: n('audit'), bytes: written.bytes }
}

export const exportView = (d: ExportDoc): View => ({
  lines: [
    `Exported the store to ${d.file}: ${count(d.users, 'user')}, ${count(d.sessions, 'session')}, ${count(d.keys, 'key')}, ${count(d.auditEvents, 'audit event')} (${d.bytes} bytes).`,
    'It holds password hashes, private keys and second-factor secrets: keep it as private as the store.',
  ],
})

export interface ImportDoc {
  /** absolute path of the file read */
  file: string
  /** where it went: the data directory, or the database URL with its password hidden */
  store: string
  users: number
  sessions: number
  keys: number
  /** the audit events the store held before, replaced by the export's log (its admin.import event says so too) */
  replacedAuditEvents: number
}

/**
 * Reads `file` once through to check it is a whole export (every line a record, the end line
 * last) before the store is opened, so a file that is none creates nothing; then loads it, all
 * or nothing, into the store `open` gives (which must have no users), with `admin.import` in the
 * same write.
 */
export async function importStore(
  base: BaseDeps,
  args: { file: string },
  open: () => Promise<StoreDeps & { close(): Promise<void> }>,
): Promise<ImportDoc> {
  const file = resolve(base.cwd, args.file)
  const refuse = (why: string): AppError => new AppError('IMPORT_REFUSED', { params: { file, why } })
  try {
    // read twice, checked and then loaded: a named pipe would give its lines to the first read
    // and leave the second waiting for a writer that is gone
    if (!statSync(file).isFile()) throw refuse('it is not a regular file (an export is read twice: save it to a file first)')
    let line = 0
    async function* checked(): AsyncGenerator<ExportRecord> {
      for await (const record of readExportFile(file)) {
        line++
        // an email's form is the core's to judge; the rest, the store's (readImport)
        const email = record.type === 'user' ? (record.user as { email?: unknown } | undefined)?.email : undefined
        const problem = typeof email === 'string' ? emailProblem(email) : undefined
        if (problem !== undefined) throw refuse(`line ${line} of the export: a user whose email ${problem}`)
        yield record
      }
    }
    // every record checked as the store will check it when it loads them, before it is opened:
    // a file it would refuse creates nothing
    await readImport(checked())
  } catch (err) {
    const code = isAppError(err) ? err.code : undefined
    if (code === 'EXPORT_FILE_INVALID' || code === 'BAD_EXPORT') throw refuse((err as Error).message)
    throw fileError(err, file, 'import') ?? err
  }
  const deps = await open()
  try {
    let counts: ImportCounts
    try {
      // its admin.import in the import's own write: a crash never leaves the one without the other
      counts = await deps.store.importRecords(readExportFile(file), (loaded) => [adminDraft('admin.import', { at: deps.now(), detail: { ...loaded } })])
    } catch (err) {
      const code = isAppError(err) ? err.code : undefined
      if (code === 'EXPORT_FILE_INVALID') throw refuse(`${(err as Error).message} (it changed while being read)`)
      if (code === 'NOT_EMPTY') throw refuse(`the store at ${deps.store.location} already has users (import only into a new, empty store)`)
      if (code === 'BAD_EXPORT') throw refuse((err as Error).message)
      throw fileError(err, file, 'import') ?? err
    }
    return { file, store: deps.store.location, ...counts }
  } finally {
    await deps.close()
  }
}

export const importView = (d: ImportDoc): View => ({
  lines: [
    `Imported ${d.file} into ${d.store}: ${count(d.users, 'user')}, ${count(d.sessions, 'session')}, ${count(d.keys, 'key')}.`,
    ...(d.replacedAuditEvents === 0
      ? []
      : [`The store's own ${d.replacedAuditEvents === 1 ? 'audit event (from before the import) was' : `${d.replacedAuditEvents} audit events (from before the import) were`} replaced by the export's log; its admin.import event says so.`]),
  ],
})

/**
 * Why `email` cannot be a stored user's, or undefined. A store keeps and looks up emails in
 * canonical form, so any other form would be a second account under one email, reachable by id
 * only; and it holds only registrable ones, but for a domain UTS #46 ToASCII refuses, which a
 * store from before the ASCII-domain migration may still hold (core/email.ts).
 */
function emailProblem(email: string): string | undefined {
  const canonical = canonicalEmail(email)
  if (canonical !== email) return `is not in the canonical form a store keeps (${JSON.stringify(canonical)})`
  const stored = storedEmailProblem(email)
  if (stored !== undefined) return stored
  const r = checkEmail(email)
  return 'problem' in r && !r.problem.startsWith('its domain ') ? r.problem : undefined
}


