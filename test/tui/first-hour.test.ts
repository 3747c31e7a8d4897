/**
 * What a new user met in the terminal UI, each a regression: the Smoke view's Enter and e, the
 * cursor, the selection after a rotation, status lines that outlived their view, a terminal too
 * small, and the wording of counts.
 */
import t from 'tap'
import { CURSOR } from '../../src/tui/parts.js'
import { fakeDeps, key, session, T0, user } from './fake-deps.js'
import { KEY, mount, sleep } from './mount.js'

const alice = user('alice@example.com')
const bob = user('bob@example.com')

t.test('Smoke: Enter and e both edit the selected field; ↑↓ select another (regression: they started in different fields)', async (t) => {
  const ui = mount(t, fakeDeps({ users: [alice] }))
  await ui.waitFor('alice@example.com')
  await ui.press('4')
  let f = await ui.waitFor(/^> Email\s*$/m)
  t.match(f, /^ {2}URL\s+http:\/\/127\.0\.0\.1:8080$/m, 'the first empty field is selected, not yet edited')
  await ui.press(KEY.up)
  await ui.waitFor(/^> URL\s+http:\/\/127\.0\.0\.1:8080$/m)
  await ui.press('e')
  f = await ui.waitFor(`> URL       http://127.0.0.1:8080${CURSOR}`)
  await ui.press(KEY.esc, KEY.down, KEY.down)
  await ui.waitFor(/^> Password\s*$/m)
  await ui.press(KEY.enter)
  await ui.waitFor(`> Password  ${CURSOR}`)
  await ui.press(KEY.esc, 'k')
  await ui.waitFor(/^> Email\s*$/m)
  for (const start of ['e', KEY.enter]) {
    await ui.press(start)
    f = await ui.waitFor(`> Email     ${CURSOR}`)
    t.notMatch(f, `URL       http://127.0.0.1:8080${CURSOR}`)
    await ui.press(KEY.esc)
    await ui.waitFor(/^> Email\s*$/m)
  }
})

t.test('a form shows a cursor where typing goes (regression: no visible cursor)', async (t) => {
  const ui = mount(t, fakeDeps({ users: [alice] }))
  await ui.waitFor('alice@example.com')
  await ui.press('a')
  await ui.waitFor(`> Email     ${CURSOR}`)
  await ui.press('bo')
  await ui.waitFor(`> Email     bo${CURSOR}`)
  await ui.press(KEY.enter, 'pw')
  const f = await ui.waitFor(`> Password  **${CURSOR}`)
  t.match(f, /^ {2}Email {5}bo$/m, 'one cursor: none in the field left')
  await ui.press(KEY.esc, '/', 'al')
  await ui.waitFor(`Filter: al${CURSOR}`)
})

t.test('Keys: after r the new key stays selected, even when a read begun before the rotation answers after it (regression: the selection went back to the key it replaces)', async (t) => {
  const deps = fakeDeps({ users: [alice], keys: [key('kid-active-0001'), key('kid-old-00000001', { state: 'retiring', createdAt: T0 - 9 * 86400_000 })] })
  // reads back to back, each answering 100 ms after it has read: one is in flight when r is pressed
  deps.snapshotDelayMs = 100
  const ui = mount(t, deps)
  await ui.press('3')
  await ui.waitFor(/> kid-active-0001\s+ES256\s+active/)
  await ui.press('r')
  let f = await ui.waitFor('Rotated: key kid-new-0002 (ES256) is in the JWKS and signs from 2025-03-04 09:10 UTC.')
  // the reads in flight and the one after
  await sleep(350)
  f = await ui.waitFor(/^ {2}3 keys$/m)
  t.match(f, /^> kid-new-0002\s+ES256\s+next\s+2025-03-04 09:05\s+2025-03-04 09:10$/m, 'the new key, next, and when it starts signing')
  t.match(f, /^ {2}kid-active-0001\s+ES256\s+active/m)
})

