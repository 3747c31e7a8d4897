/**
 * authctl against a running daemon (the real `authd start`, a child process on port 0): every
 * change it makes reaches the daemon within a second, without a restart.
 */
import t from 'tap'
import { call, CookieJar, type Reply } from '../helpers/app.js'
import { spawnDaemon } from '../helpers/daemon.js'
import { ctlFor, PASSWORD, until } from './run.js'

const COOKIE = '__Host-authd_rt'

const kidOf = (token: string): string => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid

t.test('changes made by authctl take effect in a running daemon within a second', async (t) => {
  const dir = t.testdir()
  const daemon = await spawnDaemon(t, dir)
  const ctl = ctlFor(dir)
  for (const email of ['ann@example.com', 'bob@example.com', 'cat@example.com']) {
    const r = await ctl(['user', 'add', email, '--password-stdin'], { input: `${PASSWORD}\n` })
    t.equal(r.code, 0, r.stderr)
  }

  const login = async (email: string, password = PASSWORD): Promise<{ reply: Reply; jar: CookieJar; token: string }> => {
    const jar = new CookieJar(COOKIE)
    const reply = await call(daemon.url, 'POST', '/api/auth/login', { json: { email, password } })
    jar.take(reply)
    return { reply, jar, token: reply.body?.data?.accessToken }
  }
  const me = (token: string): Promise<Reply> => call(daemon.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${token}` } })
  const refresh = (jar: CookieJar): Promise<Reply> => call(daemon.url, 'POST', '/api/auth/refresh', { headers: jar.header() })
  const meRefused = (token: string) => async () => (await me(token)).status === 401

  await t.test('user disable: the user’s access and refresh tokens fail, and login is refused until enable', async (t) => {
    const ann = await login('ann@example.com')
    t.equal((await me(ann.token)).status, 200)
    const r = await ctl(['user', 'disable', 'ann@example.com'])
    t.equal(r.stdout, `Disabled ann@example.com (${ann.reply.body.data.user.id}); revoked 1 session.\n`)
    const took = await until(meRefused(ann.token))
    t.ok(took >= 0 && took <= 1000, `/me refused within 1 s (took ${took.toFixed(0)} ms)`)
    const me401 = await me(ann.token)
    t.same(me401.body, { success: false, message: 'Invalid or expired access token' })
    t.equal((await refresh(ann.jar)).status, 401)
    t.equal((await login('ann@example.com')).reply.status, 401)
    t.equal((await ctl(['user', 'enable', 'ann@example.com'])).code, 0)
    t.equal((await login('ann@example.com')).reply.status, 200, 'enabled again')
  })

  await t.test('user passwd: the old refresh token and access token fail; only the new password logs in', async (t) => {
    const bob = await login('bob@example.com')
    t.equal(bob.reply.status, 200)
    const newPassword = 'a brand new passphrase'
    const r = await ctl(['user', 'passwd', 'bob@example.com', '--password-stdin', '--json'], { input: `${newPassword}\n` })
    t.match(r.json(), { revokedSessions: 1 })
    t.ok((await until(async () => (await refresh(bob.jar)).status === 401)) >= 0, 'refresh refused within 1 s')
    const again = await refresh(bob.jar)
    t.same(again.body, { success: false, message: 'Invalid or expired refresh token' })
    t.equal((await me(bob.token)).status, 401)
    t.equal((await login('bob@example.com')).reply.status, 401, 'old password refused')
    t.equal((await login('bob@example.com', newPassword)).reply.status, 200, 'new password works')
  })

  await t.test('sessions revoke: that session’s refresh and access tokens fail, another lives', async (t) => {
    const first = await login('cat@example.com')
    const second = await login('cat@example.com')
    const listed = (await ctl(['sessions', 'list', '--user', 'cat@example.com', '--json'])).json().sessions
    t.equal(listed.length, 2)
    const sid = JSON.parse(Buffer.from(first.token.split('.')[1]!, 'base64url').toString()).sid
    t.ok(listed.some((s: { id: string }) => s.id === sid), 'the sid of the access token is the session id authctl shows')
    t.equal((await ctl(['sessions', 'revoke', sid])).code, 0)
    t.ok((await until(meRefused(first.token))) >= 0, '/me refused within 1 s')
    t.equal((await refresh(first.jar)).status, 401)
    t.equal((await me(second.token)).status, 200)
    t.equal((await refresh(second.jar)).status, 200)
  })

  await t.test('keys rotate: the new key is published first, signs by itself once tokens.key_lead has passed, old tokens keep verifying; keys revoke ends them', async (t) => {
    const before = await login('ann@example.com')
    const oldKid = kidOf(before.token)
    // authctl's lead (the daemon reads the activation time from the store, not its own config)
    const rotated = (await ctl(['keys', 'rotate', '--json'], { env: { AUTHD_TOKENS_KEY_LEAD: '1500ms' } })).json()
    const newKid = rotated.key.kid as string
    t.match(rotated, { key: { state: 'next' }, active: { kid: oldKid }, retiring: [] })
    const jwks = await call(daemon.url, 'GET', '/.well-known/jwks.json')
    t.same(jwks.body.keys.map((k: { kid: string }) => k.kid).sort(), [newKid, oldKid].sort(), 'the new key is published at once')
    const early = await login('ann@example.com')
    // (a loaded machine may take the lead's whole 1.5 s between the two commands: then it has signed already)
    if (Date.now() < Date.parse(rotated.key.activatedAt)) t.equal(kidOf(early.token), oldKid, 'the old key signs until the lead has passed')
    let after = early
    const switched = await until(async () => kidOf((after = await login('ann@example.com')).token) === newKid, 5000)
    t.ok(switched >= 0, 'then the new key signs, with no authctl run in between')
    t.ok(Date.now() >= Date.parse(rotated.key.activatedAt), 'not before its time')
    t.equal((await me(before.token)).status, 200, 'a token of the retiring key still verifies')
    t.equal((await me(after.token)).status, 200)

    const revoked = await ctl(['keys', 'revoke', oldKid, '--yes'])
    t.equal(revoked.code, 0, revoked.stderr)
    const took = await until(meRefused(before.token))
    t.ok(took >= 0 && took <= 1000, `the revoked key's token is refused within 1 s (took ${took.toFixed(0)} ms)`)
    t.equal((await me(after.token)).status, 200)
    const jwksAfter = await call(daemon.url, 'GET', '/.well-known/jwks.json')
    t.same(jwksAfter.body.keys.map((k: { kid: string }) => k.kid), [newKid])

    // the active key too: replaced first, so the daemon signs with the replacement at once
    const replaced = await ctl(['keys', 'revoke', newKid, '--yes', '--json'])
    t.equal(replaced.code, 0, replaced.stderr)
    const replacement = replaced.json().active.kid as string
    const tookActive = await until(meRefused(after.token))
    t.ok(tookActive >= 0 && tookActive <= 1000, `the revoked active key's token is refused within 1 s (took ${tookActive.toFixed(0)} ms)`)
    const next = await login('ann@example.com')
    t.equal(next.reply.status, 200, 'the daemon still signs')
    t.equal(kidOf(next.token), replacement, 'with the replacement')
    t.equal((await me(next.token)).status, 200)
  })

  await t.test('user rm: the deleted user’s tokens fail', async (t) => {
    const cat = await login('cat@example.com')
    t.equal((await ctl(['user', 'rm', 'cat@example.com', '--yes'])).code, 0)
    t.ok((await until(meRefused(cat.token))) >= 0, '/me refused within 1 s')
    t.equal((await refresh(cat.jar)).status, 401)
    t.equal((await login('cat@example.com')).reply.status, 401)
  })

  t.equal(await daemon.stop(), 0, 'the daemon ran throughout and stops cleanly')
})

