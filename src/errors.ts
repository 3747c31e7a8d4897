/**
 * The one error type and the one registry of its codes. Every deliberate failure of authd and
 * authctl is an AppError with a code registered here:
 *
 * - codes with a `status` are the HTTP API's answers: every status and message a client can get
 *   lives here, and the README's error table is checked against them by a test;
 * - codes without one are seen only by people running `authctl` or `authd start` (config, store,
 *   admin and command-line errors): their message is a template whose {params} name what it is
 *   about, or, where the sentence is built from parts (a config error naming key and value), the
 *   message given where it is thrown. authd's and authctl's exit code for each is in src/exit-codes.ts.
 *
 * This module imports nothing: every layer may use it.
 */
/**
 * One registered error: its message, and for the HTTP API's codes its status and the headers its
 * answer carries.
 */
export interface ErrorEntry {
  /** the HTTP status; absent for codes only authctl and authd start show */
  readonly status?: number
  readonly message: string
  /** headers of every answer with this code (http/reply.ts adds them) */
  readonly headers?: Readonly<Record<string, string>>
  /** the answer clears the refresh cookie, whose attributes come from config (http/reply.ts) */
  readonly clearsRefreshCookie?: true
}

/** the answer is the last on its connection: the request may not have been read whole */
const CLOSE = { connection: 'close' } as const

