/**
 * GET /api/auth/me with the verified-token cache warm: a revoked session, a disabled or deleted
 * user and a revoked key are refused on the very next /me. The changes are made the way an admin
 * makes them, from outside the daemon: through a second handle on the data directory, and end to
 * end with the real `authd start` and `authctl` processes.
 */
// The end-to-end test runs the real daemon (a socket) because authctl, another process, makes the change.
import t, { type Test } from 'tap'
import { addUser, buildApp, call, openTestStore, type Reply, type Target } from '../helpers/app.js'
import { spawnDaemon } from '../helpers/daemon.js'
import { decode } from '../helpers/jwt.js'
import { runCtl } from '../cli/run.js'
import { createAccessTokens } from '../../src/core/access-tokens.js'
import { SESSIONS_REMEMBERED } from '../../src/core/auth-service.js'
import { generateKey } from '../../src/core/keys.js'
import type { Store } from '../../src/store/store.js'

const PASSWORD = 'correct horse battery'

const me = (url: Target, token: string): Promise<Reply> => call(url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${token}` } })

async function login(url: Target, email: string): Promise<string> {
  const r = await call(url, 'POST', '/api/auth/login', { json: { email, password: PASSWORD } })
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`)
  return r.body.data.accessToken as string
}

/** /me twice with 200: the second answer comes from the cache */
async function warm(t: Test, url: Target, token: string): Promise<void> {
  t.equal((await me(url, token)).status, 200, 'accepted')
  t.equal((await me(url, token)).status, 200, 'accepted again (cached)')
}

function refused(t: Test, r: Reply): void {
  t.equal(r.status, 401, 'refused on the very next /me')
  t.same(r.body, { success: false, message: 'Invalid or expired access token' })
  t.equal(r.headers['www-authenticate'], 'Bearer error="invalid_token"')
}

/**
 * The time between an admin's change and the next request: lmdb renews the daemon's read
 * snapshot within a millisecond of its last read (a timer), and a request that follows a commit
 * closer than that may still read the old one. README, "Administer with authctl" allows a second; this waits 5 ms.
 */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 5))

/** a second handle on the app's store (another process's, as authctl's) */
const admin = (t: Test, dir: string): Promise<Store> => openTestStore(t, dir)

t.test('through a second handle on the data directory', async (t) => {
  const app = await buildApp(t)
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  const bob = await addUser(app, 'bob@example.com', PASSWORD)
  const other = await admin(t, app.dir)

  t.test('refuses a cached token once its session is revoked', async (t) => {
    const token = await login(app, 'ann@example.com')
    const kept = await login(app, 'ann@example.com')
    await warm(t, app, token)
    await warm(t, app, kept)
    t.ok(await other.revokeSession(decode(token).payload.sid as string))
    await settle()
    refused(t, await me(app, token))
    t.equal((await me(app, kept)).status, 200, 'the other session is untouched')
  })

  t.test('refuses a cached token once its user is disabled, and accepts it once enabled', async (t) => {
    const token = await login(app, 'bob@example.com')
    await warm(t, app, token)
    await other.updateUser(bob.id, (u) => ({ ...u, disabled: true }))
    await settle()
    refused(t, await me(app, token))
    await other.updateUser(bob.id, (u) => ({ ...u, disabled: false }))
    await settle()
    t.equal((await me(app, token)).status, 200)
  })

  t.test('refuses a cached token once its key is revoked', async (t) => {
    const old = await login(app, 'ann@example.com')
    await warm(t, app, old)
    const oldKid = decode(old).header.kid as string
    await other.rotateKey(generateKey('ES256', Date.now()), Date.now())
    await settle()
    const fresh = await login(app, 'ann@example.com')
    t.not(decode(fresh).header.kid, oldKid)
    await warm(t, app, old)
    t.ok(await other.deleteKey(oldKid))
    await settle()
    refused(t, await me(app, old))
    t.equal((await me(app, fresh)).status, 200, 'tokens of the new key still verify')
  })

  t.test('refuses a cached token once its user is deleted', async (t) => {
    const token = await login(app, 'ann@example.com')
    await warm(t, app, token)
    t.ok(await other.deleteUser(ann.id))
    await settle()
    refused(t, await me(app, token))
  })
})

t.test('end to end: the real daemon, changed by the real authctl', async (t) => {
  const dir = t.testdir()
  const ctl = (...args: string[]): ReturnType<typeof runCtl> => runCtl([...args, '--data', dir], { input: `${PASSWORD}\n`, cwd: dir })
  const added = await ctl('user', 'add', 'ann@example.com', '--password-stdin')
  t.equal(added.code, 0, added.stderr)
  const daemon = await spawnDaemon(t, dir)

  const first = await login(daemon.url, 'ann@example.com')
  const second = await login(daemon.url, 'ann@example.com')
  await warm(t, daemon.url, first)
  await warm(t, daemon.url, second)
  const revoked = await ctl('sessions', 'revoke', decode(first).payload.sid as string)
  t.equal(revoked.code, 0, revoked.stderr)
  refused(t, await me(daemon.url, first))
  t.equal((await me(daemon.url, second)).status, 200, 'the other session is untouched')

  const disabled = await ctl('user', 'disable', 'ann@example.com')
  t.equal(disabled.code, 0, disabled.stderr)
  refused(t, await me(daemon.url, second))
  t.equal((await ctl('user', 'enable', 'ann@example.com')).code, 0)

  const old = await login(daemon.url, 'ann@example.com')
  await warm(t, daemon.url, old)
  const oldKid = decode(old).header.kid as string
  t.equal((await ctl('keys', 'rotate', '--now')).code, 0)
  const fresh = await login(daemon.url, 'ann@example.com')
  t.not(decode(fresh).header.kid, oldKid, 'the new key signs')
  await warm(t, daemon.url, old)
  const gone = await ctl('keys', 'revoke', oldKid, '--yes')
  t.equal(gone.code, 0, gone.stderr)
  refused(t, await me(daemon.url, old))
  t.equal((await me(daemon.url, fresh)).status, 200, 'tokens of the new key still verify')
  t.equal(await daemon.stop(), 0)
})

