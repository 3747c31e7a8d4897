/**
 * Canonical email: trim, then NFKC, then lower-case. NFKC first so that compatibility forms
 * (full-width letters, the KELVIN SIGN) fold to their plain letters before case-folding; the
 * other order is not stable (lower-casing can produce characters NFKC changes again).
 * Trimmed again at the end: NFKC turns some spacing marks (U+00A8 DIAERESIS, U+00B4 ACUTE…) into
 * a space plus a combining mark, and without the second trim canonicalising twice would differ.
 */
export function canonicalEmail(email: string): string {
  return email.trim().normalize('NFKC').toLowerCase().trim()
}

const MAX_EMAIL_BYTES = 254
// C0, DEL and C1 control characters
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** Register-time validity of an already canonical email: exactly one @, both sides non-empty. */
export function isValidEmail(canonical: string): boolean {
  if (canonical.length === 0 || Buffer.byteLength(canonical, 'utf8') > MAX_EMAIL_BYTES) return false
  if (CONTROL.test(canonical) || /\s/.test(canonical)) return false
  const at = canonical.indexOf('@')
  if (at <= 0 || at !== canonical.lastIndexOf('@') || at === canonical.length - 1) return false
  return canonical.isWellFormed()
}

/** Whether a string can ever be a stored email (cheap guard before any store lookup). */
export function mayBeStoredEmail(canonical: string): boolean {
  return canonical.length > 0 && Buffer.byteLength(canonical, 'utf8') <= MAX_EMAIL_BYTES
}
