/**
 * The tests' TypeScript loader (test/helpers/tap-typescript): which files an import's .js name
 * stands for, the cache of transpiled files, and the warm-up that fills it before a run.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import * as hooks from './tap-typescript/hooks.mjs'

t.test('an import of x.js stands for x.ts or x.tsx: relative, absolute and file: names, a query kept', async (t) => {
  t.same(hooks.typescriptTwins('./store.js'), ['./store.ts', './store.tsx'])
  t.same(hooks.typescriptTwins('../../src/tui/app.js'), ['../../src/tui/app.ts', '../../src/tui/app.tsx'])
  t.same(hooks.typescriptTwins('/srv/src/store/open.js'), ['/srv/src/store/open.ts', '/srv/src/store/open.tsx'])
  t.same(hooks.typescriptTwins('file:///srv/src/store/open.js?tapmock=1.2'), ['file:///srv/src/store/open.ts?tapmock=1.2', 'file:///srv/src/store/open.tsx?tapmock=1.2'])
  t.same(hooks.typescriptTwins('pg'), [], 'a package has none')
  t.same(hooks.typescriptTwins('argon2/index.js'), [], 'nor a file in a package')
  t.same(hooks.typescriptTwins('./helpers/pg-server.mjs'), [], 'nor a .mjs')
  t.same(hooks.typescriptTwins('node:fs'), [])
})

t.test('a file is transpiled once, then taken from the cache; another text is another entry', async (t) => {
  const path = join(t.testdirName, 'sample.ts')
  const source = `// ${randomBytes(8).toString('hex')}\nexport const n: number = 1\nexport type N = typeof n\n`
  t.teardown(() => rmSync(hooks.cacheFile(path, source), { force: true }))
  const before = hooks.transpiledHere
  const js = hooks.transpiled(path, source)
  t.equal(hooks.transpiledHere, before + 1, 'transpiled')
  t.match(js, /^export const n = 1;$/m, 'the types are gone')
  t.notMatch(js, /type N/)
  t.match(js, /\/\/# sourceMappingURL=data:application\/json;base64,/, 'with its source map inline')
  const map = JSON.parse(Buffer.from(js.split('base64,')[1]!, 'base64').toString()) as { sourcesContent: string[] }
  t.same(map.sourcesContent, [source], 'which carries the TypeScript text')
  t.ok(existsSync(hooks.cacheFile(path, source)), 'kept in the cache')

  t.equal(hooks.transpiled(path, source), js, 'the same JavaScript again')
  t.equal(hooks.transpiledHere, before + 1, 'from the cache: not transpiled again')

  const changed = source.replace('= 1', '= 2')
  t.teardown(() => rmSync(hooks.cacheFile(path, changed), { force: true }))
  t.match(hooks.transpiled(path, changed), /^export const n = 2;$/m, 'a changed file is not answered from the old entry')
  t.equal(hooks.transpiledHere, before + 2)
})

t.test('the warm-up has every file of the tree in the cache and removes the entries of no file', async (t) => {
  const dirs = ['src', 'test', 'bench', 'stress']
  const stale = join(hooks.CACHE_DIR, `${'0'.repeat(64)}.js`)
  hooks.warm(dirs)
  writeFileSync(stale, 'export {}\n')
  const again = hooks.warm(dirs)
  t.ok(again.files > 300, `all the .ts and .tsx files (${again.files})`)
  t.equal(again.transpiled, 0, 'all already there')
  t.notOk(existsSync(stale), 'the entry of no file removed')
})
