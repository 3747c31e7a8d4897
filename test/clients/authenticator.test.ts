/**
 * An authenticator app's view of a TOTP setup, end to end on a real socket and the real clock:
 * the otpauthUrl is parsed back as an app reads it (scheme, type, label, secret, issuer,
 * algorithm, digits, period), and the codes computed from what was parsed alone sign in.
 */
import t from 'tap'
import { Secret, TOTP } from 'otpauth'
import { addUser, call, startServer } from '../helpers/app.js'

const PASSWORD = 'correct horse battery'

/** what an authenticator app takes from a scanned otpauth:// URL (Key Uri Format) */
function scan(text: string): { issuer: string; account: string; secret: string; algorithm: string; digits: number; period: number } {
  const url = new URL(text)
  if (url.protocol !== 'otpauth:' || url.host !== 'totp') throw new Error(`not a TOTP URL: ${text}`)
  // the label is `issuer:account`, split at the literal colon before decoding (an encoded one,
  // %3A, is part of the issuer or account)
  const raw = url.pathname.slice(1)
  const colon = raw.indexOf(':')
  const labelIssuer = colon === -1 ? '' : decodeURIComponent(raw.slice(0, colon))
  const p = url.searchParams
  const issuer = p.get('issuer') ?? labelIssuer
  if (labelIssuer !== issuer) throw new Error('the label and the issuer parameter disagree')
  return {
    issuer,
    account: decodeURIComponent(colon === -1 ? raw : raw.slice(colon + 1)),
    secret: p.get('secret')!,
    algorithm: p.get('algorithm') ?? 'SHA1',
    digits: Number(p.get('digits') ?? 6),
    period: Number(p.get('period') ?? 30),
  }
}

t.test('codes computed from the parsed otpauthUrl alone are accepted: confirm, then sign in', async (t) => {
  const app = await startServer(t, { env: { AUTHD_MFA_ISSUER: 'Example Co: Login' } })
  const email = 'ann.o+tp@xn--bcher-kva.example'
  await addUser(app, email, PASSWORD)
  const first = await call(app.url, 'POST', '/api/auth/login', { json: { email: 'Ann.O+TP@bücher.example', password: PASSWORD } })
  const bearer = { authorization: `Bearer ${first.body.data.accessToken}` }
  const setup = await call(app.url, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer })
  t.equal(setup.status, 200)

  const scanned = scan(setup.body.data.otpauthUrl)
  t.same(scanned, { issuer: 'Example Co: Login', account: email, secret: setup.body.data.secret, algorithm: 'SHA1', digits: 6, period: 30 })
  // the app's own TOTP, from the scanned values
  const app2 = new TOTP({ issuer: scanned.issuer, label: scanned.account, secret: Secret.fromBase32(scanned.secret), algorithm: scanned.algorithm, digits: scanned.digits, period: scanned.period })

  const now = Date.now()
  const confirm = await call(app.url, 'POST', '/api/auth/mfa/totp/confirm', { headers: bearer, json: { code: app2.generate({ timestamp: now }) } })
  t.equal(confirm.status, 200, confirm.text)

  const challenge = await call(app.url, 'POST', '/api/auth/login', { json: { email, password: PASSWORD } })
  t.equal(challenge.body.data.mfaRequired, true)
  // the code the app shows next (the current one was used to confirm): within the ±1 window
  const next = app2.generate({ timestamp: now + 30_000 })
  const signedIn = await call(app.url, 'POST', '/api/auth/login/mfa', { json: { mfaToken: challenge.body.data.mfaToken, code: next } })
  t.equal(signedIn.status, 200, signedIn.text)
  t.same(signedIn.body.data.user.email, email)
})
