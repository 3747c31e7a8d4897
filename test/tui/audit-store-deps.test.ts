/**
 * The terminal UI on a real store (temp LMDB, real argon2): its admin operations record the same
 * admin.* events as authctl's commands, and the Audit view's read answers its filter (an event
 * name, a user's email or id, or text among the latest events).
 */
import t from 'tap'
import { createAdmin } from '../../src/core/admin.js'
import { createStoreTuiDeps, storeLabel } from '../../src/tui/store-deps.js'
import { secretsIn } from '../helpers/audit.js'
import { addUser, buildApp, type TestApp } from '../helpers/app.js'
import { signIn } from '../helpers/sign-in.js'

const PASSWORD = 'correct horse battery'
const client = { ip: '198.51.100.4', ipKey: '198.51.100.4', userAgent: 'tui-test/1.0' }

function tuiDeps(app: TestApp) {
  const admin = createAdmin({
    store: app.store,
    config: app.config,
    now: Date.now,
    actor: 'authctl:tui-tester',
    passwords: async () => ({ hasher: app.hasher, policy: await import('../../src/core/password-policy.js').then((m) => m.createPasswordPolicy(app.config.passwords)) }),
  })
  return createStoreTuiDeps({ admin, store: app.store, storeLabel: storeLabel(app.store), publicUrl: app.config.server.publicUrl })
}

t.test('the TUI’s operations record admin.* events; the Audit view reads them newest first, by its filter', async (t) => {
  const app = await buildApp(t)
  const ann = await addUser(app, 'ann@example.com', PASSWORD)
  await signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)
  await signIn(app, { email: 'ann@example.com', password: PASSWORD }, client)
  const deps = tuiDeps(app)
  const carol = await deps.addUser('carol@example.com', 'Tr0ub4dor&3-long')
  t.equal(await deps.setDisabled(ann.id, true), 2)
  await deps.rotateKey()

  const all = await deps.auditEvents({ filter: '', limit: 200 })
  t.same(all.map((e) => e.event), ['admin.keys.rotate', 'admin.user.disable', 'admin.user.add', 'login.success', 'login.success'])
  t.match(all[1], { actor: 'authctl:tui-tester', userId: ann.id, email: 'ann@example.com', ip: null, detail: {} })
  t.match(all[2], { actor: 'authctl:tui-tester', userId: carol.id, email: 'carol@example.com' })
  t.match(all[4], { actor: 'api', ip: '198.51.100.4', userAgent: 'tui-test/1.0', userId: ann.id })
  t.ok(all.every((e, i) => Number.isFinite(e.at) && (i === 0 || e.seq < all[i - 1]!.seq)))

  const read = async (filter: string, limit = 200) => (await deps.auditEvents({ filter, limit })).map((e) => e.event)
  t.same(await read('login.success'), ['login.success', 'login.success'], 'an event name')
  t.same(await read('ANN@example.com'), ['admin.user.disable', 'login.success', 'login.success'], 'a user by email')
  t.same(await read(carol.id), ['admin.user.add'], 'a user by id')
  t.same(await read('admin.'), ['admin.keys.rotate', 'admin.user.disable', 'admin.user.add'], 'text in an event name')
  t.same(await read('carol'), ['admin.user.add'], 'text in an email')
  t.same(await read('', 2), ['admin.keys.rotate', 'admin.user.disable'], 'the limit')
  t.same(await read('nobody'), [])
  t.same(secretsIn(await app.store.auditEvents({ limit: 100 }), [PASSWORD, 'Tr0ub4dor&3-long']), [])
})