t.test('a status line belongs to the view that made it (regression: it stayed on every view)', async (t) => {
  const deps = fakeDeps({ users: [alice, bob] })
  const ui = mount(t, deps)
  await ui.waitFor('alice@example.com')
  await ui.press('x', 'n')
  await ui.waitFor('Cancelled.')
  await ui.press('3')
  await ui.waitFor('[3 Keys]')
  t.notMatch(ui.frame(), 'Cancelled.', 'switching views clears it')
  await ui.press('1')
  await ui.waitFor('[1 Users]')
  t.notMatch(ui.frame(), 'Cancelled.', 'and it does not come back')

  // an operation that ends after its view was left: its outcome waits for that view
  deps.snapshotDelayMs = 0
  const slow = deps.rotateKey
  let release = (): void => {}
  deps.rotateKey = async () => {
    await new Promise<void>((r) => (release = r))
    return slow()
  }
  await ui.press('3', 'r')
  await ui.waitFor('Rotating the signing key…')
  await ui.press('1')
  await ui.waitFor('[1 Users]')
  release()
  await ui.waitFor('Rotating the signing key…', true)
  await sleep(100)
  t.notMatch(ui.frame(), 'Rotated', 'not on the Users view')
  await ui.press('3')
  await ui.waitFor('Rotated: key kid-new-0001')
})

t.test('a terminal under 80×24 shows one line saying so, and the UI again when resized (regression: the layout broke silently)', async (t) => {
  const deps = fakeDeps({ users: [alice] })
  const ui = mount(t, deps, { columns: 60, rows: 24 })
  let f = await ui.waitFor('authctl tui needs 80×24 (this terminal is 60×24)')
  t.equal(f.split('\n').length, 1, 'one line')
  t.notMatch(f, 'alice@example.com')
  // keys typed blind do nothing but quit
  await ui.press('x', 'y', 'a')
  t.same(deps.calls, [])
  ui.resize(100, 20)
  await ui.waitFor('authctl tui needs 80×24 (this terminal is 100×20)')
  ui.resize(80, 24)
  f = await ui.waitFor('alice@example.com')
  t.match(f, /\[1 Users\]/)
  t.ok(f.split('\n').every((l) => [...l].length <= 80))
  ui.resize(79, 40)
  await ui.waitFor('authctl tui needs 80×24 (this terminal is 79×40)')
})

t.test('counts read as words: "1 user", "its session", a range only when the list pages (regression: "(1-1 of 1 users)", "Its 1 session end now")', async (t) => {
  const carol = user('carol@example.com', { sessions: 1 })
  const many = Array.from({ length: 40 }, (_, i) => user(`u${String(i).padStart(2, '0')}@example.com`))
  const deps = fakeDeps({ users: [carol, ...many], sessions: [session('sess-carol-1', carol)] })
  const ui = mount(t, deps)
  let f = await ui.waitFor('carol@example.com')
  t.match(f, /^ {2}1-14 of 41 users$/m, 'a page of a longer list: the range')
  await ui.press('d')
  await ui.waitFor('Confirm (y/N): Disable carol@example.com? Its session ends now.')
  await ui.press('n', 'x')
  await ui.waitFor('Confirm (y/N): Delete carol@example.com and its session? This cannot be undone.')
  await ui.press('n', '/', 'carol')
  f = await ui.waitFor(`Filter: carol${CURSOR}  (1 user)`)
  await ui.press(KEY.enter)
  await ui.waitFor(/^ {2}1 user matching "carol"$/m)
  await ui.press('2')
  await ui.waitFor(/^ {2}1 session$/m)
  await ui.press('X')
  await ui.waitFor('Confirm (y/N): Revoke the only session of carol@example.com?')
  await ui.press('y')
  await ui.waitFor('Revoked 1 session of carol@example.com.')
  await ui.press('3')
  await ui.waitFor(/^ {2}1 key$/m)
})
