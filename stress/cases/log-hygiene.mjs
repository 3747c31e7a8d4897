/**
 * Case 8 — log hygiene. Everything the daemons of this run wrote (stdout and stderr, every case)
 * is searched for every secret the run handled: the canary marker carried by every password the
 * cases made, every access token and every refresh token the daemons handed out, and of the
 * second factor every TOTP secret, TOTP code sent, recovery code and mfaToken.
 */
import { readFileSync } from 'node:fs'
import { logFiles } from '../lib/daemon.mjs'
import { CANARY, secrets } from '../lib/secrets.mjs'
import { check, info } from '../lib/report.mjs'

export const id = 'hygiene'
export const title = 'Log hygiene'

const JWT_SHAPE = /[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g
/** a refresh token's secret part (`<family>.<secret>`, 22 and 43 characters), alone or after its family */
const REFRESH_SECRET_SHAPE = /(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g

/**
 * How many times a refresh token of `tokens` (whole, as handed out) shows in `text`: whole, or its
 * secret part alone (the part that lets whoever holds it refresh). Exported for its test.
 */
export function refreshLeaks(text, tokens) {
  const secretParts = new Set()
  for (const t of tokens) {
    const dot = t.indexOf('.')
    if (dot !== -1) secretParts.add(t.slice(dot + 1))
  }
  let n = 0
  for (const m of text.matchAll(REFRESH_SECRET_SHAPE)) if (secretParts.has(m[0])) n++
  return n
}

/**
 * A TOTP code as a value in a log line: six digits right after a quote, = or :, and no digit
 * after (a code alone would match inside any longer number, a timestamp say, by chance).
 */
const CODE_SHAPE = /(?<=["=:])\d{6}(?!\d)/g

/** The spellings of the other second-factor secrets a log could hold. */
function mfaSpellings() {
  const out = []
  for (const s of secrets.totpSecrets) out.push(['a TOTP secret', s])
  for (const c of secrets.recoveryCodes) for (const v of new Set([c, c.replace(/-/g, '')])) out.push(['a recovery code', v])
  for (const t of secrets.mfaTokens) out.push(['an mfaToken', t])
  return out
}

export async function run({ say }) {
  let bytes = 0
  let lines = 0
  let loginEvents = 0
  let passwords = 0
  let access = 0
  let refresh = 0
  const mfa = { 'a TOTP secret': 0, 'a TOTP code': 0, 'a recovery code': 0, 'an mfaToken': 0 }
  const spellings = mfaSpellings()
  const where = []
  for (const file of logFiles) {
    const text = readFileSync(file, 'utf8')
    bytes += text.length
    lines += text.split('\n').length - 1
    loginEvents += text.split('"event":"login"').length - 1
    // the marker, and the marker as JSON or URL encoding could spell it (it is plain ASCII: same)
    const p = text.split(CANARY).length - 1
    passwords += p
    if (p > 0) where.push(`${file}: password marker ×${p} near ${JSON.stringify(text.slice(Math.max(0, text.indexOf(CANARY) - 80), text.indexOf(CANARY) + 40))}`)
    for (const m of text.matchAll(JWT_SHAPE)) {
      if (secrets.access.has(m[0])) {
        access++
        if (where.length < 5) where.push(`${file}: an access token`)
      }
    }
    const r = refreshLeaks(text, secrets.refresh)
    refresh += r
    if (r > 0 && where.length < 5) where.push(`${file}: a refresh token ×${r}`)
    for (const m of text.matchAll(CODE_SHAPE)) {
      if (secrets.totpCodes.has(m[0])) {
        mfa['a TOTP code']++
        if (where.length < 5) where.push(`${file}: a TOTP code`)
      }
    }
    for (const [what, value] of spellings) {
      const n = text.split(value).length - 1
      mfa[what] += n
      if (n > 0 && where.length < 5) where.push(`${file}: ${what}`)
    }
  }
  for (const w of where.slice(0, 5)) say(`hygiene: ✗ ${w}`)
  say(`hygiene: ${logFiles.size} log files, ${lines} lines (${Math.round(bytes / 1024)} KB); ${secrets.access.size} access and ${secrets.refresh.size} refresh tokens known`)
  const mfaKnown = secrets.totpSecrets.size + secrets.totpCodes.size + secrets.recoveryCodes.size + secrets.mfaTokens.size
  if (mfaKnown > 0) {
    say(`hygiene: second factor: ${secrets.totpSecrets.size} TOTP secrets, ${secrets.totpCodes.size} codes, ${secrets.recoveryCodes.size} recovery codes, ${secrets.mfaTokens.size} mfaTokens known`)
  }
  return {
    figures: [
      check('log lines', lines, '>', 0),
      check('passwords', passwords, '=', 0),
      check('access tokens', access, '=', 0),
      check('refresh tokens', refresh, '=', 0),
      // judged only when a case of the run handled second-factor secrets
      ...(mfaKnown > 0
        ? [
            check('TOTP secrets', mfa['a TOTP secret'], '=', 0),
            check('TOTP codes', mfa['a TOTP code'], '=', 0),
            check('recovery codes', mfa['a recovery code'], '=', 0),
            check('mfaTokens', mfa['an mfaToken'], '=', 0),
          ]
        : []),
      info('secrets looked for', secrets.access.size + secrets.refresh.size + mfaKnown),
      info('login events', loginEvents),
    ],
    status: logFiles.size === 0 ? 'NOT MEASURED' : undefined,
    note: logFiles.size === 0 ? 'no case ran a daemon before this one' : undefined,
  }
}
