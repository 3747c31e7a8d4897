/**
 * What the file system said about a file authctl reads or writes (`export`, `import`, `backup`),
 * as one of authctl's sentences. A code not listed here stays the error it was (unexpected).
 */
import { statSync } from 'node:fs'
import { dirname } from 'node:path'
import { AppError } from '../errors.js'

/** the file authctl meant to make or read: an export or backup it makes, or an export it imports */
export type FileUse = 'export' | 'backup' | 'import'

const isDirectory = (path: string): boolean => statSync(path, { throwIfNoEntry: false })?.isDirectory() === true

/** the error for a file whose directory `dir` is not there: missing, or something else in its place */
export function missingDirectory(dir: string): AppError {
  return statSync(dir, { throwIfNoEntry: false }) === undefined ? new AppError('NO_DIRECTORY', { params: { dir } }) : new AppError('NOT_A_DIRECTORY', { params: { dir } })
}

export function fileError(err: unknown, file: string, use: FileUse): AppError | undefined {
  switch ((err as NodeJS.ErrnoException | null)?.code) {
    case 'EEXIST':
      return new AppError(use === 'backup' ? 'BACKUP_EXISTS' : 'EXPORT_EXISTS', { params: { file } })
    case 'ENOENT':
      if (use === 'import') return new AppError('NO_FILE', { params: { file } })
      // a directory that is there but takes no new files (/proc, say) is not a missing one
      return isDirectory(dirname(file))
        ? new AppError('CANNOT_CREATE', { params: { file, why: 'its directory takes no new files' } })
        : missingDirectory(dirname(file))
    case 'ENOTDIR':
      return missingDirectory(dirname(file))
    case 'EACCES':
    case 'EPERM':
      return new AppError('PERMISSION_DENIED', { params: { file } })
    case 'EISDIR':
      return new AppError('IS_A_DIRECTORY', { params: { file } })
    case 'ENOSPC':
    case 'EDQUOT':
      return new AppError('NO_SPACE', { params: { file, what: use === 'backup' ? 'backed up' : `${use}ed` } })
    case 'ENAMETOOLONG':
      return new AppError('NAME_TOO_LONG', { params: { file } })
    case 'ELOOP':
      return new AppError('LINK_LOOP', { params: { file } })
    case 'EROFS':
      return new AppError('CANNOT_CREATE', { params: { file, why: 'the file system is read-only' } })
    default:
      return undefined
  }
}
