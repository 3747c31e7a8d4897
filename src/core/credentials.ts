/**
 * The email and password register and login take: a string each, holding more than white space.
 * A password of white space alone is no password: login refuses it whatever is stored, so a user
 * given one could never sign in, and `authctl user add` and `user passwd` refuse it too (admin.ts).
 */

/** nothing but white space (or nothing at all): not an email, not a password */
export const blank = (s: string): boolean => s.trim() === ''

/** the request's email and password, or null when either is missing or blank (CREDENTIALS_REQUIRED) */
export function credentials(body: Record<string, unknown>): { email: string; password: string } | null {
  const { email, password } = body
  if (typeof email !== 'string' || typeof password !== 'string') return null
  if (blank(email) || blank(password)) return null
  return { email, password }
}
