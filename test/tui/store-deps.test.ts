/**
 * The terminal UI's operations on a real store (temp LMDB, real argon2) through authctl's admin
 * operations, and its smoke run against a real daemon socket.
 */
import t from 'tap'
import { createAdmin } from '../../src/core/admin.js'
import { generateKey } from '../../src/core/keys.js'
import type { SmokeStepEvent } from '../../src/tui/deps.js'
import { createStoreTuiDeps, storeLabel } from '../../src/tui/store-deps.js'
import { addUser, buildApp, call, startServer, type TestApp } from '../helpers/app.js'
import { signIn } from '../helpers/sign-in.js'

function tuiDeps(app: TestApp, now: () => number = Date.now) {
  const admin = createAdmin({
    store: app.store,
    config: app.config,
    now,
    passwords: async () => ({ hasher: app.hasher, policy: await import('../../src/core/password-policy.js').then((m) => m.createPasswordPolicy(app.config.passwords)) }),
  })
  return createStoreTuiDeps({ admin, store: app.store, storeLabel: storeLabel(app.store), publicUrl: app.config.server.publicUrl, now })
}

const client = { ip: '198.51.100.4', ipKey: '198.51.100.4', userAgent: 'tui-test/1.0' }

t.test('the snapshot shows users with live session counts, sessions with their user, keys with their state', async (t) => {
  const app = await buildApp(t)
  await addUser(app, 'alice@example.com', 'correct horse battery')
  await addUser(app, 'bob@example.com', 'correct horse battery', { disabled: true })
  await signIn(app, { email: 'alice@example.com', password: 'correct horse battery' }, client)
  await signIn(app, { email: 'alice@example.com', password: 'correct horse battery' }, client)
  const deps = tuiDeps(app)
  const snap = await deps.snapshot()
  t.same(
    snap.users.map((u) => [u.email, u.disabled, u.sessions]).sort(),
    [
      ['alice@example.com', false, 2],
      ['bob@example.com', true, 0],
    ],
  )
  t.equal(snap.sessions.length, 2)
  t.match(snap.sessions[0], { email: 'alice@example.com', ip: '198.51.100.4', userAgent: 'tui-test/1.0' })
  t.equal(snap.keys.length, 1)
  t.match(snap.keys[0], { alg: 'ES256', state: 'active' })
  t.equal(deps.storeLabel, `LMDB ${app.config.store.path}`, 'the header names the backend and the data directory')
  t.equal(deps.defaultSmokeUrl, app.config.server.publicUrl)
})

t.test('addUser keeps the password policy and the unique email; the user then signs in', async (t) => {
  const app = await buildApp(t)
  const deps = tuiDeps(app)
  await t.rejects(deps.addUser('carol@example.com', 'password'), { message: 'Password is too common' })
  await t.rejects(deps.addUser('carol@example.com', 'short'), { message: 'Password must be at least 8 characters' })
  await t.rejects(deps.addUser('not-an-email', 'Tr0ub4dor&3-long'), { message: /not a valid email address/ })
  const row = await deps.addUser(' Carol@Example.com ', 'Tr0ub4dor&3-long')
  t.match(row, { email: 'carol@example.com', disabled: false, sessions: 0 })
  await t.rejects(deps.addUser('CAROL@example.com', 'Tr0ub4dor&3-long'), { message: /already exists/ })
  const signedIn = await signIn(app, { email: 'carol@example.com', password: 'Tr0ub4dor&3-long' }, client)
  t.equal(signedIn.user.id, row.id)
})

t.test('setPassword and disabling revoke the sessions and say how many; enabling revokes none', async (t) => {
  const app = await buildApp(t)
  const u = await addUser(app, 'dave@example.com', 'correct horse battery')
  const deps = tuiDeps(app)
  await signIn(app, { email: 'dave@example.com', password: 'correct horse battery' }, client)
  await signIn(app, { email: 'dave@example.com', password: 'correct horse battery' }, client)
  await t.rejects(deps.setPassword(u.id, 'password'), { message: 'Password is too common' })
  t.equal(await app.store.countSessions(u.id), 2, 'a refused password changes nothing')
  t.equal(await deps.setPassword(u.id, 'n3w-Passw0rd-long'), 2)
  t.equal(await app.store.countSessions(u.id), 0)
  await signIn(app, { email: 'dave@example.com', password: 'n3w-Passw0rd-long' }, client)
  t.equal(await deps.setDisabled(u.id, true), 1)
  t.equal((await app.store.getUser(u.id))?.disabled, true)
  t.equal(await deps.setDisabled(u.id, false), 0)
  t.equal((await app.store.getUser(u.id))?.disabled, false)
})

