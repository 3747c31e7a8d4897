/** One client-visible error: its status, its message, and the headers its answer carries. */
export interface ErrorEntry {
  readonly status: number
  readonly message: string
  /** headers of every answer with this code (http/reply.ts adds them) */
  readonly headers?: Readonly<Record<string, string>>
  /** the answer clears the refresh cookie, whose attributes come from config (http/reply.ts) */
  readonly clearsRefreshCookie?: true
}

/** the answer is the last on its connection: the request may not have been read whole */
const CLOSE = { connection: 'close' } as const

/**
 * The one registry of client-visible errors: every status and message the HTTP API can answer
 * with lives here, and the README's error table is checked against it by a test.
 */
export const errorRegistry = {
  BAD_REQUEST: { status: 400, message: 'Bad request', headers: CLOSE },
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
} as const satisfies Record<string, ErrorEntry>

export type ErrorCode = keyof typeof errorRegistry

/** A deliberate, client-visible failure. Anything else that is thrown becomes a 500. */
export class AppError extends Error {
  readonly code: ErrorCode
  readonly status: number
  /** seconds, for 429 and 503 answers */
  readonly retryAfterS: number | undefined

  constructor(code: ErrorCode, opts: { params?: Record<string, string | number>; retryAfterS?: number } = {}) {
    let message: string = errorRegistry[code].message
    for (const [k, v] of Object.entries(opts.params ?? {})) message = message.replace(`{${k}}`, String(v))
    // A deliberate answer is never logged with a stack, and capturing one was most of the cost
    // of answering a refused login (a 429 flood): take none.
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(message)
    Error.stackTraceLimit = limit
    this.name = 'AppError'
    this.code = code
    this.status = errorRegistry[code].status
    this.retryAfterS = opts.retryAfterS
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof Error && (err as { name?: string }).name === 'AppError' && typeof (err as AppError).code === 'string'
}
