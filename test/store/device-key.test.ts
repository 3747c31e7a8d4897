/**
 * The device-cookie key and the limit-clear requests live in the store: one key however many
 * processes start at once, and requests written by one handle (authctl) seen by another (authd).
 */
import t from 'tap'
import { watchLimitClears } from '../../src/core/limit-clears.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { LimitClearTarget } from '../../src/store/store.js'

t.test('two handles asking for the device key at once get the same one, made once', async (t) => {
  const dir = t.testdir()
  const [a, b] = await Promise.all([openLmdbStore({ path: dir }), openLmdbStore({ path: dir })])
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  let made = 0
  const create = () => `key-${++made}`
  const keys = await Promise.all([a.ensureDeviceKey(create), b.ensureDeviceKey(create), a.ensureDeviceKey(create)])
  t.equal(new Set(keys).size, 1)
  t.equal(made, 1)
  t.equal(await b.ensureDeviceKey(create), keys[0], 'and it is kept')
})

t.test('limit-clear requests written by one handle are applied by a watcher on another, once each', async (t) => {
  const dir = t.testdir()
  const daemon = await openLmdbStore({ path: dir })
  const ctl = await openLmdbStore({ path: dir })
  t.teardown(async () => {
    await daemon.close()
    await ctl.close()
  })
  await ctl.addLimitClear({ email: 'old@example.com' }, 1)
  const applied: LimitClearTarget[] = []
  const watch = watchLimitClears({ store: daemon, apply: (target) => applied.push(target), onError: (err) => t.error(err), intervalMs: 20 })
  t.teardown(() => watch.stop())
  t.same(await ctl.addLimitClear({ email: 'ann@example.com' }, 2), 2)
  await ctl.addLimitClear({ ipKey: '203.0.113.7' }, 3)
  for (let i = 0; i < 100 && applied.length < 2; i++) await new Promise((r) => setTimeout(r, 20))
  await new Promise((r) => setTimeout(r, 100))
  t.same(applied, [{ email: 'ann@example.com' }, { ipKey: '203.0.113.7' }], 'the ones after it started, in order, once')
  t.same(await daemon.limitClearsAfter(3), [])
})

t.test('limit-clear requests written by one handle are read by another, numbered on', async (t) => {
  const dir = t.testdir()
  const daemon = await openLmdbStore({ path: dir })
  const ctl = await openLmdbStore({ path: dir })
  t.teardown(async () => {
    await daemon.close()
    await ctl.close()
  })
  t.equal(await ctl.addLimitClear({ email: 'ann@example.com' }, 1), 1)
  t.equal(await daemon.addLimitClear({ ipKey: '203.0.113.7' }, 2), 2, 'one sequence for all handles')
  await new Promise((r) => setTimeout(r, 5))
  t.same(await daemon.limitClearsAfter(0), [
    { seq: 1, target: { email: 'ann@example.com' }, at: 1 },
    { seq: 2, target: { ipKey: '203.0.113.7' }, at: 2 },
  ])
  t.same(await ctl.limitClearsAfter(1), [{ seq: 2, target: { ipKey: '203.0.113.7' }, at: 2 }])
})