export const errorRegistry = {
  BAD_REQUEST: { status: 400, message: 'Bad request', headers: CLOSE },
  /** node's request timeouts (daemon/server.ts): the request was not read whole in time */
  REQUEST_TIMEOUT: { status: 408, message: 'Request timeout', headers: CLOSE },
  INVALID_JSON: { status: 400, message: 'Invalid JSON body' },
  CREDENTIALS_REQUIRED: { status: 400, message: 'Email and password are required' },
  INVALID_EMAIL: { status: 400, message: 'Invalid email address' },
  PASSWORD_TOO_SHORT: { status: 400, message: 'Password must be at least {min} characters' },
  PASSWORD_TOO_LONG: { status: 400, message: 'Password must be at most {max} characters' },
  PASSWORD_TOO_COMMON: { status: 400, message: 'Password is too common' },
  PASSWORDS_REQUIRED: { status: 400, message: 'Current and new password are required' },
  MFA_FIELDS_REQUIRED: { status: 400, message: 'MFA token and code are required' },
  INVALID_SETUP_CODE: { status: 400, message: 'Invalid code' },
  UNAUTHORIZED: { status: 401, message: 'Unauthorized', headers: { 'www-authenticate': 'Bearer' } },
  INVALID_CREDENTIALS: { status: 401, message: 'Invalid email or password' },
  INVALID_ACCESS_TOKEN: { status: 401, message: 'Invalid or expired access token', headers: { 'www-authenticate': 'Bearer error="invalid_token"' } },
  REFRESH_REQUIRED: { status: 401, message: 'Refresh token is required' },
  INVALID_REFRESH_TOKEN: { status: 401, message: 'Invalid or expired refresh token', clearsRefreshCookie: true },
  INVALID_MFA_TOKEN: { status: 401, message: 'Invalid or expired MFA token' },
  INVALID_MFA_CODE: { status: 401, message: 'Invalid code' },
  CURRENT_PASSWORD_INCORRECT: { status: 403, message: 'Current password is incorrect' },
  REGISTRATION_DISABLED: { status: 403, message: 'Registration is disabled' },
  FORBIDDEN_ORIGIN: { status: 403, message: 'Forbidden origin' },
  NOT_FOUND: { status: 404, message: 'Not found' },
  SESSION_NOT_FOUND: { status: 404, message: 'Session not found' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed' },
  EMAIL_TAKEN: { status: 409, message: 'Email already registered' },
  MFA_ALREADY_ENABLED: { status: 409, message: 'Two-factor authentication is already enabled' },
  MFA_NOT_ENABLED: { status: 409, message: 'Two-factor authentication is not enabled' },
  MFA_NO_SETUP: { status: 409, message: 'No two-factor setup in progress' },
  BODY_TOO_LARGE: { status: 413, message: 'Request body too large', headers: CLOSE },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Content-Type must be application/json' },
  HEADERS_TOO_LARGE: { status: 431, message: 'Request headers too large', headers: CLOSE },
  TOO_MANY_LOGINS: { status: 429, message: 'Too many login attempts' },
  TOO_MANY_REGISTRATIONS: { status: 429, message: 'Too many registration attempts' },
  TOO_MANY_REQUESTS: { status: 429, message: 'Too many requests' },
  TOO_MANY_MFA_ATTEMPTS: { status: 429, message: 'Too many attempts' },
  INTERNAL: { status: 500, message: 'Internal server error' },
  BUSY: { status: 503, message: 'Server busy, try again shortly' },
  NOT_READY: { status: 503, message: 'Not ready' },
  STORE_UNAVAILABLE: { status: 503, message: 'Service unavailable' },

  // Seen only by authctl and authd start (no status). A message ending without a full stop is the
  // store's or the config's: authd prints it as it is, authctl as a sentence.

  // config: the message given at the throw names the key (or file) and the offending value
  CONFIG_INVALID: { message: 'config: the configuration is not valid' },

  // the store
  /** the data directory cannot be made or opened (permissions, a read-only or full disk) */
  DATA_DIR: { message: 'cannot use the data directory {path}: {why}' },
  /** a file is where the data directory should be (a wrong --data or store.path) */
  DATA_DIR_NOT_DIRECTORY: { message: 'cannot use the data directory {path}: a file is in the way (it must be a directory)' },
  /** the data directory holds a file that is not an authd store */
  NOT_A_STORE: { message: '{file} is not an authd store (not an LMDB data file)' },
  /** the data directory's store is cut short or emptied: LMDB would crash on it (SIGBUS) or start afresh */
  STORE_DAMAGED: { message: '{file} is damaged: {why}. Restore a backup of the store, or move the data directory aside to start a new, empty one' },
  /**
   * a store or database written by a newer authd, refused whole (README, "Upgrade"); the
   * PostgreSQL store gives its own sentence at the throw (a database has no backup of authd's)
   */
  SCHEMA_TOO_NEW: { message: 'the store was written by a newer authd (schema {found}; this version understands up to {latest}): upgrade authd or restore a backup' },
  /** a write's commit failed (a full disk, an I/O error): none of it was written */
  STORE_WRITE_FAILED: { message: 'the store could not be written: {why}' },
  /** a key (an email, an id) too long for the store */
  KEY_TOO_LONG: { message: '{what} too long for the store' },
  /** updateUser changed the email to one another user has */
  STORE_EMAIL_TAKEN: { message: 'email already registered' },
  /** importRecords into a store that already has users */
  NOT_EMPTY: { message: '{store} already has users: import only into a new, empty store' },
  /** importRecords met a record it cannot take; {line} is 1-based */
  BAD_EXPORT: { message: 'line {line} of the export: {why}' },
  /** backup() of a store that has none (PostgreSQL: pg_dump or `authctl export`) */
  NO_BACKUP: { message: 'A PostgreSQL store has no authctl backup: back it up with pg_dump, or write a portable copy of it with authctl export <file>.' },

  // authd start
  /** the address or socket cannot be listened on; {why} says what to change (daemon/server.ts) */
  LISTEN_FAILED: { message: 'cannot listen on {where}: {why}' },
  /** another authd runs on this LMDB data directory (daemon/data-lock.ts) */
  DATA_DIR_IN_USE: {
    message: 'another authd (pid {pid}) is running on the data directory {dir}: one authd per LMDB data directory (its rate limits live in its memory); for several, use PostgreSQL',
  },

  // the administrator's operations (core/admin.ts), shared by authctl and its TUI
  USER_NOT_FOUND: { message: 'No user with email or id {ref}.' },
  KEY_NOT_FOUND: { message: 'No key with kid {kid}.' },
  SESSION_ID_NOT_FOUND: { message: 'No session with id {id}.' },
  USER_EXISTS: { message: 'A user with email {email} already exists.' },
  USER_EMAIL_INVALID: { message: '{email} is not a valid email address: {problem}.' },

  // authctl's commands
  TUI_NEEDS_TERMINAL: { message: 'The terminal UI needs an interactive terminal: run authctl tui without redirecting its input or output.' },
  PASSWORD_NEEDS_TERMINAL: { message: 'Standard input is not a terminal: pass --password-stdin and write the password to standard input.' },
  CONFIRMATION_NEEDED: { message: 'Will not {action} without confirmation: pass --yes (standard input is not a terminal).' },
  NOT_CONFIRMED: { message: 'Cancelled: did not {action}.' },
  CANCELLED: { message: 'Cancelled.' },
  NO_DATA_DIR: { message: 'No authd data directory at {path}: pass --data or set store.path (authd creates it on first start).' },
  NO_STORE_IN_DIR: { message: 'No authd store in {path}: the directory holds other files but no data.mdb. Pass --data or set store.path.' },
  REVOKE_WHAT: { message: 'Name what to revoke, exactly one of: a session id, --user <email|id>, or --all --yes.' },
  REVOKE_ALL_NEEDS_YES: { message: 'Revoking every session of every user needs --yes (authctl sessions revoke --all --yes).' },
  LIMITS_TARGET_INVALID: { message: '{target} is neither an email address nor an IP address.' },
  SMOKE_URL_INVALID: { message: '{what} must be an absolute http:// or https:// URL (got {url}).' },
  SMOKE_EMAIL_EMPTY: { message: '--email must not be empty.' },
  /** a check of a smoke step beyond its status; the message given at the throw says which */
  SMOKE_CHECK_FAILED: { message: 'the answer is not what authd gives' },
  AUDIT_LIMIT_INVALID: { message: '--limit takes a whole number from 1 to {max} (got {got}).' },
  AUDIT_SINCE_INVALID: { message: '--since takes a duration (30s, 15m, 12h, 30d) or an ISO 8601 time (2025-03-04T09:05:00Z), not {got}.' },
  AUDIT_EVENT_UNKNOWN: { message: '{got} is not an audit event name (authctl audit list --help lists them).' },
  AUDIT_USER_EMPTY: { message: '--user takes an email or a user id.' },
  BACKUP_EXISTS: { message: '{file} already exists: a backup never overwrites a file, choose a new name.' },
  EXPORT_EXISTS: { message: '{file} already exists: an export never overwrites a file, choose a new name.' },
  NO_DIRECTORY: { message: 'Directory {dir} does not exist.' },
  NOT_A_DIRECTORY: { message: '{dir} is not a directory.' },
  NO_FILE: { message: 'No file {file}.' },
  PERMISSION_DENIED: { message: 'Permission denied: {file}.' },
  IS_A_DIRECTORY: { message: '{file} is a directory.' },
  NO_SPACE: { message: 'No space left on the device for {file}: nothing was {what}.' },
  /** the file cannot be made where it was asked for; {why}: the directory takes no new files, a read-only file system */
  CANNOT_CREATE: { message: 'Cannot create {file}: {why}.' },
  NAME_TOO_LONG: { message: 'The name {file} is too long for the file system.' },
  LINK_LOOP: { message: 'The symbolic links of {file} go round in a loop.' },
  /** a file that is no export (cli/export-file.ts): {line} is 1-based */
  EXPORT_FILE_INVALID: { message: 'line {line} {why}' },
  IMPORT_REFUSED: { message: 'Cannot import {file}: {why}; nothing was written.' },
  STDIN_NOT_UTF8: { message: 'Standard input is not valid UTF-8.' },
  STDIN_LINE_TOO_LONG: { message: 'The line on standard input is longer than {max} bytes.' },
  NO_PASSWORD_ON_STDIN: { message: 'No password was given on standard input.' },
  /** a new password of white space alone: login refuses one (register answers it CREDENTIALS_REQUIRED) */
  PASSWORD_BLANK: { message: 'The password is white space alone: no one could sign in with it.' },
  NO_PASSWORD: { message: 'No password was given.' },
  PASSWORDS_DIFFER: { message: 'The two passwords do not match.' },
} as const satisfies Record<string, ErrorEntry>

export type ErrorCode = keyof typeof errorRegistry

/** the codes the HTTP API answers with (those with a status) */
export type HttpErrorCode = { [C in ErrorCode]: (typeof errorRegistry)[C] extends { status: number } ? C : never }[ErrorCode]

/** the registry's entries the HTTP API answers with, by code (the README's error table, docs/openapi.yaml) */
export const httpErrors = Object.fromEntries(Object.entries(errorRegistry).filter(([, e]) => 'status' in e)) as {
  [C in HttpErrorCode]: (typeof errorRegistry)[C]
}

/** the codes only authctl and authd start show (no status) */
export type CliErrorCode = Exclude<ErrorCode, HttpErrorCode>

export type ErrorParams = Readonly<Record<string, string | number>>

export interface AppErrorOptions {
  /** fill the message's {names} */
  params?: ErrorParams
  /** seconds, for 429 and 503 answers */
  retryAfterS?: number
  /**
   * the whole message, where it is built from parts; for STORE_UNAVAILABLE, the detail for logs
   * and authctl (a client gets the registry's sentence)
   */
  message?: string
}

/**
 * A deliberate failure, with its registered code. On the HTTP side anything else that is thrown
 * (and an AppError whose code has no status) becomes a 500; in authctl anything else is an
 * unexpected error.
 */
export class AppError extends Error {
  readonly code: ErrorCode
  /** the HTTP status; undefined for codes only authctl and authd start show */
  readonly status: number | undefined
  readonly params: ErrorParams | undefined
  /** seconds, for 429 and 503 answers */
  readonly retryAfterS: number | undefined

  constructor(code: ErrorCode, opts: AppErrorOptions = {}) {
    const entry: { status?: number; message: string } = errorRegistry[code]
    const message = opts.message ?? (opts.params === undefined ? entry.message : fill(entry.message, opts.params))
    if (entry.status === undefined) super(message)
    else {
      // A deliberate answer is never logged with a stack, and capturing one was most of the cost
      // of answering a refused login (a 429 flood): take none.
      const limit = Error.stackTraceLimit
      Error.stackTraceLimit = 0
      super(message)
      Error.stackTraceLimit = limit
    }
    this.name = 'AppError'
    this.code = code
    this.status = entry.status
    this.params = opts.params
    this.retryAfterS = opts.retryAfterS
  }
}

/** `template` with each {name} that `params` has replaced by its value (once: a value is not read again) */
function fill(template: string, params: ErrorParams): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (Object.hasOwn(params, name) ? String(params[name]) : whole))
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof Error && (err as { name?: string }).name === 'AppError' && typeof (err as AppError).code === 'string'
}

