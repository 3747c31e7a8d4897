/**
 * Case 8 — log hygiene. Everything the daemons of this run wrote (stdout and stderr, every case)
 * is searched for every secret the run handled: the canary marker carried by every password the
 * cases made, every access token and every refresh token the daemons handed out, and every
 * second-factor secret (TOTP secret, otpauth URL, recovery code, mfaToken) a case noted.
 */
import { readFileSync } from 'node:fs'
import { logFiles } from '../lib/daemon.mjs'
import { CANARY, secrets } from '../lib/secrets.mjs'
import { check, info } from '../lib/report.mjs'

export const id = 'hygiene'
export const title = 'Log hygiene'

const JWT_SHAPE = /[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g
const REFRESH_SHAPE = /(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g

export async function run({ say }) {
  let bytes = 0
  let lines = 0
  let loginEvents = 0
  let passwords = 0
  let access = 0
  let refresh = 0
  let mfa = 0
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
    for (const s of secrets.mfa) {
      if (text.includes(s)) {
        mfa++
        if (where.length < 5) where.push(`${file}: a second-factor secret`)
      }
    }
    for (const m of text.matchAll(REFRESH_SHAPE)) {
      if (secrets.refresh.has(m[0])) {
        refresh++
        if (where.length < 5) where.push(`${file}: a refresh token`)
      }
    }
  }
  for (const w of where.slice(0, 5)) say(`hygiene: ✗ ${w}`)
  say(`hygiene: ${logFiles.size} log files, ${lines} lines (${Math.round(bytes / 1024)} KB); ${secrets.access.size} access and ${secrets.refresh.size} refresh tokens known`)
  return {
    figures: [
      check('log lines', lines, '>', 0),
      check('passwords', passwords, '=', 0),
      check('access tokens', access, '=', 0),
      check('refresh tokens', refresh, '=', 0),
      check('second-factor secrets', mfa, '=', 0),
      info('secrets looked for', secrets.access.size + secrets.refresh.size + secrets.mfa.size),
      info('login events', loginEvents),
    ],
    status: logFiles.size === 0 ? 'NOT MEASURED' : undefined,
    note: logFiles.size === 0 ? 'no case ran a daemon before this one' : undefined,
  }
}