t.test('sessions: revoke one, then all of a user; removing a user removes its sessions', async (t) => {
  const app = await buildApp(t)
  const u = await addUser(app, 'erin@example.com', 'correct horse battery')
  const deps = tuiDeps(app)
  const a = await signIn(app, { email: 'erin@example.com', password: 'correct horse battery' }, client)
  await signIn(app, { email: 'erin@example.com', password: 'correct horse battery' }, client)
  await signIn(app, { email: 'erin@example.com', password: 'correct horse battery' }, client)
  await deps.revokeSession(a.sessionId)
  t.equal(await app.store.getSession(a.sessionId), undefined)
  await t.rejects(deps.revokeSession(a.sessionId), { message: /No session with id/ })
  t.equal(await deps.revokeUserSessions(u.id), 2)
  await signIn(app, { email: 'erin@example.com', password: 'correct horse battery' }, client)
  await deps.removeUser(u.id)
  t.equal(await app.store.getUser(u.id), undefined)
  t.equal((await app.store.listSessions(u.id)).length, 0)
  t.same((await deps.snapshot()).users, [])
})

t.test('the 2FA column reads the store; resetMfa removes the factor, its codes and a pending setup', async (t) => {
  const app = await buildApp(t)
  const u = await addUser(app, 'faye@example.com', 'correct horse battery')
  await addUser(app, 'gus@example.com', 'correct horse battery')
  const secret = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP'
  await app.store.updateUser(u.id, (r) => ({
    ...r,
    mfa: { secret, enabledAt: Date.now(), lastStep: 0, recoveryCodes: ['h1'] },
    mfaSetup: { secret: 'KRSXG5CTMVRXEZLUKRSXG5CTMVRXEZLU', createdAt: Date.now() },
  }))
  const deps = tuiDeps(app)
  const before = await deps.snapshot()
  t.same(before.users.map((x) => [x.email, x.mfaEnabled]).sort(), [['faye@example.com', true], ['gus@example.com', false]])
  t.notMatch(JSON.stringify(before), secret, 'the secret is not in what the UI reads')
  t.same(await deps.resetMfa(u.id), { wasEnabled: true, setupRemoved: false })
  t.equal((await app.store.getUser(u.id))?.mfa, undefined)
  t.equal((await app.store.getUser(u.id))?.mfaSetup, undefined)
  t.equal((await deps.snapshot()).users.find((x) => x.id === u.id)?.mfaEnabled, false)
  t.same(await deps.resetMfa(u.id), { wasEnabled: false, setupRemoved: false }, 'nothing left to reset')
  await app.store.updateUser(u.id, (x) => ({ ...x, mfaSetup: { secret: 'KRSXG5CTMVRXEZLUKRSXG5CTMVRXEZLU', createdAt: Date.now() } }))
  t.same(await deps.resetMfa(u.id), { wasEnabled: false, setupRemoved: true }, 'a set-up not yet confirmed: removed')
  await t.rejects(deps.resetMfa('no-such-id'), { message: 'No user with email or id "no-such-id".' })
})

t.test('keys: rotate makes a next key that signs after tokens.key_lead; revoking the active key replaces it; a retiring one goes', async (t) => {
  const app = await buildApp(t)
  const deps = tuiDeps(app)
  const [first] = (await deps.snapshot()).keys
  const next = await deps.rotateKey()
  t.equal(next.state, 'next')
  t.equal(next.activatedAt! - next.createdAt, app.config.tokens.keyLeadMs)
  t.not(next.kid, first.kid)
  t.same((await deps.snapshot()).keys.map((k) => [k.kid, k.state]), [
    [next.kid, 'next'],
    [first.kid, 'active'],
  ])
  // revoking the active key: its replacement signs at once (and replaces the key still next)
  await deps.revokeKey(first.kid)
  const [replacement] = (await deps.snapshot()).keys
  t.equal(replacement!.state, 'active')
  t.equal(await app.store.getKey(next.kid), undefined)
  const again = await deps.rotateKey()
  t.equal(again.state, 'next')
  await deps.revokeKey(again.kid)
  t.same((await deps.snapshot()).keys.map((k) => k.kid), [replacement!.kid], 'a next key goes without a replacement')
  await app.store.rotateKey(generateKey('ES256', Date.now()), Date.now())
  const keys = (await deps.snapshot()).keys
  t.same(keys.map((k) => k.state), ['active', 'retiring'])
  const current = keys[0]!
  t.equal(keys[1]!.kid, replacement!.kid)
  await deps.checkRevokeKey(replacement!.kid)
  await deps.revokeKey(replacement!.kid)
  t.equal(await app.store.getKey(replacement!.kid), undefined, 'a retiring key goes')
  // the active key: replaced by a new one first, so there is always a key to sign with
  await deps.checkRevokeKey(current.kid)
  await deps.revokeKey(current.kid)
  t.equal(await app.store.getKey(current.kid), undefined)
  const after = (await deps.snapshot()).keys
  t.equal(after.length, 1)
  t.equal(after[0]!.state, 'active')
  t.not(after[0]!.kid, current.kid)
  await t.rejects(deps.checkRevokeKey(current.kid), { message: `No key with kid "${current.kid}".` })
})