/** the store cannot be read or written now (its database unreachable or failing): a 503, not a fault */
export const isStoreUnavailable = (err: unknown): boolean => isAppError(err) && err.code === 'STORE_UNAVAILABLE'

/** an AppError the HTTP API answers with as it is (its code has a status) */
export function isHttpError(err: unknown): err is AppError & { code: HttpErrorCode; status: number } {
  return isAppError(err) && err.status !== undefined
}

// Characters a terminal would act on or hide: controls (C0, DEL, C1), line and paragraph
// separators, and those that show nothing or turn the text around (a zero-width space, a
// right-to-left override). Text a person typed or a client sent is shown with them escaped.
const UNSEEN = /[\p{Cc}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Bidi_Control}]/gu
const escapeUnseen = (c: string): string => {
  const n = c.codePointAt(0)!
  return n <= 0xffff ? `\\u${n.toString(16).padStart(4, '0')}` : `\\u{${n.toString(16)}}`
}

/**
 * `text` in double quotes for a message, as JSON writes a string, with every character a
 * terminal would act on or hide written as an escape: `"a\u202eb@example.com"`, not an address
 * shown backwards.
 */
export const quoted = (text: string): string => JSON.stringify(text).replace(UNSEEN, escapeUnseen)

/** a line for a terminal: every character it would act on or hide written as an escape */
export const visible = (text: string): string => text.replace(UNSEEN, escapeUnseen)
