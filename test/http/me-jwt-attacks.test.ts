/**
 * A JWT attack corpus against GET /api/auth/me, injected into the handler. Every crafted token must get
 * 401 "Invalid or expired access token" with WWW-Authenticate: Bearer error="invalid_token".
 * Where an attack needs a valid signature, the token is signed with the app's real active key,
 * and a control test shows that the same crafting, without the attack, is accepted.
 */
import { createHmac, createPublicKey, generateKeyPairSync } from 'node:crypto'
import t, { type Test } from 'tap'
import { addUser, call, buildApp, type Reply, type TestApp } from '../helpers/app.js'
import { activeKey, b64url, craft, craftHs256, decode, highSTwin, signer, signWith } from '../helpers/jwt.js'

const PASSWORD = 'correct horse battery'

const me = (app: TestApp, token: string): Promise<Reply> => call(app, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${token}` } })

async function loginToken(app: TestApp, email: string): Promise<string> {
  const r = await call(app, 'POST', '/api/auth/login', { json: { email, password: PASSWORD } })
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`)
  return r.body.data.accessToken as string
}

function rejected(t: Test, r: Reply): void {
  t.equal(r.status, 401)
  t.same(r.body, { success: false, message: 'Invalid or expired access token' })
  t.equal(r.headers['www-authenticate'], 'Bearer error="invalid_token"')
  t.notMatch(r.text, /at \S+:\d+|Error|jwt|signature/i, 'no library message or stack')
}