t.test('a session /me remembers still runs out on time, with no write to tell it', async (t) => {
  for (const [env, ttl] of [
    [{ AUTHD_SESSIONS_IDLE_TTL: '5m' }, 5 * 60_000],
    [{ AUTHD_SESSIONS_ABSOLUTE_TTL: '5m' }, 5 * 60_000],
  ] as const) {
    const clock = { now: Date.now() }
    const app = await buildApp(t, { env, now: () => clock.now })
    await addUser(app, 'ann@example.com', PASSWORD)
    const token = await login(app, 'ann@example.com')
    await warm(t, app, token)
    clock.now += ttl - 1
    t.equal((await me(app, token)).status, 200, `live just before ${Object.keys(env)[0]}`)
    clock.now += 1
    refused(t, await me(app, token))
  }
})

t.test('a write to something else is no reason to refuse: the session is read again and still live', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'ann@example.com', PASSWORD)
  const other = await admin(t, app.dir)
  const token = await login(app, 'ann@example.com')
  await warm(t, app, token)
  // the store's version, as /me's read answers it (core/me-view.ts)
  const version = async (): Promise<number> => (await app.store.meRead([], -1, new Set())).version
  const before = await version()
  await addUser(app, 'bob@example.com', PASSWORD)
  await other.updateUser((await other.getUserByEmail('bob@example.com'))!.id, (u) => ({ ...u, disabled: true }))
  await settle()
  t.not(await version(), before)
  t.equal((await me(app, token)).status, 200)
  t.equal((await me(app, token)).status, 200)
})

t.test(`remembers at most ${SESSIONS_REMEMBERED} sessions, and answers the same for one it forgot`, async (t) => {
  const app = await buildApp(t)
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  const c = app.config.tokens
  const tokens = createAccessTokens({ keyring: app.keyring, now: Date.now, issuer: c.issuer, audience: c.audience, ttlMs: c.accessTtlMs, clockToleranceMs: c.clockToleranceMs })
  const headers: string[] = []
  const now = Date.now()
  // written a thousand at a time (LMDB commits concurrent writes together)
  for (let from = 0; from < SESSIONS_REMEMBERED + 10; from += 1000) {
    const writes: Array<Promise<unknown>> = []
    for (let i = from; i < Math.min(from + 1000, SESSIONS_REMEMBERED + 10); i++) {
      const sid = `session-${i}`
      writes.push(
        app.store.createSession({
          id: sid,
          userId: ann.id,
          createdAt: now,
          lastUsedAt: now,
          expiresAt: now + 10 * 60_000,
          ip: '127.0.0.1',
          userAgent: 'test',
          refreshHash: `hash-${i}`,
          previousHash: null,
          rotatedAt: null,
          generation: 0,
          familyHash: `family-${i}`,
          amr: ['pwd'],
        }),
      )
      headers.push(`Bearer ${tokens.sign({ sub: ann.id, email: ann.email, sid }).token}`)
    }
    await Promise.all(writes)
  }
  // asked 500 at a time: all at once, the reads queue on PostgreSQL's pool for longer than a
  // request may wait for a connection (503 by design, under a load no client sends one process)
  const ids = new Set<string>()
  for (let from = 0; from < headers.length; from += 500) {
    for (const r of await Promise.all(headers.slice(from, from + 500).map((h) => app.auth.me(h)))) ids.add(r.user.id)
  }
  t.same(ids, new Set([ann.id]), 'every one accepted')
  t.equal(app.auth.sessionsRemembered, SESSIONS_REMEMBERED, 'no more than the bound')
  t.equal((await app.auth.me(headers[0]!)).user.email, 'ann@example.com', 'the first, forgotten, is read again')
  t.equal(app.auth.sessionsRemembered, SESSIONS_REMEMBERED)
})

t.test("answers with the user's new email on the next /me once it is changed, and the same body while it is not", async (t) => {
  const app = await buildApp(t)
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  const other = await admin(t, app.dir)
  const token = await login(app, 'ann@example.com')
  const first = await me(app, token)
  const again = await me(app, token)
  t.same(first.body, { success: true, data: { id: ann.id, email: 'ann@example.com', mfaEnabled: false } })
  t.equal(again.text, first.text, 'the same body')
  await other.updateUser(ann.id, (u) => ({ ...u, email: 'ann.new@example.com' }))
  await settle()
  t.same((await me(app, token)).body, { success: true, data: { id: ann.id, email: 'ann.new@example.com', mfaEnabled: false } })
  const head = await call(app, 'HEAD', '/api/auth/me', { headers: { authorization: `Bearer ${token}` } })
  t.equal(head.status, 200)
  t.equal(head.text, '', 'HEAD: headers only')
  t.equal(Number(head.headers['content-length']), Buffer.byteLength((await me(app, token)).text), 'with the length of the GET body')
})
