/**
 * Regression tests for what `npm run stress` found (docs/reliability.md). Each is named for what
 * broke, and fails on the code before its fix.
 */
import t from 'tap'
import { addUser, call, startServer } from '../helpers/app.js'
import { activeKey, b64url, craft, decode, signer } from '../helpers/jwt.js'

const PASSWORD = 'correct horse battery'

t.test('access tokens', async (t) => {
  const app = await startServer(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const login = await call(app.url, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  t.equal(login.status, 200)
  const token: string = login.body.data.accessToken
  const me = (tok: string) => call(app.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${tok}` } })

  t.test('refuses a token whose signature is respelled in the spare bits of its last base64url character', async (t) => {
    t.equal((await me(token)).status, 200)
    const sig = token.slice(token.lastIndexOf('.') + 1)
    const bytes = Buffer.from(sig, 'base64url')
    // a 64- or 256-byte signature leaves 4 unused bits in the last character: find another spelling
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    const respelled = [...alphabet]
      .map((c) => sig.slice(0, -1) + c)
      .filter((s) => s !== sig && Buffer.from(s, 'base64url').equals(bytes))
    t.ok(respelled.length > 0, 'the same signature bytes have other spellings')
    for (const s of respelled) {
      const r = await me(token.slice(0, token.lastIndexOf('.') + 1) + s)
      t.equal(r.status, 401, `spelling …${s.slice(-3)}`)
      t.same(r.body, { success: false, message: 'Invalid or expired access token' })
    }
  })

  t.test('refuses a token with a crit header even under our own signature', async (t) => {
    const { header, payload } = decode(token)
    const sign = signer(activeKey(app))
    t.equal((await me(craft(header, payload, sign))).status, 200, 'the same crafting without crit is accepted')
    for (const crit of [['exp'], ['b64'], [], 'exp']) {
      const r = await me(craft({ ...header, crit }, payload, sign))
      t.equal(r.status, 401, `crit ${JSON.stringify(crit)}`)
    }
    t.equal((await me(`${b64url({ ...header, crit: ['exp'] })}.${b64url(payload)}.`)).status, 401)
  })
})
