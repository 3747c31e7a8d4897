/** authctl backup: a consistent, compacted copy of the store, taken while the daemon runs. */
import { existsSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { StoreDeps } from '../deps.js'
import { FailedError, UsageError } from '../errors.js'
import { type View } from '../output.js'

export interface BackupDoc {
  /** absolute path of the backup file */
  file: string
  bytes: number
  ms: number
}

/** what `backup` says of a PostgreSQL store (exit 2): the database's own tools copy it */
export const NO_BACKUP_SENTENCE =
  'A PostgreSQL store has no authctl backup: back it up with pg_dump, or write a portable copy of it with authctl export <file>.'

export async function backup(deps: StoreDeps, args: { file: string }): Promise<BackupDoc> {
  if (deps.store.backend !== 'lmdb') throw new UsageError(NO_BACKUP_SENTENCE)
  const file = resolve(deps.cwd, args.file)
  // a backup never replaces an earlier one
  if (existsSync(file)) throw new FailedError(`${file} already exists: a backup never overwrites a file, choose a new name.`)
  const dir = dirname(file)
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new FailedError(`Directory ${dir} does not exist.`)
  const started = performance.now()
  await deps.store.backup(file)
  return { file, bytes: statSync(file).size, ms: Math.round(performance.now() - started) }
}

export const backupView = (d: BackupDoc): View => ({
  lines: [
    `Backed up the store to ${d.file} (${d.bytes} bytes, ${d.ms} ms).`,
    'It holds password hashes and private keys: keep it as private as the data directory.',
  ],
})
