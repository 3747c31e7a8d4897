/**
 * The README's Terminal UI screens are what the UI draws: each block there (found by the view
 * its tab line marks) is compared, line by line, with the UI rendered at 80×24 on the same data
 * after the same keys. When the UI changes, `PRINT_SCREENS=1` prints what it draws now, to copy
 * into the README.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { KeyRow } from '../../src/tui/deps.js'
import { auditRow, fakeDeps, key, session, user, type FakeDeps } from './fake-deps.js'
import { KEY, mount, sleep } from './mount.js'

const ROOT = join(import.meta.dirname, '..', '..')
const MIN = 60_000
const NOW = Date.UTC(2026, 10, 21, 11, 47, 0)
const CREATED = Date.UTC(2026, 10, 21, 11, 46, 0)

/** the fenced blocks of the README's Terminal UI section, by the view their tab line marks */
function readmeScreens(): Map<string, string[]> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('\n## Terminal UI\n'))
  const body = section.slice(0, section.indexOf('\n## ', 1))
  const screens = new Map<string, string[]>()
  let block: string[] | null = null
  for (const line of body.split('\n')) {
    if (block === null) {
      if (line.startsWith('```')) block = []
    } else if (line === '```') {
      const view = /\[\d (\w+)\]/.exec(block[1] ?? '')?.[1]
      if (view !== undefined) screens.set(view, block)
      block = null
    } else {
      block.push(line)
    }
  }
  return screens
}

function store(): FakeDeps {
  const on = (email: string, sessions: number, extra = {}) => user(email, { createdAt: CREATED, sessions, ...extra })
  const admin = on('admin@example.com', 1)
  const alice = on('alice@example.com', 2, { mfaEnabled: true })
  const carol = on('carol@example.com', 1)
  const d = fakeDeps({
    users: [admin, alice, on('bob@example.com', 0), carol, on('dave@example.com', 0, { disabled: true }), on('smoke@example.com', 0)],
    sessions: [
      session('sess-admin', admin, { ip: '127.0.0.1', userAgent: 'python-requests/2.32', lastUsedAt: NOW - MIN }),
      session('sess-carol', carol, { ip: '127.0.0.1', userAgent: 'Mozilla/5.0 (Macintosh)', lastUsedAt: NOW - MIN - 1000 }),
      session('sess-alice-1', alice, { ip: '127.0.0.1', userAgent: 'curl/8.5.0', lastUsedAt: NOW - MIN - 2000 }),
      session('sess-alice-2', alice, { ip: '127.0.0.1', userAgent: 'Mozilla/5.0 (X11; Linux)', lastUsedAt: NOW - MIN - 3000 }),
    ].map((s) => ({ ...s, expiresAt: s.lastUsedAt + 7 * 1440 * MIN })),
    keys: [
      key('6arLkkyZw4HrK5c1', { createdAt: CREATED, activatedAt: CREATED }),
      key('hbYtvDvu7YqncR8R', { state: 'retiring', createdAt: CREATED - 1000, activatedAt: CREATED - 1000, retiringAt: CREATED }),
    ],
  })
  d.storeLabel = 'LMDB /tmp/authd/data'
  d.now = () => NOW
  return d
}

const SCENES: Record<string, (t: Test) => Promise<string>> = {
  async Users(t) {
    const ui = mount(t, store())
    return ui.waitFor(/^ {2}6 users$/m)
  },
  async Sessions(t) {
    const ui = mount(t, store())
    await ui.waitFor('alice@example.com')
    await ui.press('2')
    return ui.waitFor(/^ {2}4 sessions$/m)
  },
  async Keys(t) {
    const deps = store()
    // r: the new key is next, signing tokens.key_lead (5m) later
    const next: KeyRow = key('Qm3tN8vXc2LpR7sW', { state: 'next', createdAt: NOW, activatedAt: NOW + 5 * MIN })
    deps.rotateKey = async () => {
      deps.keys.push(next)
      return next
    }
    const ui = mount(t, deps)
    await ui.waitFor('alice@example.com')
    await ui.press('3', 'r')
    await ui.waitFor('Rotated: key')
    return ui.waitFor(/^ {2}3 keys$/m)
  },
  async Smoke(t) {
    const deps = store()
    const step = (name: string, httpStatus: number, ms: number) => ({ name, status: 'pass' as const, httpStatus, ms })
    deps.smokePlan = [step('login', 200, 262), step('me', 200, 189), step('refresh', 200, 28), step('me_refreshed', 200, 35), step('logout', 200, 86), step('refresh_after_logout', 401, 139)]
    const ui = mount(t, deps)
    await ui.waitFor('alice@example.com')
    await ui.press('4', KEY.enter, 'smoke@example.com', KEY.enter, 'correct-horse-battery', KEY.enter)
    return ui.waitFor('PASS: 6 of 6 steps passed in 739 ms')
  },
  async Audit(t) {
    const on = (email: string) => user(email, { createdAt: CREATED })
    const [alice, bob, carol] = [on('alice@example.com'), on('bob@example.com'), on('carol@example.com')]
    const deps = fakeDeps({ users: [alice, bob, carol] })
    deps.storeLabel = 'LMDB /tmp/authd/data'
    const events: Array<[string, typeof alice | null]> = [
      ['register', carol],
      ['login.success', carol],
      ['login.success', alice],
      ['login.failure', bob],
      ['login.failure', bob],
      ['rate_limit.block', bob],
      ['admin.user.disable', bob],
      ['admin.keys.rotate', null],
      ['logout', alice],
    ]
    events.forEach(([event, u], i) => deps.audit.push(auditRow(event, u, { seq: i + 1, at: Date.UTC(2025, 2, 4, 9, 4, i + 1) })))
    const ui = mount(t, deps)
    await ui.waitFor('alice@example.com')
    await ui.press('5')
    return ui.waitFor(/^ {2}9 events$/m)
  },
}

const screens = readmeScreens()

t.test('the README shows one screen of each view', async (t) => {
  t.same([...screens.keys()].sort(), Object.keys(SCENES).sort())
})

for (const [view, scene] of Object.entries(SCENES)) {
  t.test(`the README's ${view} screen is what the UI draws`, async (t) => {
    const frame = await scene(t)
    // a spinner or a read could still be settling: take the frame once it is still
    await sleep(100)
    const drawn = frame.split('\n').map((l) => l.trimEnd())
    if (process.env.PRINT_SCREENS) console.error(`=== ${view}\n${drawn.join('\n')}\n===`)
    t.same(screens.get(view), drawn, `README.md, Terminal UI, the ${view} screen`)
  })
}
