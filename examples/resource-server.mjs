#!/usr/bin/env node
/**
 * A resource server that trusts authd's access tokens, verifying them offline against authd's
 * JWKS with `jose`. Copy it into your service: it is the whole integration.
 *
 *   AUTHD_URL=https://auth.example.com PORT=3000 node examples/resource-server.mjs
 *   curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:3000/
 *
 * Every request: 200 {"success":true,"data":{"claims":{…}}} for a valid access token,
 * 401 otherwise (with WWW-Authenticate, as authd's own /api/auth/me answers). With
 * REQUIRE_MFA=1, a valid token of a sign-in without a second factor gets 401 too, with the
 * step-up challenge of RFC 9470 (`error="insufficient_user_authentication"`).
 *
 * Environment:
 *   AUTHD_URL          authd's base URL (required); the keys come from $AUTHD_URL/.well-known/jwks.json
 *   PORT, HOST         where to listen (default 3000 on 127.0.0.1; PORT=0 picks a free port)
 *   AUTHD_ISSUER       expected `iss`, authd's tokens.issuer (default "authd")
 *   AUTHD_AUDIENCE     expected `aud`, authd's tokens.audience (default "authd")
 *   REQUIRE_MFA        1: accept only tokens whose `amr` claim (RFC 8176) includes "mfa", i.e. of a
 *                      session signed in with a TOTP or a recovery code after the password
 *                      (authd keeps a session's `amr` across refreshes); 0 or unset: any valid token
 *   JWKS_COOLDOWN_MS   after a fetch, how long an unknown `kid` waits before the JWKS is fetched
 *                      again (default 5000): a rotated-in key is picked up within this time, and a
 *                      flood of made-up kids costs authd at most one request per interval
 *   JWKS_MAX_AGE_MS    how long the fetched keys are trusted before they are fetched again (default
 *                      60000): a key revoked with `authctl keys revoke` stops verifying here
 *                      within this time (a token naming a kid already known triggers no fetch)
 *
 * Offline verification cannot see a logout or a revoked session before the token expires
 * (tokens.access_ttl, 15 minutes by default); call authd's GET /api/auth/me where that matters.
 */
import { createServer } from 'node:http'
import { createRemoteJWKSet, jwtVerify } from 'jose'

const env = process.env
if (!env.AUTHD_URL) {
  process.stderr.write('resource-server: set AUTHD_URL to authd\'s base URL, e.g. AUTHD_URL=http://127.0.0.1:8080\n')
  process.exit(2)
}
const authdUrl = new URL(env.AUTHD_URL)
const issuer = env.AUTHD_ISSUER ?? 'authd'
const audience = env.AUTHD_AUDIENCE ?? 'authd'
if (!['', '0', '1'].includes(env.REQUIRE_MFA ?? '')) {
  process.stderr.write(`resource-server: REQUIRE_MFA must be 1 or 0 (got ${JSON.stringify(env.REQUIRE_MFA)})\n`)
  process.exit(2)
}
const requireMfa = env.REQUIRE_MFA === '1'

/**
 * Whether the sign-in behind the token passed a second factor. authd's `amr` is ["pwd"] after a
 * password alone, ["pwd","otp","mfa"] after a TOTP code, ["pwd","mfa"] after a recovery code.
 * Only the signed claim counts: "mfa" is what RFC 8176 calls several factors, whichever.
 */
const hasSecondFactor = (claims) => Array.isArray(claims.amr) && claims.amr.includes('mfa')

// Keys are fetched on first use, cached, and fetched again when a token names an unknown kid
// (a rotation): tokens signed by the previous key keep verifying while it is still in the JWKS.
// They are also fetched again once older than JWKS_MAX_AGE_MS: that is what ends a revoked key
// here, since its tokens name a kid already known.
const keys = createRemoteJWKSet(new URL('/.well-known/jwks.json', authdUrl), {
  cooldownDuration: Number(env.JWKS_COOLDOWN_MS ?? 5000),
  cacheMaxAge: Number(env.JWKS_MAX_AGE_MS ?? 60_000),
})

/** The token's claims, or null for any token that must not be trusted. */
async function verify(token) {
  try {
    const { payload } = await jwtVerify(token, keys, {
      // pinned: authd signs with ES256 or RS256 only; never "none", never an HMAC with a public key
      algorithms: ['ES256', 'RS256'],
      // an access token, not an ID token or another JWT that happens to share the keys
      typ: 'at+jwt',
      issuer,
      audience,
      requiredClaims: ['sub', 'sid', 'iat', 'exp'],
      clockTolerance: 5,
    })
    return payload
  } catch (err) {
    // the reason is for the operator, never for the client; the token itself is never logged
    process.stderr.write(`resource-server: token rejected: ${err.code ?? err.name}\n`)
    return null
  }
}

function reply(res, status, body, headers = {}) {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers })
  res.end(text)
}

const server = createServer(async (req, res) => {
  const m = /^bearer +(\S+)\s*$/i.exec(req.headers.authorization ?? '')
  if (m === null) return reply(res, 401, { success: false, message: 'Unauthorized' }, { 'www-authenticate': 'Bearer' })
  const claims = await verify(m[1])
  if (claims === null) {
    return reply(res, 401, { success: false, message: 'Invalid or expired access token' }, { 'www-authenticate': 'Bearer error="invalid_token"' })
  }
  if (requireMfa && !hasSecondFactor(claims)) {
    // a valid token, but of a sign-in with the password alone: the client signs in again with its
    // second factor (RFC 9470's step-up challenge). A route-by-route check works the same way.
    return reply(res, 401, { success: false, message: 'A second factor is required' }, {
      'www-authenticate': 'Bearer error="insufficient_user_authentication", error_description="A second factor is required"',
    })
  }
  // the user is claims.sub (authd's user id); claims.sid names the session
  reply(res, 200, { success: true, data: { claims } })
})

server.listen(Number(env.PORT ?? 3000), env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address()
  const mfa = requireMfa ? ', second factor required' : ''
  process.stdout.write(`resource server listening on http://${address}:${port} (tokens from ${authdUrl.origin}${mfa})\n`)
})
process.once('SIGTERM', () => server.close(() => process.exit(0)))
process.once('SIGINT', () => server.close(() => process.exit(0)))
