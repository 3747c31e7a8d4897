/**
 * authctl on a store it cannot use as asked: `backup` of a PostgreSQL store exits 2 with a
 * sentence naming pg_dump and authctl export (and writes nothing); a store whose database does
 * not answer gives one sentence and exit 1, never a stack. The store is a real LMDB one, dressed
 * as the other backend or made to reject as an unreachable database does (store/open.ts mocked).
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { main } from '../../src/cli/main.js'
import type { OpenedStore } from '../../src/store/open.js'
import type { Store } from '../../src/store/store.js'
import { switchable } from '../helpers/unavailable-store.js'

/** authctl's main, in process, with openStore answering `open()` */
async function authctl(t: Test, open: () => Promise<OpenedStore>) {
  // main imports deps.js when a command runs, and deps.js imports store/open.js: each mocked in turn
  const deps = await t.mockImport<typeof import('../../src/cli/deps.js')>('../../src/cli/deps.js', { '../../src/store/open.js': { openStore: open } })
  const { main } = await t.mockImport<typeof import('../../src/cli/main.js')>('../../src/cli/main.js', { '../../src/cli/deps.js': deps })
  return async (argv: string[], cwd: string) => {
    let stdout = ''
    let stderr = ''
    const code = await main({ argv, env: {}, cwd, stdout: (s) => void (stdout += s), stderr: (s) => void (stderr += s) })
    return { code, stdout, stderr }
  }
}

t.test('backup of a PostgreSQL store exits 2 with a sentence naming pg_dump and authctl export', async (t) => {
  const dir = t.testdir()
  const real = await openLmdbStore({ path: dir })
  const pg: Store = Object.create(real, { backend: { value: 'postgres' }, location: { value: 'postgres://authd:***@db/authd' } }) as Store
  t.teardown(() => real.close())
  const ctl = await authctl(t, async () => ({ store: pg, limiter: null }))
  const file = join(dir, 'copy.mdb')
  const r = await ctl(['backup', file, '--data', dir], dir)
  t.equal(r.code, 2)
  t.equal(r.stdout, '')
  t.match(r.stderr, /^authctl: [^\n]*pg_dump[^\n]*authctl export[^\n]*\.\n$/)
  t.notOk(existsSync(file), 'nothing written')
})

t.test('backup with a PostgreSQL config exits 2 from the config alone, its database down or not', async (t) => {
  const dir = t.testdir()
  let stdout = ''
  let stderr = ''
  // nothing listens on port 1 of the loopback: the store would not open
  const env = { AUTHD_STORE_BACKEND: 'postgres', AUTHD_STORE_URL: 'postgres://authd@127.0.0.1:1/authd' }
  const file = join(dir, 'copy.mdb')
  const code = await main({ argv: ['backup', file], env, cwd: dir, stdout: (x: string) => void (stdout += x), stderr: (x: string) => void (stderr += x) })
  t.equal(code, 2)
  t.equal(stdout, '')
  t.match(stderr, /^authctl: [^\n]*pg_dump[^\n]*authctl export[^\n]*\.\n$/)
  t.notOk(existsSync(file), 'nothing written')
})

t.test('an unexpected failure: one line with the --debug hint, and the stack only with --debug', async (t) => {
  const dir = t.testdir()
  const ctl = await authctl(t, async () => {
    throw new TypeError('something no rule covers')
  })
  const plain = await ctl(['user', 'list', '--data', dir], dir)
  t.equal(plain.code, 1)
  t.equal(plain.stderr, 'authctl: Something no rule covers. (run with --debug for details)\n')
  const debug = await ctl(['user', 'list', '--data', dir, '--debug'], dir)
  t.equal(debug.code, 1)
  t.match(debug.stderr, /^authctl: Something no rule covers\.\nTypeError: something no rule covers\n +at /, 'the stack follows the sentence')
})

t.test('a store that does not answer: one sentence, exit 1', async (t) => {
  const dir = t.testdir()
  const real = await openLmdbStore({ path: dir })
  t.teardown(() => real.close())
  const s = switchable(real)
  s.down = true
  const ctl = await authctl(t, async () => ({ store: s.store, limiter: null }))
  for (const argv of [['user', 'list'], ['sessions', 'list'], ['keys', 'list'], ['user', 'show', 'ann@example.com', '--json']]) {
    const r = await ctl([...argv, '--data', dir], dir)
    t.equal(r.code, 1, argv.join(' '))
    t.equal(r.stdout, '', 'nothing on stdout')
    t.equal(r.stderr, 'authctl: The database does not answer.\n', 'one sentence, no stack, no --debug hint')
  }
})
