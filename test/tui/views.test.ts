/**
 * The terminal UI rendered by Ink (ink-testing-library): what each view shows, the keys that
 * drive it, its confirmations, and that failures of the store or network stay on screen.
 */
import t from 'tap'
import { fakeDeps, key, session, T0, user, type FakeDeps } from './fake-deps.js'
import { flat, KEY, mount, sleep } from './mount.js'
import { VIEW_KEY_LABELS } from '../../src/tui/keymap.js'

const alice = user('alice@example.com', { mfaEnabled: true })
const bob = user('bob@example.com', { disabled: true })

function seeded(): FakeDeps {
  return fakeDeps({
    users: [alice, bob],
    sessions: [
      session('sess-alice-1', alice),
      session('sess-alice-2', alice, { ip: '2001:db8::7', userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0', lastUsedAt: T0 - 3 * 3600_000 }),
    ],
    keys: [key('kid-active-000001'), key('kid-retiring-0001', { state: 'retiring', createdAt: T0 - 9 * 86400_000, retiringAt: T0 - 86400_000 })],
  })
}

t.test('Users: header with the data dir and counts, rows with status in words, footer with the keys', async (t) => {
  const ui = mount(t, seeded())
  const f = await ui.waitFor('alice@example.com')
  const lines = f.split('\n')
  t.ok(lines.length <= 23, `fits 24 rows (${lines.length} lines)`)
  t.ok(lines.every((l) => [...l].length <= 80), 'fits 80 columns')
  t.match(lines[0], /authd · LMDB \/var\/lib\/authd\s+2 users · 2 sessions · 2 keys/)
  t.match(lines[1], /\[1 Users\]/, 'the current view is marked by brackets, not only a colour')
  t.match(f, /EMAIL\s+STATUS\s+2FA\s+CREATED \(UTC\)\s+SESSIONS/)
  t.match(f, /> alice@example\.com\s+active\s+on\s+2025-03-04 09:05\s+2/)
  t.match(f, /  bob@example\.com\s+disabled\s+off\s+2025-03-04 09:05\s+0/)
  t.match(f, /^ {2}2 users$/m)
  t.match(f, /a add\s+d disable\/enable\s+p password\s+x delete\s+s sessions\s+m 2FA off/)
  t.match(f, /\? help\s+q quit/)
})

t.test('Users: / filters as one types, Esc clears', async (t) => {
  const ui = mount(t, seeded())
  await ui.waitFor('alice@example.com')
  await ui.press('/', 'b', 'o')
  let f = await ui.waitFor('Filter: bo')
  t.notMatch(f, 'alice@example.com')
  t.match(f, /> bob@example\.com/)
  t.match(f, /\(1 user\)/)
  await ui.press(KEY.enter)
  f = await ui.waitFor('matching "bo"')
  await ui.press('/', KEY.esc)
  f = await ui.waitFor('alice@example.com')
  t.match(f, /^ {2}2 users$/m)
})

t.test('Users: a adds a user; passwords are hidden; a policy error shows in the form; then it is in the list', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('a')
  await ui.waitFor('Add user')
  await ui.press('carol@example.com', KEY.enter, 'password', KEY.enter, 'password')
  let f = await ui.waitFor(/Repeat\s+\*{8}/)
  t.notMatch(f, 'password\n', 'the password itself is never on screen')
  t.match(f, /Password\s+\*{8}/)
  deps.failNext.set('addUser', 'Password is too common')
  await ui.press(KEY.enter)
  f = await ui.waitFor('Error: Password is too common')
  t.match(f, /> Password\s/, 'the cursor is back on the password')
  t.match(f, /Email\s+carol@example\.com/, 'the email is kept')

  await ui.press('Tr0ub4dor&3x!', KEY.enter, 'Tr0ub4dor&3x!', KEY.enter)
  f = await ui.waitFor('Added carol@example.com.')
  t.match(f, /> carol@example\.com\s+active/, 'the new user is in the list, selected')
  t.match(f, /3 users/)
  t.same(deps.calls.filter((c) => c.startsWith('addUser')), ['addUser carol@example.com password', 'addUser carol@example.com Tr0ub4dor&3x!'])
})

t.test('Users: mismatched passwords are caught before anything runs', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('a', 'dan@example.com', KEY.enter, 'one-password', KEY.enter, 'other-password', KEY.enter)
  await ui.waitFor('Error: The passwords do not match.')
  t.same(deps.calls, [])
  await ui.press(KEY.esc)
  await ui.waitFor('Add user', true)
})

