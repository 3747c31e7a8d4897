/**
 * examples/resource-server.mjs as a real client: the example runs as its own process (jose,
 * createRemoteJWKSet against authd's JWKS) in front of a real `authd start`, and keeps verifying
 * across `authctl keys rotate`.
 */
import { execFile, spawn } from 'node:child_process'
import { createPublicKey } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { generateKey } from '../../src/core/keys.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { KeyRecord } from '../../src/store/store.js'
import { AUTHCTL_BIN, call, type Reply } from '../helpers/app.js'
import { craft, craftHs256, b64url, decode, signer } from '../helpers/jwt.js'
import { startAuthd } from './daemon.js'

const EXAMPLE = fileURLToPath(new URL('../../examples/resource-server.mjs', import.meta.url))
const COOLDOWN_MS = 300
const run = promisify(execFile)

async function startResourceServer(t: Test, authdUrl: string): Promise<{ url: string; stderr: () => string }> {
  const proc = spawn(process.execPath, [EXAMPLE], {
    // as a user would run it: the environment names authd, nothing else
    env: { PATH: process.env.PATH, AUTHD_URL: authdUrl, PORT: '0', JWKS_COOLDOWN_MS: String(COOLDOWN_MS) },
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
  const authd = await startAuthd(t, dir)
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
  const keyA = store.listKeys().find((k) => k.state === 'active')!
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
  const kidsBefore = new Set(((await call(authd.url, 'GET', '/.well-known/jwks.json')).body.keys as Array<{ kid: string }>).map((k) => k.kid))
  t.same([...kidsBefore], [keyA.kid])
  const rotated = await run(process.execPath, [AUTHCTL_BIN, 'keys', 'rotate', '--algorithm', 'RS256', '--data', dir], { timeout: 30_000 })
  t.equal(rotated.stderr, '', 'authctl keys rotate succeeded')
  const jwks = (await call(authd.url, 'GET', '/.well-known/jwks.json')).body.keys as Array<{ kid: string; alg: string }>
  t.equal(jwks.length, 2, 'the JWKS serves the new key and the retiring one at once')
  const keyB = jwks.find((k) => !kidsBefore.has(k.kid))!
  t.equal(keyB.alg, 'RS256')

  const login = await call(authd.url, 'POST', '/api/auth/login', { json: { email: 'rs@example.com', password: 'correct horse battery staple' } })
  const tokenB = login.body.data.accessToken as string
  t.equal(kidOf(tokenB), keyB.kid, 'authd signs with the new key')
  t.equal(decode(tokenB).header.alg, 'RS256')

  // the example fetches the JWKS again for the unknown kid once its cooldown since the last fetch is over
  await sleep(COOLDOWN_MS + 100)
  const afterB = await get(bearer(tokenB))
  t.equal(afterB.status, 200, 'a token signed by the new key verifies')
  t.equal(afterB.body.data.claims.sub, user.id)
  const afterA = await get(bearer(tokenA))
  t.equal(afterA.status, 200, 'a token signed before the rotation still verifies')

  t.notMatch(rs.stderr(), tokenA.split('.')[2]!, 'the example never logs a token')
  t.match(rs.stderr(), /token rejected: ERR_JWT_CLAIM_VALIDATION_FAILED/, 'and it says why it refused, to the operator')
})

t.test('the example refuses to start without AUTHD_URL', async (t) => {
  const r = await run(process.execPath, [EXAMPLE], { env: { PATH: process.env.PATH }, timeout: 10_000 }).catch((e: { code: number; stderr: string }) => e)
  t.equal((r as { code: number }).code, 2)
  t.match((r as { stderr: string }).stderr, /set AUTHD_URL/)
})
