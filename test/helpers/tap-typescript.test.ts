/**
 * The tests' TypeScript loader (test/helpers/tap-typescript): which files an import's .js name
 * stands for, the cache of transpiled files, and the warm-up that fills it before a run.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
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

t.test('a syntax error fails the file, saying where, and is not kept: no running the compiler’s repair of it', async (t) => {
  const path = join(t.testdirName, 'broken.ts')
  const source = `// ${randomBytes(8).toString('hex')}\nexport const n = f(1,\nexport const m = 2\n`
  const before = hooks.transpiledHere
  t.throws(() => hooks.transpiled(path, source), { name: 'SyntaxError', message: new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3:1: .*\\(TS\\d+\\)$`) })
  t.equal(hooks.transpiledHere, before)
  t.notOk(existsSync(hooks.cacheFile(path, source)))
})

t.test('resolve: x.js that exists is x.js; a missing one is its .ts or .tsx twin; other failures pass through', async (t) => {
  const notFound = (): never => {
    throw Object.assign(new Error('not found'), { code: 'ERR_MODULE_NOT_FOUND' })
  }
  const tried: string[] = []
  const onDisk = new Set(['./there.js', './view.tsx', './store.ts?tapmock=1'])
  const next = async (specifier: string) => {
    tried.push(specifier)
    return onDisk.has(specifier) ? { url: specifier } : notFound()
  }
  t.same(await hooks.resolve('./there.js', {}, next), { url: './there.js' })
  t.same(await hooks.resolve('./view.js', {}, next), { url: './view.tsx' })
  t.same(await hooks.resolve('./store.js?tapmock=1', {}, next), { url: './store.ts?tapmock=1' })
  await t.rejects(hooks.resolve('./gone.js', {}, next), { message: 'not found' }, 'the original error when neither twin is there')
  tried.length = 0
  const denied = async (specifier: string) => {
    tried.push(specifier)
    throw Object.assign(new Error('denied'), { code: 'ERR_ACCESS_DENIED' })
  }
  await t.rejects(hooks.resolve('./there.js', {}, denied), { code: 'ERR_ACCESS_DENIED' }, 'another error passes through')
  t.same(tried, ['./there.js'], 'without trying a twin')
})

t.test('load: a .ts file is an ES module of its JavaScript; anything else goes on down the chain', async (t) => {
  const sample = `export const k: string = '${randomBytes(4).toString('hex')}'\n`
  const dir = t.testdir({ 'sample.ts': sample, 'plain.js': 'export {}\n' })
  t.teardown(() => rmSync(hooks.cacheFile(join(dir, 'sample.ts'), sample), { force: true }))
  const next = async (url: string) => ({ format: 'passed-on', url })
  const ts = await hooks.load(pathToFileURL(join(dir, 'sample.ts')).href, {}, next)
  t.match(ts, { format: 'module', shortCircuit: true, source: /^export const k = '[0-9a-f]{8}';$/m })
  t.same(await hooks.load(pathToFileURL(join(dir, 'plain.js')).href, {}, next), { format: 'passed-on', url: pathToFileURL(join(dir, 'plain.js')).href })
  t.same(await hooks.load('node:fs', {}, next), { format: 'passed-on', url: 'node:fs' })
})

t.test('the warm-up has every file of the tree in the cache and removes the entries of no file', async (t) => {
  const stale = join(hooks.CACHE_DIR, `${'0'.repeat(64)}.js`)
  hooks.warm()
  writeFileSync(stale, 'export {}\n')
  const again = hooks.warm()
  t.ok(again.files > 300, `all the .ts and .tsx files (${again.files})`)
  t.equal(again.transpiled, 0, 'all already there')
  t.notOk(existsSync(stale), 'the entry of no file removed')
})
