/**
 * The exit codes of authd and authctl, one table for both (README, "Administer with authctl" and
 * "Configure"): 0 success, 1 the operation failed, 2 usage or config error (the command cannot run
 * as given: fix the flags, the config, the data directory, or run it where it can ask). One entry
 * per code only authctl and authd start show, so a new code does not compile without its exit
 * code; a code of the HTTP API that reaches either program (a password the policy refuses, the
 * store's database unavailable) is a refused operation: 1. An error that is not an AppError is
 * unexpected: 1 too.
 */
import type { CliErrorCode, ErrorCode } from './errors.js'

export type ExitCode = 1 | 2

export const exitCodes: Readonly<Record<CliErrorCode, ExitCode>> = {
  CONFIG_INVALID: 2,

  DATA_DIR: 1,
  DATA_DIR_NOT_DIRECTORY: 2,
  NOT_A_STORE: 1,
  STORE_DAMAGED: 1,
  SCHEMA_TOO_NEW: 2,
  STORE_WRITE_FAILED: 1,
  KEY_TOO_LONG: 1,
  STORE_EMAIL_TAKEN: 1,
  NOT_EMPTY: 1,
  BAD_EXPORT: 1,
  NO_BACKUP: 2,

  LISTEN_FAILED: 1,
  DATA_DIR_IN_USE: 1,

  USER_NOT_FOUND: 1,
  KEY_NOT_FOUND: 1,
  SESSION_ID_NOT_FOUND: 1,
  USER_EXISTS: 1,
  USER_EMAIL_INVALID: 1,

  TUI_NEEDS_TERMINAL: 2,
  PASSWORD_NEEDS_TERMINAL: 2,
  CONFIRMATION_NEEDED: 2,
  NOT_CONFIRMED: 1,
  CANCELLED: 1,
  NO_DATA_DIR: 2,
  NO_STORE_IN_DIR: 2,
  REVOKE_WHAT: 2,
  REVOKE_ALL_NEEDS_YES: 2,
  LIMITS_TARGET_INVALID: 2,
  SMOKE_URL_INVALID: 2,
  SMOKE_EMAIL_EMPTY: 2,
  SMOKE_CHECK_FAILED: 1,
  AUDIT_LIMIT_INVALID: 2,
  AUDIT_SINCE_INVALID: 2,
  AUDIT_EVENT_UNKNOWN: 2,
  AUDIT_USER_EMPTY: 2,
  BACKUP_EXISTS: 1,
  EXPORT_EXISTS: 1,
  NO_DIRECTORY: 1,
  NOT_A_DIRECTORY: 1,
  NO_FILE: 1,
  PERMISSION_DENIED: 1,
  IS_A_DIRECTORY: 1,
  NO_SPACE: 1,
  CANNOT_CREATE: 1,
  NAME_TOO_LONG: 1,
  LINK_LOOP: 1,
  EXPORT_FILE_INVALID: 1,
  IMPORT_REFUSED: 1,
  STDIN_NOT_UTF8: 1,
  STDIN_LINE_TOO_LONG: 1,
  NO_PASSWORD_ON_STDIN: 1,
  PASSWORD_BLANK: 1,
  NO_PASSWORD: 1,
  PASSWORDS_DIFFER: 1,
}

/** the exit code of an AppError with `code` */
export function exitCodeOf(code: ErrorCode): ExitCode {
  return Object.hasOwn(exitCodes, code) ? exitCodes[code as CliErrorCode] : 1
}
