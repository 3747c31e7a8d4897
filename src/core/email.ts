/**
 * Canonical email: trim, then NFKC, then lower-case, then the domain in its UTS #46 ToASCII form
 * (node's url.domainToASCII). NFKC first so that compatibility forms (full-width letters, the
 * KELVIN SIGN) fold to their plain letters before case-folding; the other order is not stable
 * (lower-casing can produce characters NFKC changes again). Trimmed again after lower-casing:
 * NFKC turns some spacing marks (U+00A8 DIAERESIS, U+00B4 ACUTE…) into a space plus a combining
 * mark, and without the second trim canonicalising twice would differ. The domain in ASCII makes
 * `bücher.example` and `xn--bcher-kva.example` (and `example。com`, and a soft hyphen or a
 * zero-width space inside a domain, which ToASCII drops) one address, as mail delivery sees it.
 */
import { domainToASCII } from 'node:url'

const MAX_EMAIL_BYTES = 254
// C0, DEL and C1 control characters
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
// Characters that show nothing or turn the text around: an address holding one looks like
// another (a zero-width space, a soft hyphen, a right-to-left override), so none is accepted
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Bidi_Control}]/u

// what ToASCII leaves of a domain it read as an IP address: IPv4 in dotted decimal, or [IPv6]
const IP_HOST = /^(?:\d{1,3}(?:\.\d{1,3}){3}|\[.*\])$/

const folded = (email: string): string => email.trim().normalize('NFKC').toLowerCase().trim()

/** the domain's ASCII form, or '' when UTS #46 ToASCII refuses it */
const asciiDomain = (domain: string): string => (domain === '' ? '' : domainToASCII(domain))

/** The form an email is stored, looked up and rate-limited under (see the header comment). */
export function canonicalEmail(email: string): string {
  const f = folded(email)
  const at = f.lastIndexOf('@')
  if (at < 0) return f
  // a domain ToASCII refuses is kept as it is: such an address cannot be registered, and a
  // lookup of it finds nothing, or a user stored under it as it is (the ASCII-domain migration,
  // store/migrations.ts, leaves such an email unchanged)
  const ascii = asciiDomain(f.slice(at + 1))
  return ascii === '' ? f : f.slice(0, at + 1) + ascii
}

/**
 * Why `email` cannot be registered, as a short phrase for an admin, or the canonical form it is
 * registered under. The HTTP API answers every problem with 400 Invalid email address.
 */
export function checkEmail(email: string): { email: string } | { problem: string } {
  const f = folded(email)
  // looked for before ToASCII, which drops some of them from a domain silently, and before the
  // trim for the invisible ones (trim drops a byte order mark at either end)
  for (const s of [email, f]) {
    const invisible = INVISIBLE.exec(s)
    if (invisible !== null) return { problem: `it contains an invisible or direction-changing character (${codePoint(invisible[0])})` }
  }
  if (CONTROL.test(email.trim()) || CONTROL.test(f)) return { problem: 'it contains a control character' }
  if (/\s/.test(f)) return { problem: 'it contains a space' }
  if (!f.isWellFormed()) return { problem: 'it is not well-formed Unicode' }
  const at = f.indexOf('@')
  if (at < 0 || at !== f.lastIndexOf('@')) return { problem: 'it must contain exactly one @' }
  if (at === 0) return { problem: 'the part before the @ is empty' }
  const domain = f.slice(at + 1)
  const ascii = asciiDomain(domain)
  if (ascii === '') return { problem: 'its domain is not a valid domain name' }
  // ToASCII drops the dot that ends a domain read as an IPv4 address (`2024.` is 0.0.7.232)
  if (ascii.endsWith('.') || domain.endsWith('.')) return { problem: 'its domain ends in a dot' }
  // a domain read as an address is rewritten by ToASCII (`2024` becomes 0.0.7.232, `0x10`
  // 0.0.0.16), and mail is not delivered to a bare address: refused rather than stored rewritten
  if (IP_HOST.test(ascii)) return { problem: 'its domain is an IP address, not a domain name' }
  const canonical = f.slice(0, at + 1) + ascii
  if (Buffer.byteLength(canonical, 'utf8') > MAX_EMAIL_BYTES) return { problem: `it is longer than ${MAX_EMAIL_BYTES} bytes` }
  return { email: canonical }
}

/** The canonical form of an email that may be registered, or null (400 Invalid email address). */
export function registrableEmail(email: string): string | null {
  const r = checkEmail(email)
  return 'email' in r ? r.email : null
}

/** U+200B: how a character is named where it cannot be shown */
export const codePoint = (ch: string): string => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`

/**
 * Whether a string can ever be a stored email (cheap guard before any store lookup): not empty,
 * at most MAX_EMAIL_BYTES, and no control character (registration refuses them, and PostgreSQL
 * cannot hold a NUL in text at all: a lookup of one would fail rather than find nothing).
 */
export function mayBeStoredEmail(canonical: string): boolean {
  return withinEmailLength(canonical) && !CONTROL.test(canonical)
}

/** Not empty and at most MAX_EMAIL_BYTES: the limits of a login's email are kept for any such */
export function withinEmailLength(canonical: string): boolean {
  return canonical.length > 0 && Buffer.byteLength(canonical, 'utf8') <= MAX_EMAIL_BYTES
}

/** Why mayBeStoredEmail refuses `canonical`, in words (for authctl), or undefined */
export function storedEmailProblem(canonical: string): string | undefined {
  if (canonical.length === 0) return 'is empty'
  if (Buffer.byteLength(canonical, 'utf8') > MAX_EMAIL_BYTES) return 'is too long'
  if (CONTROL.test(canonical)) return 'contains a control character'
  return undefined
}
