/**
 * Test files run in groups, several to a test process (test/helpers/file-group.ts, with the module
 * hooks in tap-typescript/files.mjs): each file's `import t from 'tap'` is its own subtest, named
 * by its path, and its tests, failures and teardowns stay inside it.
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { runNode } from './daemon.js'
import * as files from './tap-typescript/files.mjs'

const IMPORT = new URL('./tap-typescript/import.mjs', import.meta.url).href
const FILE_GROUP = new URL('./file-group.ts', import.meta.url).href

t.test("resolve: 'tap' from a file of a group is that file's subtest; anything else goes on down the chain", async (t) => {
  const next = async (specifier: string, context?: object) => ({ passedOn: specifier, context })
  t.same(await files.resolve('tap', { parentURL: 'file:///srv/test/a.test.ts?authd-test-file=3' }, next), { url: 'authd-test-file:3', format: 'module', shortCircuit: true })
  t.same(await files.resolve('tap', { parentURL: 'file:///srv/test/a.test.ts?tapmock=1.2&authd-test-file=12' }, next), { url: 'authd-test-file:12', format: 'module', shortCircuit: true }, 'among other parameters')
  t.same(await files.resolve('tap', { parentURL: 'file:///srv/test/a.test.ts' }, next), { passedOn: 'tap', context: { parentURL: 'file:///srv/test/a.test.ts' } }, 'a file run alone has the root test')
  t.same(await files.resolve('tap', {}, next), { passedOn: 'tap', context: {} }, 'so has the entry point')
  const parentURL = 'file:///srv/test/a.test.ts?authd-test-file=3'
  t.same(await files.resolve('./helpers/app.js', { parentURL }, next), { passedOn: './helpers/app.js', context: { parentURL } }, "the file's other imports are the process's")
})

t.test("load: a file's 'tap' is a module whose default export is the group's subtest numbered so", async (t) => {
  const next = async (url: string) => ({ passedOn: url })
  const tap = (await files.load('authd-test-file:3', {}, next)) as { format: string; source: string; shortCircuit: boolean }
  t.match(tap, { format: 'module', shortCircuit: true })
  t.equal(tap.source, `export default globalThis[Symbol.for('authd.test-file')]("3")\n`)
  t.same(await files.load('file:///srv/test/a.test.ts', {}, next), { passedOn: 'file:///srv/test/a.test.ts' })
})

/** runs `group` (a file of the fixture dir) with the tests' module hooks: its exit code and its TAP */
async function run(dir: string, group: string): Promise<{ code: number | null; tap: string }> {
  const { code, stdout } = await runNode([`--import=${IMPORT}`, join(dir, group)], { cwd: dir })
  return { code, tap: stdout }
}

t.test('a group runs its files in order, each a subtest of its own: its t, its failures, its teardowns', async (t) => {
  const dir = t.testdir({
    'shared.mjs': 'export const seen = []\n',
    'a.test.mjs': [
      "import t from 'tap'",
      "import { seen } from './shared.mjs'",
      "seen.push('a')",
      "t.test('first of a', async (t) => t.pass('a runs'))",
      "t.teardown(() => console.log('# a is over'))",
      'export const name = t.name',
      '',
    ].join('\n'),
    'b.test.mjs': [
      "import t from 'tap'",
      "import { seen } from './shared.mjs'",
      "t.same(seen, ['a'], 'a module both import is one copy, as a ran it')",
      "t.test('first of b', async (t) => t.equal(1, 2, 'b fails'))",
      '',
    ].join('\n'),
    // named from the working directory, as tap lists them
    'group.mjs': `import { runFiles } from ${JSON.stringify(FILE_GROUP)}\nrunFiles(['a.test.mjs', 'b.test.mjs'])\n`,
  })
  const a = 'a\\.test\\.mjs'
  const b = 'b\\.test\\.mjs'
  const r = await run(dir, 'group.mjs')
  t.equal(r.code, 1, 'a failure in a file fails the group')
  t.match(r.tap, new RegExp(`^# Subtest: ${a}\n    # Subtest: first of a\n        ok 1 - a runs\n`, 'm'), "a's tests are inside its subtest")
  t.match(r.tap, new RegExp(`^ok 1 - ${a} `, 'm'), 'a passed')
  const over = r.tap.indexOf('\n# a is over\n')
  t.ok(over > r.tap.indexOf('ok 1 - a runs'), "a's teardown ran after its tests")
  t.ok(over < r.tap.indexOf('# Subtest: b.test.mjs'), 'and before b began')
  t.match(r.tap, /^ {4}ok 1 - a module both import is one copy, as a ran it$/m)
  t.match(r.tap, /^ {8}not ok 1 - b fails$/m, "b's failure is inside its subtest")
  t.match(r.tap, new RegExp(`^not ok 2 - ${b} `, 'm'), 'b failed')
  t.match(r.tap, /^1\.\.2$/m, 'two files, two subtests')
  t.notOk(/^(not )?ok \d+ - (a runs|b fails|first of)/m.test(r.tap), 'no test of a file reached the root')
})
