/**
 * The response envelope of README, "Call the API", checked from the outside: every body is a JSON
 * object `{success:true, data:{…}}` or `{success:false, message}` with one of the contract's
 * messages, and the three headers; the only exceptions are /metrics, the JWKS, 204 and HEAD.
 */

/** Every message a client may see: the error table, plus the server's own malformed-HTTP answers. */
export const CONTRACT_MESSAGES = new Set([
  'Invalid JSON body',
  'Email and password are required',
  'Invalid email address',
  'Password is too common',
  'Unauthorized',
  'Invalid email or password',
  'Invalid or expired access token',
  'Refresh token is required',
  'Invalid or expired refresh token',
  'Registration is disabled',
  'Forbidden origin',
  'Not found',
  'Method not allowed',
  'Email already registered',
  'Request body too large',
  'Content-Type must be application/json',
  'Too many login attempts',
  'Too many registration attempts',
  'Too many requests',
  'Internal server error',
  'Server busy, try again shortly',
  'Not ready',
  'Bad request',
  'Request headers too large',
  'Request timeout',
])
const PASSWORD_LENGTH = /^Password must be at (least|most) \d+ characters$/

/**
 * Returns null if the response keeps the contract, else a short description of what is wrong.
 * `res`: { status, header(name) → string|undefined, body: Buffer|string }, `req`: { method, path }.
 */
export function envelopeProblem(res, req) {
  const { status } = res
  const path = (req.path ?? '/').split('?')[0]
  if (req.method === 'HEAD' || status === 204) return null
  if (path === '/metrics' && status === 200) {
    return /^text\/plain/.test(res.header('content-type') ?? '') ? null : 'metrics: not text/plain'
  }
  const text = typeof res.body === 'string' ? res.body : res.body.toString('utf8')
  if (path === '/.well-known/jwks.json' && status === 200) {
    try {
      const jwks = JSON.parse(text)
      return Array.isArray(jwks.keys) && jwks.keys.every((k) => k.d === undefined) ? null : 'jwks: not a public JWK Set'
    } catch {
      return 'jwks: not JSON'
    }
  }
  if (res.header('content-type') !== 'application/json; charset=utf-8') return `content-type ${res.header('content-type')}`
  if (res.header('cache-control') !== 'no-store') return `cache-control ${res.header('cache-control')}`
  if (res.header('x-content-type-options') !== 'nosniff') return 'no x-content-type-options: nosniff'
  let body
  try {
    body = JSON.parse(text)
  } catch {
    return `body is not JSON: ${JSON.stringify(text.slice(0, 60))}`
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'body is not an object'
  const keys = Object.keys(body).sort().join(',')
  if (body.success === true) {
    if (keys !== 'data,success') return `success body keys ${keys}`
    if (typeof body.data !== 'object' || body.data === null || Array.isArray(body.data)) return 'data is not an object'
    if (status >= 300) return `success:true with status ${status}`
  } else if (body.success === false) {
    if (keys !== 'message,success') return `error body keys ${keys}`
    if (typeof body.message !== 'string') return 'message is not a string'
    if (!CONTRACT_MESSAGES.has(body.message) && !PASSWORD_LENGTH.test(body.message)) return `message not in the contract: ${JSON.stringify(body.message.slice(0, 80))}`
    if (status < 400) return `success:false with status ${status}`
  } else return 'success is not a boolean'
  if (/\$argon2|\n\s+at |passwordHash|privateKey/.test(text)) return 'body carries a hash, key or stack'
  return null
}

/** Adapts a node:http response ({ headers } object) to envelopeProblem's shape. */
export function fromNodeResponse(r) {
  return {
    status: r.status,
    header: (name) => {
      const v = r.headers[name]
      return Array.isArray(v) ? v.join(', ') : v
    },
    body: r.text,
  }
}
