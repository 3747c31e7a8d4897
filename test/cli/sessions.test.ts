import t from 'tap'
import { addUser, buildApp } from '../helpers/app.js'
import { signIn } from '../helpers/sign-in.js'
import { ctlFor, PASSWORD } from './run.js'
import { sessionsRevoke } from '../../src/cli/commands/sessions.js'
import type { StoreDeps } from '../../src/cli/deps.js'
import { exitCodes } from '../../src/exit-codes.js'

const client = (ip: string, userAgent: string) => ({ ip, ipKey: ip, userAgent })

t.test('sessions list and revoke, in table and JSON forms, with their error cases', async (t) => {
  // the services of a daemon on the same store, in this process: they make real sessions
  const app = await buildApp(t)
  const ctl = ctlFor(app.dir)
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  const bob = await addUser(app, 'bob@example.com', PASSWORD)
  const a1 = await signIn(app, { email: 'ann@example.com', password: PASSWORD }, client('203.0.113.7', 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0'))
  const a2 = await signIn(app, { email: 'ann@example.com', password: PASSWORD }, client('2001:db8::1', 'curl/8.5.0\u001b[31m'))
  const b1 = await signIn(app, { email: 'bob@example.com', password: PASSWORD }, client('198.51.100.2', 'bob-agent'))

  const table = await ctl(['sessions', 'list'])
  t.equal(table.code, 0, table.stderr)
  const rows = table.stdout.trimEnd().split('\n')
  t.match(rows[0], /^SESSION +USER +CREATED +LAST USED +EXPIRES +IP +USER AGENT$/)
  t.equal(rows.length, 4)
  const row = rows.find((r) => r.startsWith(a2.sessionId))!
  t.match(row, /^\S+ +ann@example\.com +\S+Z +\S+Z +\S+Z +2001:db8::1 +curl\/8\.5\.0\\x1b\[31m$/, 'control characters are shown escaped')
  t.match(table.stdout, /203\.0\.113\.7 +Mozilla\/5\.0 \(X11; Linux x86_64\) Firefox…\n/, 'long user agents are cut in the table')

  const json = await ctl(['sessions', 'list', '--user', 'ANN@example.com', '--json'])
  const sessions = json.json().sessions
  t.same(sessions.map((s: { id: string }) => s.id).sort(), [a1.sessionId, a2.sessionId].sort())
  t.same(Object.keys(sessions[0]).sort(), ['absoluteExpiresAt', 'createdAt', 'email', 'expiresAt', 'id', 'ip', 'lastUsedAt', 'userAgent', 'userId'])
  t.match(sessions.find((s: { id: string }) => s.id === a2.sessionId), { userId: ann.id, email: 'ann@example.com', ip: '2001:db8::1', userAgent: 'curl/8.5.0\u001b[31m' })
  t.equal(sessions.find((s: { id: string }) => s.id === a1.sessionId).userAgent, 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0', 'but whole in JSON')
  t.notMatch(json.stdout, /refreshHash|previousHash/, 'no token material')

  const unknownUser = await ctl(['sessions', 'list', '--user', 'ghost@example.com'])
  t.equal(unknownUser.code, 1)
  t.equal(unknownUser.stderr, 'authctl: No user with email or id "ghost@example.com".\n')

  // one session: its refresh token and its access tokens stop working
  const one = await ctl(['sessions', 'revoke', a1.sessionId])
  t.equal(one.code, 0, one.stderr)
  t.equal(one.stdout, `Revoked session ${a1.sessionId} of ann@example.com.\n`)
  await t.rejects(app.auth.me(`Bearer ${a1.accessToken}`), { code: 'INVALID_ACCESS_TOKEN' })
  await t.rejects(app.auth.refresh(a1.refreshToken, client('203.0.113.7', 'x')), { code: 'INVALID_REFRESH_TOKEN' })
  t.same((await app.auth.me(`Bearer ${a2.accessToken}`)).user, { id: ann.id, email: 'ann@example.com', mfaEnabled: false }, 'the other session lives')

  const again = await ctl(['sessions', 'revoke', a1.sessionId])
  t.equal(again.code, 1)
  t.equal(again.stderr, `authctl: No session with id "${a1.sessionId}".\n`)

  for (const [args, why] of [
    [['sessions', 'revoke'], 'nothing named'],
    [['sessions', 'revoke', a2.sessionId, '--user', 'ann@example.com'], 'two things named'],
    [['sessions', 'revoke', '--user', 'ann@example.com', '--all', '--yes'], 'two things named'],
  ] as const) {
    const r = await ctl([...args])
    t.equal(r.code, 2, why)
    t.equal(r.stderr, 'authctl: Name what to revoke, exactly one of: a session id, --user <email|id>, or --all --yes.\n')
  }

  const byUser = await ctl(['sessions', 'revoke', '--user', ann.id, '--json'])
  t.match(byUser.json(), { revoked: 1, user: { id: ann.id, email: 'ann@example.com', sessions: 0 } })
  await t.rejects(app.auth.me(`Bearer ${a2.accessToken}`), { code: 'INVALID_ACCESS_TOKEN' })

  const unconfirmed = await ctl(['sessions', 'revoke', '--all'])
  t.equal(unconfirmed.code, 2)
  t.equal(unconfirmed.stderr, 'authctl: Revoking every session of every user needs --yes (authctl sessions revoke --all --yes).\n')
  t.same((await app.auth.me(`Bearer ${b1.accessToken}`)).user, { id: bob.id, email: 'bob@example.com', mfaEnabled: false }, 'nothing was revoked')
  // --yes is required even where a terminal could have been asked (README, "Administer with authctl": `--all --yes`)
  let asked = false
  const confirmingTerminal = async (): Promise<void> => {
    asked = true
  }
  const terminalDeps = { confirm: confirmingTerminal } as unknown as StoreDeps
  await t.rejects(sessionsRevoke(terminalDeps, { all: true, yes: false }), { name: 'AppError', code: 'REVOKE_ALL_NEEDS_YES' })
  t.equal(exitCodes.REVOKE_ALL_NEEDS_YES, 2, 'a usage error')
  t.notOk(asked, 'not asked: refused before any question')
  t.same((await app.auth.me(`Bearer ${b1.accessToken}`)).user, { id: bob.id, email: 'bob@example.com', mfaEnabled: false }, 'still nothing was revoked')

  const all = await ctl(['sessions', 'revoke', '--all', '--yes'])
  t.equal(all.code, 0)
  t.equal(all.stdout, 'Revoked 1 session.\n')
  await t.rejects(app.auth.me(`Bearer ${b1.accessToken}`), { code: 'INVALID_ACCESS_TOKEN' })
  t.equal((await ctl(['sessions', 'list'])).stdout, 'No live sessions.\n')
})