t.test('smoke against a real daemon: each step reports running, then its result and ms', async (t) => {
  const server = await startServer(t)
  await addUser(server, 'smoke@example.com', 'correct horse battery')
  const deps = tuiDeps(server)
  const events: SmokeStepEvent[] = []
  const ok = await deps.smoke({ url: server.url, email: 'smoke@example.com', password: 'correct horse battery' }, (e) => events.push(e))
  t.equal(ok, true)
  t.same(
    events.map((e) => `${e.index} ${e.name} ${e.status}`),
    deps.smokeStepNames.flatMap((name, i) => [`${i} ${name} running`, `${i} ${name} pass`]),
  )
  const done = events.filter((e) => e.status === 'pass')
  t.same(done.map((e) => e.httpStatus), [200, 200, 200, 200, 200, 401])
  t.ok(done.every((e) => typeof e.ms === 'number' && e.ms >= 0))
})

t.test('smoke: a wrong password fails at login and skips the rest; a bad URL is refused; a closed port fails the step', async (t) => {
  const server = await startServer(t)
  await addUser(server, 'smoke@example.com', 'correct horse battery')
  const deps = tuiDeps(server)
  const events: SmokeStepEvent[] = []
  t.equal(await deps.smoke({ url: server.url, email: 'smoke@example.com', password: 'wrong password!' }, (e) => events.push(e)), false)
  const final = events.filter((e) => e.status !== 'running')
  t.match(final[0], { name: 'login', status: 'fail', httpStatus: 401, detail: /expected 200, got 401/ })
  t.same(final.slice(1).map((e) => e.status), ['skipped', 'skipped', 'skipped', 'skipped', 'skipped'])

  await t.rejects(deps.smoke({ url: 'localhost:8080', email: 'a@b.c', password: 'x' }, () => {}), { message: /absolute http:\/\/ or https:\/\/ URL/ })

  // a port that was just free: nothing listens there
  const { createServer } = await import('node:net')
  const probe = createServer()
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()))
  const port = (probe.address() as { port: number }).port
  await new Promise<void>((r) => probe.close(() => r()))
  const refused: SmokeStepEvent[] = []
  t.equal(await deps.smoke({ url: `http://127.0.0.1:${port}`, email: 'a@b.c', password: 'x' }, (e) => refused.push(e)), false)
  t.match(refused.find((e) => e.status === 'fail'), { name: 'login', detail: /connection refused/ })
  t.equal((await call(server.url, 'GET', '/healthz')).status, 200, 'the daemon is unharmed')
})

t.test('a store of 20 000 sessions: the snapshot reads the 500 most recently used in steps that let the event loop turn', async (t) => {
  const app = await buildApp(t)
  const now = Date.now()
  const users = await Promise.all(Array.from({ length: 40 }, (_, u) => app.store.createUser({ id: `user${u}`, email: `u${u}@example.com`, passwordHash: 'x', createdAt: now, updatedAt: now, disabled: false })))
  t.ok(users.every(Boolean))
  const N = 20_000
  for (let i = 0; i < N; i += 2000) {
    await Promise.all(
      Array.from({ length: 2000 }, (_, k) =>
        app.store.createSession({
          id: `s${String(i + k).padStart(6, '0')}`,
          userId: `user${(i + k) % 40}`,
          createdAt: now - 60_000,
          lastUsedAt: now - (i + k),
          expiresAt: now + 86_400_000,
          ip: '203.0.113.7',
          userAgent: 'seeded',
          refreshHash: `h${i + k}`,
          previousHash: null,
          rotatedAt: null,
          generation: 0,
          familyHash: `f${i + k}`,
          amr: ['pwd'],
        }),
      ),
    )
  }
  const deps = tuiDeps(app, () => now)
  // a key pressed while the store is read is handled between two of its steps: count the turns
  let turns = 0
  let reading = true
  const turn = (): void => {
    turns++
    if (reading) setImmediate(turn)
  }
  setImmediate(turn)
  const snap = await deps.snapshot()
  reading = false
  t.ok(turns >= 5, `the event loop turned while the store was read (${turns} turns)`)
  t.equal(snap.sessions.length, 500, 'the list holds the 500 ...')
  t.same(snap.sessions.slice(0, 3).map((s) => s.id), ['s000000', 's000001', 's000002'], '... most recently used')
  t.equal(snap.sessionsTotal, N, 'and says how many there are')
  t.same(snap.users.find((u) => u.email === 'u7@example.com')?.sessions, N / 40, 'user counts cover every session')

  const filtered = await deps.snapshot({ sessionFilter: 'u7@' })
  t.equal(filtered.sessionsTotal, N / 40)
  t.ok(filtered.sessions.every((s) => s.email === 'u7@example.com'), 'a filter reads the sessions of matching users, beyond the latest 500')
  t.equal(filtered.sessions.length, N / 40)

  const quit = new AbortController()
  quit.abort()
  await t.rejects(deps.snapshot({ signal: quit.signal }), { name: 'AbortError' }, 'a read for a UI that quit stops')
})