for (const alg of ['ES256', 'RS256'] as const) {
  t.test(`with ${alg} keys`, async (t) => {
    const app = await buildApp(t, { env: { AUTHD_TOKENS_ALGORITHM: alg, AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1000/1m' } })
    await addUser(app, 'ann@example.com', PASSWORD)
    await addUser(app, 'bob@example.com', PASSWORD)
    const token = await loginToken(app, 'ann@example.com')
    const bobToken = await loginToken(app, 'bob@example.com')
    const key = await activeKey(app)
    t.equal(key.alg, alg)
    const { header, payload } = decode(token)
    const now = Math.floor(Date.now() / 1000)
    const sign = (h: Record<string, unknown>, p: Record<string, unknown>): string => craft(h, p, signer(key))
    const attack = (name: string, make: () => string): void => {
      t.test(name, async (t) => rejected(t, await me(app, make())))
    }

    t.test('accepts its own token, and the same claims re-signed by hand with the active key (the crafting is sound)', async (t) => {
      t.same(header, { alg, kid: key.kid, typ: 'at+jwt' })
      t.equal((await me(app, token)).status, 200)
      const again = await me(app, sign(header, { ...payload, iat: now, exp: now + 900 }))
      t.equal(again.status, 200)
      t.equal(again.body.data.email, 'ann@example.com')
    })

    for (const none of ['none', 'None', 'NONE', 'nOnE']) {
      attack(`rejects alg "${none}" with an empty signature`, () => `${b64url({ ...header, alg: none })}.${b64url(payload)}.`)
      attack(`rejects alg "${none}" carrying the original signature`, () => `${b64url({ ...header, alg: none })}.${b64url(payload)}.${decode(token).signature}`)
    }
    attack('rejects alg "none" without a kid', () => `${b64url({ alg: 'none', typ: 'at+jwt' })}.${b64url(payload)}.`)
    if (alg === 'ES256') attack('rejects the high-S twin (r, n - s) of a valid ES256 token', () => highSTwin(token))
    attack('rejects a token whose signature is stripped (trailing dot)', () => token.slice(0, token.lastIndexOf('.') + 1))
    attack('rejects a token whose signature is stripped (two segments)', () => token.slice(0, token.lastIndexOf('.')))
    attack('rejects a tampered payload (sub and sid of another user) under the original signature', () => {
      const bob = decode(bobToken).payload
      const [h, , s] = token.split('.')
      return `${h}.${b64url({ ...payload, sub: bob.sub, sid: bob.sid, email: bob.email })}.${s}`
    })
    attack('rejects a tampered payload (later exp) under the original signature', () => {
      const [h, , s] = token.split('.')
      return `${h}.${b64url({ ...payload, exp: (payload.exp as number) + 60 })}.${s}`
    })
    attack('rejects a tampered header (kid changed) under the original signature', () => {
      const [, p, s] = token.split('.')
      return `${b64url({ ...header, kid: 'other' })}.${p}.${s}`
    })
    attack('rejects a validly signed token whose sub does not own its sid', () => sign(header, { ...payload, sub: decode(bobToken).payload.sub }))
    attack('rejects a validly signed token for a session that does not exist', () => sign(header, { ...payload, sid: 'x'.repeat(22) }))

    const publicPem = key.publicKeyPem
    const publicDer = createPublicKey(publicPem).export({ type: 'spki', format: 'der' })
    attack('rejects an HS256 token signed with the public key (PEM) as the HMAC secret', () => craftHs256({ ...header, alg: 'HS256' }, payload, publicPem))
    attack('rejects an HS256 token signed with the public key (DER) as the HMAC secret', () => craftHs256({ ...header, alg: 'HS256' }, payload, publicDer))
    attack('rejects an HS256 token without a kid signed with the public key', () => craftHs256({ alg: 'HS256', typ: 'at+jwt' }, payload, publicPem))
    attack('rejects an HS512 token signed with the public key', () => {
      const input = `${b64url({ ...header, alg: 'HS512' })}.${b64url(payload)}`
      return `${input}.${createHmac('sha512', publicPem).update(input).digest('base64url')}`
    })

    const foreign =
      alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey : generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
    attack('rejects a token signed by a foreign key under our kid', () => craft(header, payload, { alg, privateKey: foreign }))
    attack('rejects a token signed by a foreign key under its own kid', () => craft({ ...header, kid: 'foreign-key' }, payload, { alg, privateKey: foreign }))
    attack('rejects a token with an embedded jwk of a foreign key', () =>
      craft({ ...header, jwk: createPublicKey(foreign).export({ format: 'jwk' }) }, payload, { alg, privateKey: foreign }),
    )
    attack('rejects a token whose alg names the other asymmetric algorithm', () => {
      const other = alg === 'ES256' ? 'RS256' : 'ES256'
      const otherKey = other === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey : generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
      return craft({ ...header, alg: other }, payload, { alg: other, privateKey: otherKey })
    })

    attack('rejects a validly signed token with an unknown kid', () => sign({ ...header, kid: 'unknown-kid' }, payload))
    attack('rejects a validly signed token without a kid', () => sign({ alg, typ: 'at+jwt' }, payload))
    attack('rejects a validly signed token with a numeric kid', () => sign({ ...header, kid: 1 }, payload))
    attack('rejects a validly signed token with a kid of 8 KB', () => sign({ ...header, kid: 'A'.repeat(8192) }, payload))
    attack('rejects a validly signed token with a path-traversal kid', () => sign({ ...header, kid: '../../../../../../etc/passwd' }, payload))
    attack('rejects a validly signed token with a kid naming an object prototype key', () => sign({ ...header, kid: '__proto__' }, payload))

    attack('rejects a validly signed token without exp', () => {
      const { exp: _exp, ...rest } = payload
      return sign(header, rest)
    })
    attack('rejects a validly signed token without iat', () => {
      const { iat: _iat, ...rest } = payload
      return sign(header, rest)
    })
    attack('rejects a validly signed token whose exp lies far beyond the TTL', () => sign(header, { ...payload, iat: now, exp: now + 10 * 365 * 86400 }))
    attack('rejects a validly signed token whose exp is one second beyond the TTL', () => sign(header, { ...payload, iat: now, exp: now + 901 }))
    attack('rejects a validly signed token whose iat is in the future', () => sign(header, { ...payload, iat: now + 3600, exp: now + 3600 + 900 }))
    attack('rejects a validly signed token with string exp', () => sign(header, { ...payload, exp: String(now + 900) }))
    attack('rejects a validly signed token that has expired', () => sign(header, { ...payload, iat: now - 2000, exp: now - 1100 }))
    attack('rejects a validly signed token that is not valid yet (nbf)', () => sign(header, { ...payload, nbf: now + 3600 }))

    attack('rejects a validly signed token with typ "JWT"', () => sign({ ...header, typ: 'JWT' }, payload))
    attack('rejects a validly signed token without typ', () => sign({ alg, kid: key.kid }, payload))
    attack('rejects a validly signed token with typ of an ID token', () => sign({ ...header, typ: 'id_token+jwt' }, payload))
    attack('rejects a validly signed token with a wrong iss', () => sign(header, { ...payload, iss: 'evil' }))
    attack('rejects a validly signed token without iss', () => {
      const { iss: _iss, ...rest } = payload
      return sign(header, rest)
    })
    attack('rejects a validly signed token with a wrong aud', () => sign(header, { ...payload, aud: 'another-service' }))
    attack('rejects a validly signed token without aud', () => {
      const { aud: _aud, ...rest } = payload
      return sign(header, rest)
    })
    attack('rejects a validly signed token without sid', () => {
      const { sid: _sid, ...rest } = payload
      return sign(header, rest)
    })
    attack('rejects a validly signed token whose payload is not an object', () => {
      const input = `${b64url(header)}.${b64url('"just a string"')}`
      return `${input}.${signWith(alg, key.privateKeyPem, input)}`
    })

    const [h, p, s] = token.split('.') as [string, string, string]
    attack('rejects a 1-byte signature', () => `${h}.${p}.${Buffer.from([0]).toString('base64url')}`)
    attack('rejects a signature of the right length but all zero bytes', () => `${h}.${p}.${Buffer.alloc(alg === 'ES256' ? 64 : 256).toString('base64url')}`)
    attack('rejects a DER-encoded signature', () => `${h}.${p}.${Buffer.concat([Buffer.from([0x30, 0x44, 0x02, 0x20]), Buffer.alloc(32, 1), Buffer.from([0x02, 0x20]), Buffer.alloc(32, 1)]).toString('base64url')}`)
    attack('rejects a signature with padding characters', () => `${h}.${p}.${s}==`)
    attack('rejects a second spelling of the valid signature (spare base64url bits set)', () => {
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
      const respelled = s.slice(0, -1) + alphabet[alphabet.indexOf(s.at(-1)!) ^ 1]
      if (!Buffer.from(respelled, 'base64url').equals(Buffer.from(s, 'base64url'))) throw new Error('not the same signature bytes')
      return `${h}.${p}.${respelled}`
    })
    attack('rejects a token of four segments', () => `${token}.${s}`)
    attack('rejects a token of five segments (JWE shape)', () => `${h}.${p}.${s}.${s}.${s}`)
    attack('rejects a JSON-serialized (flattened) JWS', () => JSON.stringify({ protected: h, payload: p, signature: s }))
    attack('rejects a JSON-serialized (general) JWS', () => JSON.stringify({ payload: p, signatures: [{ protected: h, signature: s }] }))
    attack('rejects a header that is not JSON', () => `${b64url('not json')}.${p}.${s}`)
    attack('rejects a header that is JSON null', () => `${b64url('null')}.${p}.${s}`)
    attack('rejects a token of 5000 characters', () => `${h}.${p}.${'A'.repeat(5000)}`)
  })
}
