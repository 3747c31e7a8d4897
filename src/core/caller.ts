/**
 * Who is calling, as the use-cases see it: the client's address and user agent, and the user and
 * session an access token proves. Plain types, shared by the use-cases (auth-service, account,
 * mfa-service) without their importing each other.
 */

export interface ClientContext {
  /** the client address, for logs and session records */
  ip: string
  /** the rate-limiter key of that address (IPv6 per /64) */
  ipKey: string
  userAgent: string
  /** the device-cookie values the request carried (login and register read them) */
  devices?: readonly string[]
}

/** What /me answers of a user: its id and email, and whether its second factor is on. */
export type MeUser = Readonly<{ id: string; email: string; mfaEnabled: boolean }>

/** Who called, as an access token proves it (see AuthService.authenticate). */
export interface Authenticated {
  /** the user's id and email as the store has them now (frozen, shared) */
  user: MeUser
  /** the session the token belongs to (its `sid` claim) */
  sessionId: string
}

export interface Logger {
  info(obj: object, msg?: string): void
  warn(obj: object, msg?: string): void
}
