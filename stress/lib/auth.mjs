/** The API as a client uses it, remembering every token it is handed for the hygiene case. */
import { HOTP, Secret } from 'otpauth'
import { cookieFrom, request } from './http.mjs'
import { noteMfa, noteTokens, secrets } from './secrets.mjs'

/** The production cookie name (the daemons here run without --dev) */
export const COOKIE = '__Host-authd_rt'

export async function register(url, email, password, opts = {}) {
  const r = await request(url, 'POST', '/api/auth/register', { json: { email, password }, ...opts })
  noteTokens(r, COOKIE)
  return withTokens(r)
}

export async function login(url, email, password, opts = {}) {
  const r = await request(url, 'POST', '/api/auth/login', { json: { email, password }, ...opts })
  noteTokens(r, COOKIE)
  return withTokens(r)
}

export async function refresh(url, token, opts = {}) {
  const headers = token === undefined ? {} : { cookie: `${COOKIE}=${token}` }
  const r = await request(url, 'POST', '/api/auth/refresh', { headers, ...opts })
  noteTokens(r, COOKIE)
  return withTokens(r)
}

export async function logout(url, token, opts = {}) {
  const headers = token === undefined ? {} : { cookie: `${COOKIE}=${token}` }
  return request(url, 'POST', '/api/auth/logout', { headers, ...opts })
}

export function me(url, accessToken, opts = {}) {
  return request(url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${accessToken}` }, ...opts })
}

/** The TOTP code of `secret` (base32) for the 30-second step `steps` after the current one, as an authenticator shows it. */
export function totpCode(secret, steps = 0, at = Date.now()) {
  const code = HOTP.generate({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, counter: Math.floor(at / 30_000) + steps })
  secrets.totpCodes.add(code)
  return code
}

/**
 * Turns the second factor on for the user of `accessToken`: setup, then confirm with the current
 * code. Resolves to { secret, recoveryCodes }; throws if either step does not answer 200.
 */
export async function enableTotp(url, accessToken, opts = {}) {
  const headers = { authorization: `Bearer ${accessToken}` }
  const setup = await request(url, 'POST', '/api/auth/mfa/totp/setup', { headers, json: {}, ...opts })
  const secret = setup.body?.data?.secret
  if (setup.status !== 200 || typeof secret !== 'string') throw new Error(`setup: mfa setup answered ${setup.status} ${setup.text}`)
  noteMfa(setup)
  const confirm = await request(url, 'POST', '/api/auth/mfa/totp/confirm', { headers, json: { code: totpCode(secret) }, ...opts })
  const recoveryCodes = confirm.body?.data?.recoveryCodes
  if (confirm.status !== 200 || !Array.isArray(recoveryCodes)) throw new Error(`setup: mfa confirm answered ${confirm.status} ${confirm.text}`)
  noteMfa(confirm)
  return { secret, recoveryCodes }
}

/** The second login step: `proof` is { code } or { recoveryCode }. */
export async function loginMfa(url, mfaToken, proof, opts = {}) {
  if (typeof proof.code === 'string') secrets.totpCodes.add(proof.code)
  if (typeof proof.recoveryCode === 'string') secrets.recoveryCodes.add(proof.recoveryCode)
  const r = await request(url, 'POST', '/api/auth/login/mfa', { json: { mfaToken, ...proof }, ...opts })
  noteTokens(r, COOKIE)
  return withTokens(r)
}

function withTokens(r) {
  return { ...r, accessToken: r.body?.data?.accessToken, refreshToken: cookieFrom(r, COOKIE), userId: r.body?.data?.user?.id }
}
