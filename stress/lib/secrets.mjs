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
  /** second factor: TOTP secrets (base32) handed out by setup */
  totpSecrets: new Set(),
  /** TOTP codes the run sent (six digits) */
  totpCodes: new Set(),
  /** recovery codes handed out by confirm (as shown, `xxxxx-xxxxx`) */
  recoveryCodes: new Set(),
  /** mfaTokens of the first login step */
  mfaTokens: new Set(),
}

/**
 * Remembers the second-factor secrets of a response: setup's secret (its otpauthUrl carries the
 * same), confirm's or recovery-codes' codes, a login's mfaToken.
 */
export function noteMfa(res) {
  const d = res.body?.data ?? {}
  if (typeof d.secret === 'string') secrets.totpSecrets.add(d.secret)
  if (typeof d.mfaToken === 'string') secrets.mfaTokens.add(d.mfaToken)
  for (const c of Array.isArray(d.recoveryCodes) ? d.recoveryCodes : []) if (typeof c === 'string') secrets.recoveryCodes.add(c)
}

/** Remembers the tokens of a login/register/refresh response (an mfaToken too). */
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
