/**
 * examples/resource-server.mjs as a real client: the example runs as its own process (jose,
 * createRemoteJWKSet against authd's JWKS) in front of a real `authd start`, and keeps verifying
 * across `authctl keys rotate`: the new key is in the JWKS before it signs, so no token it signs
 * is ever refused.
 */
import { execFile, spawn } from 'node:child_process'
import { createPublicKey } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { HOTP, Secret } from 'otpauth'
import { generateKey } from '../../src/core/keys.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { KeyRecord } from '../../src/store/store.js'
import { AUTHCTL_BIN, call, type Reply } from '../helpers/app.js'
import { craft, craftHs256, b64url, decode, signer } from '../helpers/jwt.js'
import { spawnDaemon } from '../helpers/daemon.js'

const EXAMPLE = fileURLToPath(new URL('../../examples/resource-server.mjs', import.meta.url))
// the example's cooldown between JWKS fetches, and authctl's tokens.key_lead, longer (as 5 m is than 5 s)
const COOLDOWN_MS = 4000
const KEY_LEAD_MS = 5000
const run = promisify(execFile)

async function startResourceServer(t: Test, authdUrl: string, env: Record<string, string> = {}): Promise<{ url: string; stderr: () => string }> {
  const proc = spawn(process.execPath, [EXAMPLE], {
    // as a user would run it: the environment names authd, nothing else
    env: { PATH: process.env.PATH, AUTHD_URL: authdUrl, PORT: '0', JWKS_COOLDOWN_MS: String(COOLDOWN_MS), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  proc.stdout.on('data', (c: Buffer) => (out += c.toString()))
  proc.stderr.on('data', (c: Buffer) => (err += c.toString()))
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
    await exited
  })
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the resource server did not start:\n${out}${err}`)), 10_000)
    proc.stdout.on('data', () => {
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (m !== null) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    })
    proc.once('exit', () => reject(new Error(`the resource server exited:\n${out}${err}`)))
  })
  return { url, stderr: () => err }
}

const bearer = (token: string): { headers: Record<string, string> } => ({ headers: { authorization: `Bearer ${token}` } })
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const kidOf = (token: string): string => decode(token).header.kid as string

t.test('the example resource server verifies authd tokens offline, refuses forged ones, and keeps verifying across a key rotation', async (t) => {
  const dir = join(t.testdir(), 'data')
  // many sign-ins in a row below: the login limits are raised for them
  const many = '1000/1m'
  const authd = await spawnDaemon(t, dir, {
    env: { AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: many, AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: many, AUTHD_RATE_LIMIT_LOGIN_PER_IP: many, AUTHD_RATE_LIMIT_LOGIN_PER_DEVICE: many },
  })
  const reg = await call(authd.url, 'POST', '/api/auth/register', { json: { email: 'rs@example.com', password: 'correct horse battery staple' } })
  t.equal(reg.status, 201)
  const tokenA = reg.body.data.accessToken as string
  const user = reg.body.data.user as { id: string; email: string }

  const rs = await startResourceServer(t, authd.url)
  const get = (opts?: { headers: Record<string, string> }): Promise<Reply> => call(rs.url, 'GET', '/', opts)

  const ok = await get(bearer(tokenA))
  t.equal(ok.status, 200, 'a valid access token is accepted')
  t.match(ok.body, { success: true, data: { claims: { iss: 'authd', aud: 'authd', sub: user.id, email: user.email, sid: String, jti: String, iat: Number, exp: Number } } })

  const none = await get()
  t.same([none.status, none.body, none.headers['www-authenticate']], [401, { success: false, message: 'Unauthorized' }, 'Bearer'], 'no token: 401')
  const garbage = await get(bearer('not.a.token'))
  t.same([garbage.status, garbage.headers['www-authenticate']], [401, 'Bearer error="invalid_token"'], 'garbage: 401')

  // Forgeries signed with authd's real key (read from the store, as only an insider could): each
  // differs from a valid token in one respect, and a control built the same way is accepted.
  const store = await openLmdbStore({ path: dir })
  const keyA = (await store.listKeys()).find((k) => k.state === 'active')!
  await store.close()
  t.equal(keyA.kid, kidOf(tokenA))
  const now = Math.floor(Date.now() / 1000)
  const header = { alg: keyA.alg, typ: 'at+jwt', kid: keyA.kid }
  const claims = { iss: 'authd', aud: 'authd', sub: user.id, email: user.email, sid: decode(tokenA).payload.sid, jti: 'forged', iat: now, exp: now + 300 }
  const control = await get(bearer(craft(header, claims, signer(keyA))))
  t.equal(control.status, 200, 'control: a token crafted like authd signs it verifies')

  const foreign: KeyRecord = generateKey('ES256', Date.now())
  const publicPem = createPublicKey(keyA.privateKeyPem).export({ type: 'spki', format: 'pem' }) as string
  const forgeries: Record<string, string> = {
    'wrong issuer': craft(header, { ...claims, iss: 'someone-else' }, signer(keyA)),
    'wrong audience': craft(header, { ...claims, aud: 'another-api' }, signer(keyA)),
    'typ JWT (not an access token)': craft({ ...header, typ: 'JWT' }, claims, signer(keyA)),
    'no typ': craft({ alg: keyA.alg, kid: keyA.kid }, claims, signer(keyA)),
    expired: craft(header, { ...claims, iat: now - 3600, exp: now - 600 }, signer(keyA)),
    'no exp': craft(header, { ...claims, exp: undefined }, signer(keyA)),
    'signed by a foreign key under the real kid': craft(header, claims, signer(foreign)),
    'HS256 keyed with the public key': craftHs256({ ...header, alg: 'HS256' }, claims, publicPem),
    'alg none': `${b64url({ ...header, alg: 'none' })}.${b64url(claims)}.`,
  }
  for (const [name, token] of Object.entries(forgeries)) {
    const r = await get(bearer(token))
    t.same([r.status, r.body], [401, { success: false, message: 'Invalid or expired access token' }], `refused: ${name}`)
  }

  // Rotation with the real admin command, to the other algorithm (the pin allows both authd's).
  // The example has just fetched the JWKS (a token naming a kid it has not seen makes it fetch),
  // so for its cooldown it cannot fetch again: a key that signed at once would fail here
  // (regression: ERR_JWKS_NO_MATCHING_KEY for the cooldown after every rotation). A key that
  // is published tokens.key_lead (longer than the cooldown) before it signs never does.
  const kidsBefore = new Set(((await call(authd.url, 'GET', '/.well-known/jwks.json')).body.keys as Array<{ kid: string }>).map((k) => k.kid))
  t.same([...kidsBefore], [keyA.kid])
  await sleep(COOLDOWN_MS + 100)
  const unknownKid = await get(bearer(craft({ ...header, kid: 'not-a-kid' }, claims, signer(foreign))))
  t.equal(unknownKid.status, 401, 'an unknown kid: refused, after fetching the JWKS again')
  const rotated = await run(process.execPath, [AUTHCTL_BIN, 'keys', 'rotate', '--algorithm', 'RS256', '--data', dir, '--json'], {
    timeout: 30_000,
    env: { PATH: process.env.PATH, AUTHD_TOKENS_KEY_LEAD: `${KEY_LEAD_MS}ms` },
  })
  t.equal(rotated.stderr, '', 'authctl keys rotate succeeded')
  const keyB = JSON.parse(rotated.stdout).key as { kid: string; alg: string; state: string; activatedAt: string }
  t.match(keyB, { alg: 'RS256', state: 'next' })
  const jwks = (await call(authd.url, 'GET', '/.well-known/jwks.json')).body.keys as Array<{ kid: string; alg: string }>
  t.same(jwks.map((k) => k.kid).sort(), [keyA.kid, keyB.kid].sort(), 'the JWKS serves the new key at once, before it signs')

  // sign in again and again across the switch: every token authd hands out verifies at once
  const login = async (): Promise<string> =>
    (await call(authd.url, 'POST', '/api/auth/login', { json: { email: 'rs@example.com', password: 'correct horse battery staple' } })).body.data.accessToken as string
  const refused: string[] = []
  const kids: string[] = []
  let tokenB: string | undefined
  const until = Date.now() + KEY_LEAD_MS + 8_000
  for (let i = 0; i < 400 && tokenB === undefined && Date.now() < until; i++) {
    const token = await login()
    const r = await get(bearer(token))
    if (r.status !== 200) refused.push(`${kidOf(token)}: ${r.status}`)
    if (kids.at(-1) !== kidOf(token)) kids.push(kidOf(token))
    if (kidOf(token) === keyB.kid) tokenB = token
    else await sleep(50)
  }
  t.same(refused, [], 'no token authd signed was refused by the example')
  t.same(kids, [keyA.kid, keyB.kid], 'the old key signed until the lead had passed, then the new one')
  t.ok(tokenB, 'the new key signs by itself')
  t.equal(decode(tokenB!).header.alg, 'RS256')
  t.equal(decode(tokenB!).payload.sub, user.id)
  const afterA = await get(bearer(tokenA))
  t.equal(afterA.status, 200, 'a token signed before the rotation still verifies')

  t.notMatch(rs.stderr(), tokenA.split('.')[2]!, 'the example never logs a token')
  t.match(rs.stderr(), /token rejected: ERR_JWT_CLAIM_VALIDATION_FAILED/, 'and it says why it refused, to the operator')
})

t.test('with REQUIRE_MFA=1 the example accepts only tokens whose amr includes mfa (crafted, then real ones of TOTP and recovery-code sign-ins), and asks the others to step up', async (t) => {
  const dir = join(t.testdir(), 'data')
  const authd = await spawnDaemon(t, dir)
  const reg = await call(authd.url, 'POST', '/api/auth/register', { json: { email: 'mfa-rs@example.com', password: 'correct horse battery staple' } })
  t.equal(reg.status, 201)
  const passwordOnly = reg.body.data.accessToken as string
  const strict = await startResourceServer(t, authd.url, { REQUIRE_MFA: '1' })
  const lax = await startResourceServer(t, authd.url)
  const get = (url: string, token: string): Promise<Reply> => call(url, 'GET', '/', bearer(token))

  // tokens as authd signs them after each kind of sign-in, with its real key (read from the store)
  const store = await openLmdbStore({ path: dir })
  const key = (await store.listKeys()).find((k) => k.state === 'active')!
  await store.close()
  const now = Math.floor(Date.now() / 1000)
  const header = { alg: key.alg, typ: 'at+jwt', kid: key.kid }
  const base = { ...decode(passwordOnly).payload, iat: now, exp: now + 300 }
  const token = (amr: unknown): string => craft(header, { ...base, jti: `amr-${JSON.stringify(amr)}`, amr }, signer(key))
  const accepted: Array<[string, unknown]> = [
    ['a TOTP code', ['pwd', 'otp', 'mfa']],
    ['a recovery code', ['pwd', 'mfa']],
  ]
  const stepUp: Array<[string, unknown]> = [
    ['the password alone', ['pwd']],
    ['no amr', undefined],
    ['an empty amr', []],
    ['amr as a string, not a list', 'mfa'],
    ['otp without mfa', ['pwd', 'otp']],
  ]
  for (const [name, amr] of accepted) {
    const r = await get(strict.url, token(amr))
    t.equal(r.status, 200, `accepted: ${name}`)
    t.same(r.body.data.claims.amr, amr)
  }
  for (const [name, amr] of stepUp) {
    const r = await get(strict.url, token(amr))
    t.same([r.status, r.body], [401, { success: false, message: 'A second factor is required' }], `step up: ${name}`)
    t.equal(r.headers['www-authenticate'], 'Bearer error="insufficient_user_authentication", error_description="A second factor is required"')
    t.equal((await get(lax.url, token(amr))).status, 200, `without REQUIRE_MFA the same token is accepted (${name})`)
  }
  const real = await get(strict.url, passwordOnly)
  t.equal(real.status, 401, 'a real token of a password sign-in asks for the second factor')
  t.equal((await get(lax.url, passwordOnly)).status, 200)

  // the real thing: the user turns the factor on and signs in with a TOTP code, then a recovery code
  const appCode = (secret: string, steps = 0): string =>
    HOTP.generate({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, counter: Math.floor(Date.now() / 30_000) + steps })
  const auth = { authorization: `Bearer ${passwordOnly}` }
  const setup = await call(authd.url, 'POST', '/api/auth/mfa/totp/setup', { headers: auth, json: {} })
  const secret = setup.body.data.secret as string
  const confirm = await call(authd.url, 'POST', '/api/auth/mfa/totp/confirm', { headers: auth, json: { code: appCode(secret) } })
  t.equal(confirm.status, 200, 'the factor is on')
  const signIn = async (proof: Record<string, string>): Promise<Reply> => {
    const first = await call(authd.url, 'POST', '/api/auth/login', { json: { email: 'mfa-rs@example.com', password: 'correct horse battery staple' } })
    t.match(first.body.data, { mfaRequired: true, mfaToken: String })
    return call(authd.url, 'POST', '/api/auth/login/mfa', { json: { mfaToken: first.body.data.mfaToken, ...proof } })
  }
  const withTotp = await signIn({ code: appCode(secret, 1) })
  t.equal(withTotp.status, 200)
  const totpToken = withTotp.body.data.accessToken as string
  const viaTotp = await get(strict.url, totpToken)
  t.equal(viaTotp.status, 200, 'a real token of a sign-in with a TOTP code is accepted')
  t.same(viaTotp.body.data.claims.amr, ['pwd', 'otp', 'mfa'])
  const cookie = /__Host-authd_rt=[^;]+/.exec(([] as string[]).concat(withTotp.headers['set-cookie'] ?? []).join('\n'))![0]
  const refreshed = await call(authd.url, 'POST', '/api/auth/refresh', { headers: { cookie } })
  t.equal(refreshed.status, 200)
  t.equal((await get(strict.url, refreshed.body.data.accessToken as string)).status, 200, 'and so is the token of its refresh (the session keeps its amr)')
  const withRecovery = await signIn({ recoveryCode: (confirm.body.data.recoveryCodes as string[])[0]! })
  t.equal(withRecovery.status, 200)
  const viaRecovery = await get(strict.url, withRecovery.body.data.accessToken as string)
  t.same([viaRecovery.status, viaRecovery.body.data.claims.amr], [200, ['pwd', 'mfa']], 'a sign-in with a recovery code counts as a second factor too')
  // a forged amr does not help: the claim counts only under a valid signature
  const forged = craft(header, { ...base, amr: ['pwd', 'otp', 'mfa'] }, signer(generateKey('ES256', Date.now())))
  t.same([(await get(strict.url, forged)).status, (await get(strict.url, forged)).headers['www-authenticate']], [401, 'Bearer error="invalid_token"'])

  const bad = await run(process.execPath, [EXAMPLE], { env: { PATH: process.env.PATH, AUTHD_URL: authd.url, REQUIRE_MFA: 'yes' }, timeout: 10_000 }).catch((e: { code: number; stderr: string }) => e)
  t.equal((bad as { code: number }).code, 2)
  t.match((bad as { stderr: string }).stderr, /REQUIRE_MFA must be 1 or 0 \(got "yes"\)/)
})

t.test('a key revoked with authctl stops verifying at the example once its key cache is older than JWKS_MAX_AGE_MS', async (t) => {
  const dir = join(t.testdir(), 'data')
  const authd = await spawnDaemon(t, dir)
  const reg = await call(authd.url, 'POST', '/api/auth/register', { json: { email: 'rev@example.com', password: 'correct horse battery staple' } })
  t.equal(reg.status, 201)
  const token = reg.body.data.accessToken as string
  const MAX_AGE_MS = 1500
  const rs = await startResourceServer(t, authd.url, { JWKS_MAX_AGE_MS: String(MAX_AGE_MS) })
  const get = (): Promise<Reply> => call(rs.url, 'GET', '/', bearer(token))
  t.equal((await get()).status, 200, 'verified (the keys fetched now)')
  const revoked = await run(process.execPath, [AUTHCTL_BIN, 'keys', 'revoke', kidOf(token), '--yes', '--data', dir], { timeout: 30_000, env: { PATH: process.env.PATH } })
  t.equal(revoked.stderr, '', 'authctl keys revoke succeeded')
  t.equal((await call(authd.url, 'GET', '/api/auth/me', bearer(token))).status, 401, 'authd itself refuses it at once')
  await sleep(MAX_AGE_MS + 300)
  const after = await get()
  t.same([after.status, after.body], [401, { success: false, message: 'Invalid or expired access token' }], 'the example refuses it once its keys were fetched again')
})

t.test('the example refuses to start without AUTHD_URL', async (t) => {
  const r = await run(process.execPath, [EXAMPLE], { env: { PATH: process.env.PATH }, timeout: 10_000 }).catch((e: { code: number; stderr: string }) => e)
  t.equal((r as { code: number }).code, 2)
  t.match((r as { stderr: string }).stderr, /set AUTHD_URL/)
})
