/** The API as a client uses it, remembering every token it is handed for the hygiene case. */
import { cookieFrom, request } from './http.mjs'
import { noteTokens } from './secrets.mjs'

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

function withTokens(r) {
  return { ...r, accessToken: r.body?.data?.accessToken, refreshToken: cookieFrom(r, COOKIE), userId: r.body?.data?.user?.id }
}