t.test('Users: d asks before disabling; n keeps the user; y disables and revokes', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('d')
  let f = await ui.waitFor('Confirm (y/N): Disable alice@example.com? Its 2 sessions end now.')
  t.match(f, /y yes\s+n\/Esc\/Enter no/)
  await ui.press('n')
  await ui.waitFor('Cancelled.')
  t.same(deps.calls, [])
  await ui.press('d', 'y')
  f = await ui.waitFor('Disabled alice@example.com; 2 sessions revoked.')
  f = await ui.waitFor(/> alice@example\.com\s+disabled/)
  t.same(deps.calls, ['setDisabled id-alice true'])
  await ui.press('d')
  await ui.waitFor('Enabled alice@example.com.')
  t.same(deps.calls, ['setDisabled id-alice true', 'setDisabled id-alice false'], 'enabling does not ask')
})

t.test('Users: x deletes after confirmation only', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('x')
  await ui.waitFor('Confirm (y/N): Delete alice@example.com and its 2 sessions? This cannot be undone.')
  await ui.press(KEY.enter)
  await ui.waitFor('Cancelled.')
  t.ok(ui.frame().includes('alice@example.com'))
  await ui.press('x', 'y')
  await ui.waitFor('Deleted alice@example.com.')
  const f = await ui.waitFor(/^ {2}1 user$/m)
  t.notMatch(f, /alice@example\.com\s+active/)
  t.same(deps.calls, ['removeUser id-alice'])
})

t.test('Users: m resets the second factor after confirmation only; a user without one is told so, nothing asked', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('m')
  let f = await ui.waitFor('Confirm (y/N): Reset the second factor of alice@example.com? Its recovery codes become void and the password alone signs in.')
  t.ok(f.split('\n').every((l) => [...l].length <= 80), 'the question fits 80 columns')
  t.match(f, /y yes\s+n\/Esc\/Enter no/)
  await ui.press(KEY.esc)
  await ui.waitFor('Cancelled.')
  t.same(deps.calls, [], 'Esc answers no')
  await ui.press('m', 'n')
  await ui.waitFor('Cancelled.')
  t.same(deps.calls, [], 'n answers no')
  await ui.press('m', 'y')
  await ui.waitFor('Reset the second factor of alice@example.com; the password alone signs in.')
  f = await ui.waitFor(/> alice@example\.com\s+active\s+off/)
  t.same(deps.calls, ['resetMfa id-alice'])

  await ui.press('m')
  await ui.waitFor('alice@example.com has no second factor to reset.')
  t.notMatch(ui.frame(), 'Confirm', 'nothing to confirm')
  t.same(deps.calls, ['resetMfa id-alice'], 'and nothing run')
})

t.test('Users: p sets a password (typed twice, hidden)', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('p')
  await ui.waitFor('New password for alice@example.com')
  await ui.press('n3w-secret-pw', KEY.enter, 'n3w-secret-pw')
  t.notMatch(ui.frame(), 'n3w-secret-pw')
  await ui.press(KEY.enter)
  await ui.waitFor('Password of alice@example.com set; 2 sessions revoked.')
  t.same(deps.calls, ['setPassword id-alice n3w-secret-pw'])
})

t.test('Users: Enter opens the details', async (t) => {
  const ui = mount(t, seeded())
  await ui.waitFor('alice@example.com')
  await ui.press(KEY.enter)
  const f = await ui.waitFor('User alice@example.com')
  t.match(f, /id\s+id-alice/)
  t.match(f, /status\s+active/)
  t.match(f, /2fa\s+on/)
  t.match(f, /created\s+2025-03-04 09:05 UTC/)
  await ui.press(KEY.esc)
  await ui.waitFor(/^ {2}2 users$/m)
})

