/**
 * Start-up cost: authctl commands load only what they use. Ink and React (~300 ms) load only for
 * `authctl tui`; the store's client (LMDB, or pg on PostgreSQL), argon2 and undici only inside the
 * commands that need them.
 */
import t, { type Test } from 'tap'
import { readFileSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { ON_PG } from '../helpers/app.js'
import { runCtl } from './run.js'

const TRACE = fileURLToPath(new URL('./fixtures/trace-imports.mjs', import.meta.url))

/** the module that reads the common-password list (from the package's file, not as a module) */
const POLICY = '/dist/core/password-policy.js'

async function modulesOf(t: Test, args: string[], input = ''): Promise<{ code: number | null; packages: Set<string>; readsPolicy: boolean }> {
  // the trace's log beside the test's directory, not in it: that may be the data directory
  const dir = t.testdir()
  const log = `${dir}.imports.log`
  t.teardown(() => rmSync(log, { force: true }))
  const r = await runCtl(args, { cwd: dir, input, nodeArgs: ['--import', TRACE], env: { AUTHCTL_IMPORT_LOG: log } })
  const urls = readFileSync(log, 'utf8').trim().split('\n')
  const packages = new Set(urls.map((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1]).filter((p): p is string => p !== undefined))
  t.ok(urls.some((u) => u.endsWith('/dist/cli/main.js')), 'the trace saw authctl load')
  return { code: r.code, packages, readsPolicy: urls.some((u) => u.endsWith(POLICY)) }
}

const HEAVY = ['ink', 'react', '@inkjs/ui', 'lmdb', 'pg', 'argon2', 'undici', 'jsonwebtoken', 'pino', '@zxcvbn-ts/language-common']

t.test('authctl --help loads commander and nothing heavy', async (t) => {
  const { code, packages, readsPolicy } = await modulesOf(t, ['--help'])
  t.equal(code, 0)
  t.ok(packages.has('commander'))
  for (const p of HEAVY) t.notOk(packages.has(p), `--help does not load ${p}`)
  t.notOk(readsPolicy, '--help does not read the common-password list')
})

t.test('authctl version loads commander and nothing heavy', async (t) => {
  const { code, packages, readsPolicy } = await modulesOf(t, ['version'])
  t.equal(code, 0)
  for (const p of HEAVY) t.notOk(packages.has(p), `version does not load ${p}`)
  t.notOk(readsPolicy, 'version does not read the common-password list')
})

t.test(`user list loads ${ON_PG ? 'pg' : 'LMDB'} (the store's client, not the other's) but not argon2, undici or Ink`, async (t) => {
  const dir = t.testdir()
  const { code, packages, readsPolicy } = await modulesOf(t, ['user', 'list', '--data', dir])
  t.equal(code, 0)
  const [used, other] = ON_PG ? ['pg', 'lmdb'] : ['lmdb', 'pg']
  t.ok(packages.has(used), `loads ${used}`)
  t.notOk(packages.has(other), `does not load ${other}`)
  for (const p of ['ink', 'react', 'argon2', 'undici', 'jsonwebtoken', '@zxcvbn-ts/language-common']) t.notOk(packages.has(p), `user list does not load ${p}`)
  t.notOk(readsPolicy, 'user list does not read the common-password list')
})

t.test('user add loads argon2 and the common-password list, not undici or Ink', async (t) => {
  const dir = t.testdir()
  const { code, packages, readsPolicy } = await modulesOf(t, ['user', 'add', 'ann@example.com', '--password-stdin', '--data', dir], 'correct horse battery\n')
  t.equal(code, 0)
  t.ok(packages.has('argon2'))
  t.ok(readsPolicy, 'reads the common-password list (refusing one: test/cli/user.test.ts)')
  // the list is decoded from the package's file, not through its module and its decoder
  t.notOk(packages.has('@zxcvbn-ts/language-common'), 'without loading the package as a module')
  for (const p of ['ink', 'react', 'undici', 'jsonwebtoken']) t.notOk(packages.has(p), `user add does not load ${p}`)
})

t.test('smoke loads undici, not LMDB, argon2 or Ink', async (t) => {
  // nothing listens on port 9 of the loopback: the login step fails, which is enough here
  const { code, packages } = await modulesOf(t, ['smoke', '--url', 'http://127.0.0.1:9', '--email', 'a@example.com', '--password-stdin'], 'pw\n')
  t.equal(code, 1)
  t.ok(packages.has('undici'))
  for (const p of ['ink', 'react', 'lmdb', 'pg', 'argon2', 'jsonwebtoken']) t.notOk(packages.has(p), `smoke does not load ${p}`)
})
