/**
 * Everything secret the run sends or receives, so the hygiene case can look for it in the logs.
 * Every password the cases make carries the canary marker, so one search finds them all.
 */
import { randomBytes } from 'node:crypto'

export const CANARY = 'CanaryPw7q'

/** A fresh password: the canary marker, then random letters (never on the common list). */
export const password = () => `${CANARY}-${randomBytes(12).toString('base64url')}`

export const secrets = {
  access: new Set(),
  refresh: new Set(),
  /** second-factor secrets: TOTP secrets, otpauth URLs, recovery codes, mfaTokens (not the 6-digit codes: too short to search a whole run's logs for) */
  mfa: new Set(),
}

/** Remembers the second-factor secrets of a response (setup, confirm, recovery-codes, a login answered mfaRequired). */
export function noteMfa(res) {
  const d = res.body?.data ?? {}
  for (const v of [d.secret, d.otpauthUrl, d.mfaToken, ...(Array.isArray(d.recoveryCodes) ? d.recoveryCodes : [])]) if (typeof v === 'string') secrets.mfa.add(v)
}

/** Remembers the tokens of a login/register/refresh response. */
export function noteTokens(res, cookieName) {
  const at = res.body?.data?.accessToken
  if (typeof at === 'string') secrets.access.add(at)
  noteMfa(res)
  const sc = res.headers?.['set-cookie']
  for (const c of sc === undefined ? [] : Array.isArray(sc) ? sc : [sc]) {
    if (!c.startsWith(`${cookieName}=`)) continue
    const v = c.slice(cookieName.length + 1).split(';')[0]
    if (v !== '') secrets.refresh.add(v)
  }
}