t.test('Sessions and Keys: Enter opens the full record, with every time', async (t) => {
  const ui = mount(t, seeded())
  await ui.waitFor('alice@example.com')
  await ui.press('2', 'j', KEY.enter)
  let f = await ui.waitFor('Session of alice@example.com')
  t.match(f, /session id\s+sess-alice-2/)
  t.match(f, /ip\s+2001:db8::7/)
  t.match(f, /user agent\s+Mozilla\/5\.0 \(X11; Linux x86_64\) Firefox\/128\.0/, 'the whole user agent')
  t.match(f, /last used\s+2025-03-04 06:05 UTC \(3h ago\)/)
  t.match(f, /expires\s+2025-03-11 09:05 UTC \(in 7d\)/)
  await ui.press('3', 'j', KEY.enter)
  f = await ui.waitFor('Key kid-retiring-0001')
  t.match(f, /state\s+retiring/)
  t.match(f, /created\s+2025-02-23 09:05 UTC/)
  t.match(f, /retiring\s+2025-03-03 09:05 UTC/)
  t.match(f, /retired\s+-/)
  await ui.press(KEY.enter)
  await ui.waitFor(/^ {2}2 keys$/m)
})

t.test("a client's text is shown with what a terminal would act on or hide escaped: in a row and in the full record", async (t) => {
  // a user agent is whatever the client sent: an escape sequence would clear the screen, a
  // right-to-left override turn the rest of the line around
  const ua = 'evil\u001b[2J\u202eok'
  const ui = mount(t, fakeDeps({ users: [alice], sessions: [session('sess-alice-1', alice, { userAgent: ua })], keys: [key('kid-active-000001')] }))
  await ui.waitFor('alice@example.com')
  await ui.press('2')
  let f = await ui.waitFor('[2 Sessions]')
  t.match(f, 'evil\\u001b[2J\\', 'the row (its column cuts the rest)')
  t.notMatch(f, /\u001b\[2J|\u202e/u, 'neither raw')
  await ui.press(KEY.enter)
  f = await ui.waitFor('Session of alice@example.com')
  t.match(f, /user agent\s+evil\\u001b\[2J\\u202eok/, 'the full record')
  t.notMatch(f, /\u001b\[2J|\u202e/u, 'neither raw')
})

t.test('Sessions: user, ip, user agent, last used, expiry; filter by user; revoke one or all, each confirmed', async (t) => {
  const deps = seeded()
  const carol = user('carol@example.com')
  deps.users.push(carol)
  deps.sessions.push(session('sess-carol-1', carol, { lastUsedAt: T0 - 86400_000 }))
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('2')
  let f = await ui.waitFor(/^ {2}3 sessions$/m)
  t.match(f, /USER\s+IP\s+USER AGENT\s+LAST USED\s+EXPIRES/)
  t.match(f, /> alice@example\.com\s+203\.0\.113\.7\s+curl\/8\.5\.0\s+2m ago\s+in 7d/)
  t.match(f, /alice@example\.com\s+2001:db8::7\s+Mozilla\/5\.0 \(X…\s+3h ago/, 'a long user agent is cut with …')

  await ui.press('/', 'carol', KEY.enter)
  f = await ui.waitFor(/^ {2}1 session matching "carol"$/m)
  t.notMatch(f, 'alice@example.com ')
  await ui.press('x')
  await ui.waitFor('Confirm (y/N): Revoke session sess-car… of carol@example.com (203.0.113.7)?')
  await ui.press('y')
  await ui.waitFor('Revoked a session of carol@example.com.')
  await ui.waitFor('No live sessions of a matching user.')

  await ui.press('/', KEY.esc)
  await ui.waitFor(/^ {2}2 sessions$/m)
  await ui.press('X')
  await ui.waitFor('Confirm (y/N): Revoke all 2 sessions of alice@example.com?')
  await ui.press(KEY.esc)
  await ui.waitFor('Cancelled.')
  await ui.press('X', 'y')
  await ui.waitFor('Revoked 2 sessions of alice@example.com.')
  await ui.waitFor('No live sessions: they start when users log in.')
  t.same(deps.calls, ['revokeSession sess-carol-1', 'revokeUserSessions id-alice'])
})

t.test('Users: s shows the sessions of the selected user, and of no user whose email merely contains it', async (t) => {
  const deps = seeded()
  // malice@example.com contains alice@example.com
  const malice = user('malice@example.com')
  deps.users.push(malice)
  deps.sessions.push(session('sess-malice-1', malice))
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('s')
  let f = await ui.waitFor(/^ {2}2 sessions of alice@example\.com$/m)
  t.match(f, /\[2 Sessions\]/)
  t.match(f.split('\n')[0], /3 users · 3 sessions · 2 keys/, "the header counts the store's sessions, not the view's")
  t.notMatch(f, /malice@example\.com/, "not malice's session")
  // typed, the filter is a text to contain again
  await ui.press('/', KEY.backspace, 'm', KEY.enter)
  f = await ui.waitFor(/^ {2}3 sessions matching "alice@example\.com"$/m)
  t.match(f, /malice@example\.com/)
})

t.test('Keys: states and times; r rotates; revoking the active key says it is replaced first; a key is revoked after y', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('3')
  let f = await ui.waitFor(/^ {2}2 keys$/m)
  t.match(f, /KID\s+ALG\s+STATE\s+CREATED \(UTC\)\s+SINCE \/ FROM/)
  t.match(f, /> kid-active-000001\s+ES256\s+active\s+2025-03-03 09:05\s+2025-03-03 09:05/)
  t.match(f, /kid-retiring-0001\s+ES256\s+retiring\s+2025-02-23 09:05\s+2025-03-03 09:05/)

  await ui.press('x')
  f = await ui.waitFor('A new key replaces it first.')
  t.match(f, 'Revoke key kid-active-000001 (active)?')
  await ui.press('n')
  f = await ui.waitFor(/^ {2}2 keys$/m)
  t.match(f, /kid-active-000001\s+ES256\s+active/, 'n: nothing changed')

  await ui.press('r')
  f = await ui.waitFor('Rotated: key kid-new-0002 (ES256) is in the JWKS and signs from 2025-03-04 09:10 UTC.')
  f = await ui.waitFor(/^ {2}3 keys$/m)
  t.match(f, /> kid-new-0002\s+ES256\s+next\s+2025-03-04 09:05\s+2025-03-04 09:10/, 'the new key is selected, with when it starts signing')
  t.match(f, /kid-active-000001\s+ES256\s+active/, 'the old key signs until then')
  await ui.press('\r')
  f = await ui.waitFor('signs from')
  t.match(f, /signs from\s+2025-03-04 09:10 UTC/)
  await ui.press('\u001b')
  await ui.waitFor(/^ {2}3 keys$/m)

  await ui.press('G', 'x')
  await ui.waitFor('Confirm (y/N): Revoke key kid-retiring-0001 (retiring)? Tokens it signed stop verifying at once.')
  await ui.press('y')
  await ui.waitFor('Revoked key kid-retiring-0001.')
  f = await ui.waitFor(/^ {2}2 keys$/m)
  t.notMatch(f, 'kid-retiring-0001 ')
  t.same(deps.calls, ['checkRevokeKey kid-active-000001', 'rotateKey', 'checkRevokeKey kid-retiring-0001', 'revokeKey kid-retiring-0001'])
})

t.test('Smoke: the URL defaults from the config, the password is hidden, steps run live with status and ms, then a summary', async (t) => {
  const deps = seeded()
  deps.smokePlan = [
    { name: 'login', status: 'pass', httpStatus: 200, ms: 84 },
    { name: 'me', status: 'pass', httpStatus: 200, ms: 3 },
    { name: 'refresh', status: 'pass', httpStatus: 200, ms: 5 },
    { name: 'me_refreshed', status: 'pass', httpStatus: 200, ms: 2 },
    { name: 'logout', status: 'pass', httpStatus: 200, ms: 4 },
    { name: 'refresh_after_logout', status: 'pass', httpStatus: 401, ms: 2 },
  ]
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('4')
  let f = await ui.waitFor('URL       http://127.0.0.1:8080')
  t.match(f, /·\s+1\. login\s+not run/)
  await ui.press(KEY.enter, 'alice@example.com', KEY.enter, 'hunter2-hunter2')
  f = await ui.waitFor(/Password\s+\*{15}/)
  t.notMatch(f, 'hunter2')
  await ui.press(KEY.enter)
  f = await ui.waitFor(/1\. login\s+running/)
  t.match(f, /^[^\n]*1\. login\s+running/m, 'a step in flight says so in words next to its spinner')
  f = await ui.waitFor('PASS: 6 of 6 steps passed in 100 ms')
  t.match(f, /✓\s+1\. login\s+ok\s+200\s+84 ms/)
  t.match(f, /✓\s+6\. refresh_after_logout\s+ok\s+401\s+2 ms/)
  t.same(deps.smokeInputs, [{ url: 'http://127.0.0.1:8080', email: 'alice@example.com', password: 'hunter2-hunter2' }])
})

t.test('Smoke: a failed step shows FAIL and why; later steps are skipped; the summary says FAIL', async (t) => {
  const deps = seeded()
  deps.smokePlan = [
    { name: 'login', status: 'fail', httpStatus: 401, ms: 90, detail: 'expected 200, got 401: Invalid email or password' },
    { name: 'me', status: 'skipped' },
  ]
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('4', KEY.enter, 'alice@example.com', KEY.enter, 'wrong', KEY.enter)
  const f = await ui.waitFor('FAIL: 0 of 6 steps passed')
  t.match(f, /✗\s+1\. login\s+FAIL\s+401\s+90 ms/)
  t.match(flat(f), 'Step 1 (login) failed: expected 200, got 401: Invalid email or password')
  t.match(f, /-\s+2\. me\s+skipped/)
})

t.test('Smoke: a network or URL error is shown, and the UI goes on', async (t) => {
  const deps = seeded()
  deps.failNext.set('smoke', 'The URL must be an absolute http:// or https:// URL (got "localhost").')
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('4', KEY.enter)
  // clear the URL and type a bad one
  await ui.press(KEY.up, ...Array.from({ length: 21 }, () => KEY.backspace), 'localhost', KEY.enter, 'a@b.c', KEY.enter, 'pw', KEY.enter)
  const f = await ui.waitFor('Error: The URL must be an absolute')
  t.match(f, /FAIL:/)
  await ui.press('1')
  await ui.waitFor('[1 Users]')
})

t.test('? shows the keys of the current view; Esc closes it', async (t) => {
  const ui = mount(t, seeded())
  await ui.waitFor('alice@example.com')
  await ui.press('?')
  const users = await ui.waitFor('Keys: Users')
  t.match(users, /m\s+2FA off/, 'the reset of the second factor is listed')
  t.ok(users.split('\n').length <= 23 && users.split('\n').every((l) => [...l].length <= 80), 'the help fits 80×24')
  // every row whole at the smallest size (regression: 18 rows in a body of 16, squeezed into each other)
  for (const [k, what] of [...VIEW_KEY_LABELS.users, ['Esc', 'back, cancel'], ['q Ctrl-C', 'quit']]) {
    t.match(users, new RegExp(`^ {2}${k!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} +${what!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'), `${k}: ${what}`)
  }
  await ui.press(KEY.esc, '3', '?')
  const f = await ui.waitFor('Keys: Keys')
  t.match(f, /r\s+rotate/)
  t.match(f, /x\s+revoke/)
  t.match(f, /q Ctrl-C\s+quit/)
  await ui.press(KEY.esc)
  await ui.waitFor(/^ {2}2 keys$/m)
})

t.test('a user added to the store elsewhere appears on the next read', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.waitFor('2 users')
  deps.users.push(user('zoe@example.com'))
  const f = await ui.waitFor('zoe@example.com')
  t.match(f, /3 users/)
})

t.test('a store that cannot be read is reported on screen; the UI keeps working and recovers', async (t) => {
  const deps = seeded()
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  deps.snapshotError = 'MDB_READERS_FULL: Environment maxreaders limit reached'
  let f = await ui.waitFor('Error: Cannot read the store: MDB_READERS_FULL')
  t.match(f, 'alice@example.com', 'the last rows stay')
  await ui.press('2')
  f = await ui.waitFor('[2 Sessions]')
  deps.snapshotError = null
  await ui.waitFor('Error: Cannot read the store', true)
})

t.test('an operation the store refuses shows its message, not a crash', async (t) => {
  const deps = seeded()
  deps.failNext.set('removeUser', 'No user with email or id "id-alice".')
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('x', 'y')
  await ui.waitFor('Error: No user with email or id "id-alice".')
  await ui.press('j')
  await ui.waitFor('> bob@example.com')
})

t.test('q quits: the app unmounts and stops reading the store', async (t) => {
  const deps = seeded()
  let reads = 0
  const snapshot = deps.snapshot.bind(deps)
  deps.snapshot = () => {
    reads++
    return snapshot()
  }
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('q')
  await sleep(100)
  const after = reads
  const frame = ui.frame()
  await sleep(200)
  t.equal(reads, after, 'no reads after quitting (the poll timer is gone)')
  await ui.press('2')
  t.equal(ui.frame(), frame, 'keys no longer reach it')
})

t.test('q quits at once while the store is still being read, and stops the read', async (t) => {
  const deps = seeded()
  let signal: AbortSignal | undefined
  // a read that would take a long time: it ends only when aborted
  deps.snapshot = (o) =>
    new Promise((_, reject) => {
      signal = o?.signal
      signal?.addEventListener('abort', () => reject(signal!.reason))
    })
  const ui = mount(t, deps)
  await ui.waitFor('Reading the store')
  await ui.press('q')
  await sleep(50)
  t.ok(signal?.aborted, 'the read in progress was told to stop')
  const frame = ui.frame()
  await ui.press('2')
  t.equal(ui.frame(), frame, 'keys no longer reach it')
})

t.test('the Sessions view says when it shows only the latest of more sessions, and reads by the filter', async (t) => {
  const deps = seeded()
  const filters: Array<string | undefined> = []
  const snapshot = deps.snapshot.bind(deps)
  deps.snapshot = async (o) => {
    filters.push(o?.sessionFilter)
    return { ...(await snapshot(o)), sessionsTotal: 12345 }
  }
  const ui = mount(t, deps)
  await ui.press('2')
  await ui.waitFor(/^ {2}2 sessions \(the latest of 12345\)$/m)
  await ui.press('/', 'b', 'o')
  const deadline = Date.now() + 3000
  while (!filters.includes('bo') && Date.now() < deadline) await sleep(10)
  t.ok(filters.includes('bo'), 'the read is of the sessions the filter matches')
})

t.test('Ctrl-C quits even from inside a form', async (t) => {
  const deps = seeded()
  let reads = 0
  const snapshot = deps.snapshot.bind(deps)
  deps.snapshot = () => {
    reads++
    return snapshot()
  }
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('a', KEY.ctrlC)
  await sleep(100)
  const after = reads
  await sleep(200)
  t.equal(reads, after)
})

t.test('a confirmation shows its whole question at 80×24: a long email, and the active key with the next one named', async (t) => {
  // 64 + @ + 172: a legal address that no question line could hold whole
  const long = user(`${'l'.repeat(64)}@${'d'.repeat(60)}.${'e'.repeat(60)}.${'f'.repeat(46)}.example`, { sessions: 2 })
  const deps = fakeDeps({
    users: [long],
    sessions: [session('sess-long-1', long), session('sess-long-2', long)],
    keys: [key('kid-active-000001'), key('kid-next-00000001', { state: 'next', activatedAt: T0 + 300_000 })],
  })
  const ui = mount(t, deps)
  await ui.waitFor('2 sessions · 2 keys')
  await ui.press('x')
  let f = await ui.waitFor('This cannot be undone.')
  let lines = f.split('\n')
  t.ok(lines.length <= 23 && lines.every((l) => [...l].length <= 80), `fits 80×24 (${lines.length} lines)`)
  t.match(flat(f), `Confirm (y/N): Delete ${'l'.repeat(30)}…`, 'the address: its start…')
  t.match(flat(f), /f{18}\.example and its 2 sessions\? This cannot be undone\./, '…its end, where the domain is, and the rest of the question')
  t.match(f, 'y yes  n/Esc/Enter no', 'the keys of the question')
  await ui.press('n')
  await ui.waitFor('Cancelled.')

  await ui.press('3', 'x')
  f = await ui.waitFor('kid-next-00000001.')
  lines = f.split('\n')
  t.ok(lines.length <= 23 && lines.every((l) => [...l].length <= 80), `fits 80×24 (${lines.length} lines)`)
  t.match(flat(f), 'Confirm (y/N): Revoke key kid-active-000001 (active)? Tokens it signed stop verifying at once. A new key replaces it first, and replaces the next key kid-next-00000001.')
  await ui.press('n')
  f = await ui.waitFor('Cancelled.')
  t.match(f, /\? help\s+q quit/, 'the footer has its two lines again')
})
