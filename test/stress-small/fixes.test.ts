/**
 * Regression tests for what `npm run stress` found (docs/reliability.md). Each is named for what
 * broke, and fails on the code before its fix.
 */
import t from 'tap'
import { availableParallelism } from 'node:os'
import { createPasswordHasher } from '../../src/core/passwords.js'
import { defaultHashConcurrency } from '../../src/daemon/services.js'
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
    const sign = signer(await activeKey(app))
    t.equal((await me(craft(header, payload, sign))).status, 200, 'the same crafting without crit is accepted')
    for (const crit of [['exp'], ['b64'], [], 'exp']) {
      const r = await me(craft({ ...header, crit }, payload, sign))
      t.equal(r.status, 401, `crit ${JSON.stringify(crit)}`)
    }
    t.equal((await me(`${b64url({ ...header, crit: ['exp'] })}.${b64url(payload)}.`)).status, 401)
  })
})

t.test('a new password hash is not queued behind a flood of verifications (sign-up during a login flood)', async (t) => {
  const hasher = await createPasswordHasher({ memoryKib: 19456, timeCost: 2, parallelism: 1, concurrency: 1, maxQueue: 100 })
  const encoded = await hasher.hash('correct horse battery')
  const order: string[] = []
  const track = <T>(name: string, p: Promise<T>): Promise<T> => p.then((v) => (order.push(name), v))
  // one verification runs, five more wait: a flood in miniature
  const flood = Array.from({ length: 6 }, (_, i) => track(`verify${i}`, hasher.verify(encoded, 'wrong guess')))
  const signUp = track('hash', hasher.hash('a new user password'))
  t.equal(hasher.pending, 7)
  await Promise.all([...flood, signUp])
  t.same(order.slice(0, 2), ['verify0', 'hash'], 'the new hash runs as soon as the running verification ends')
  t.equal(order.length, 7, 'every queued verification still runs')
})

t.test('the hash queue bound counts both lanes', async (t) => {
  const hasher = await createPasswordHasher({ memoryKib: 19456, timeCost: 2, parallelism: 1, concurrency: 1, maxQueue: 2 })
  const running = hasher.verify('$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA', 'x')
  const queued = [hasher.hash('one password here'), hasher.verify('$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA', 'y')]
  await t.rejects(hasher.hash('one too many'), { code: 'BUSY' })
  await t.rejects(hasher.verify('$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA', 'z'), { code: 'BUSY' })
  await Promise.all([running, ...queued])
})

t.test('hashing leaves a core to the event loop (a login flood starved /me, refresh and 429s of CPU)', async (t) => {
  const cores = availableParallelism()
  const n = defaultHashConcurrency()
  t.ok(n >= 1, 'at least one hash at a time')
  if (cores > 1) t.ok(n <= cores - 1, `${n} hashes at once on ${cores} cores`)
  t.ok(n <= 2, 'and never more than 2 (libuv has 4 threads, LMDB needs some)')
})
