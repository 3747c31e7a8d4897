/** authctl backup: a consistent, compacted copy of the store, taken while the daemon runs. */
import { existsSync, lstatSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { StoreDeps } from '../deps.js'
import { AppError, isAppError } from '../../errors.js'
import { fileError, missingDirectory } from '../file-errors.js'
import { type View } from '../output.js'

export interface BackupDoc {
  /** absolute path of the backup file */
  file: string
  bytes: number
  ms: number
}

/** a PostgreSQL store has none: the database's own tools copy it (exit 2, naming them) */
export function refuseWithoutLmdb(backend: string): void {
  if (backend !== 'lmdb') throw new AppError('NO_BACKUP')
}

export async function backup(deps: StoreDeps, args: { file: string }): Promise<BackupDoc> {
  // a PostgreSQL store (exit 2): the database's own tools copy it
  refuseWithoutLmdb(deps.store.backend)
  const file = resolve(deps.cwd, args.file)
  try {
    // a backup never replaces an earlier one, nor anything else there (a dangling symlink too):
    // refused before the copy is made; the store refuses again when it puts the copy in place
    if (lstatSync(file, { throwIfNoEntry: false }) !== undefined) throw new AppError('BACKUP_EXISTS', { params: { file } })
    const dir = dirname(file)
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw missingDirectory(dir)
    const started = performance.now()
    await deps.store.backup(file)
    return { file, bytes: statSync(file).size, ms: Math.round(performance.now() - started) }
  } catch (err) {
    // what the file system said (a name too long, no permission, no space) as a sentence
    if (isAppError(err)) throw err
    throw fileError(err, file, 'backup') ?? err
  }
}

export const backupView = (d: BackupDoc): View => ({
  lines: [
    `Backed up the store to ${d.file} (${d.bytes} bytes, ${d.ms} ms).`,
    'It holds password hashes and private keys: keep it as private as the data directory.',
  ],
})