t.test('user mfa reset, with the daemon running: the password alone signs in at once, and an mfaToken issued before is void', async (t) => {
  const { HOTP, Secret } = await import('otpauth')
  const code = (secret: string, steps = 0): string =>
    HOTP.generate({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, counter: Math.floor(Date.now() / 30_000) + steps })
  const dir = t.testdir()
  const daemon = await spawnDaemon(t, dir)
  const ctl = ctlFor(dir)
  t.equal((await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })).code, 0)
  const login = (): Promise<Reply> => call(daemon.url, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  const bearer = { authorization: `Bearer ${(await login()).body.data.accessToken as string}` }
  const setup = await call(daemon.url, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer, json: {} })
  const secret = setup.body.data.secret as string
  const confirm = await call(daemon.url, 'POST', '/api/auth/mfa/totp/confirm', { headers: bearer, json: { code: code(secret) } })
  t.equal(confirm.status, 200, 'the factor is on')
  const listed = await ctl(['user', 'list', '--json'])
  t.equal(listed.json().users[0].mfaEnabled, true, 'authctl sees it')
  t.notMatch(listed.stdout, secret)
  const before = await login()
  t.match(before.body.data, { mfaRequired: true, mfaToken: String })

  const reset = await ctl(['user', 'mfa', 'reset', 'ann@example.com', '--yes'])
  t.equal(reset.code, 0, reset.stderr)
  const took = await until(async () => typeof (await login()).body?.data?.accessToken === 'string')
  t.ok(took >= 0, `the password alone signs in within a second (${Math.round(took)} ms)`)
  const after = await login()
  t.match(after.body.data, { accessToken: String, user: { email: 'ann@example.com' } })
  t.notOk('mfaRequired' in after.body.data)
  const claims = JSON.parse(Buffer.from((after.body.data.accessToken as string).split('.')[1]!, 'base64url').toString())
  t.same(claims.amr, ['pwd'])
  const meReply = await call(daemon.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${after.body.data.accessToken as string}` } })
  t.equal(meReply.body.data.mfaEnabled, false)
  // the second step begun before the reset cannot finish: its factor is gone
  const late = await call(daemon.url, 'POST', '/api/auth/login/mfa', { json: { mfaToken: before.body.data.mfaToken, code: code(secret, 1) } })
  t.same([late.status, late.body.message], [401, 'Invalid or expired MFA token'])
  t.notMatch(daemon.output(), secret, 'the daemon never logged the secret')
})
