/**
 * test/suite.mjs, what `npm test` and `npm run test:slow` run: it builds and type-checks itself,
 * so its last line is always `N passed, N failed`, also when the build or the type check fails
 * (each counts as 1 failed; a failed build runs no tests); and it runs the fast part's files in
 * groups, several to a test process. Each runs here in a small project of its own: tsc on it takes
 * a second, this checkout's dist/ is left alone, and a test file may fail or crash on purpose.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ROOT } from './helpers/app.js'

const SUITE = join(ROOT, 'test', 'suite.mjs')

// run as from a shell: without the variables tap gives this test process (TAP=1 makes a tap run
// report as a child of another, without its totals)
const ENV = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^_?TAP/.test(k)))

function suite(cwd: string, args: string[]): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [SUITE, ...args], { cwd, env: ENV, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    p.stderr.on('data', (c: Buffer) => (stdout += c.toString()))
    p.on('error', reject)
    p.on('close', (code) => resolve({ code, stdout }))
  })
}

/** a project tsc can build: src/ into dist/, and a type check of everything */
const project = (source: string): { [name: string]: string | { [name: string]: string } } => ({
  'tsconfig.json': JSON.stringify({ compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', noEmit: true, types: [] }, include: ['src'] }),
  'tsconfig.build.json': JSON.stringify({ extends: './tsconfig.json', compilerOptions: { noEmit: false, outDir: 'dist' }, include: ['src'] }),
  src: { 'main.ts': source },
})
const lastLine = (text: string): string => text.trimEnd().split('\n').at(-1)!

t.test('npm test is the type check and the fast part; npm run test:slow builds, then the slow and pg parts', async (t) => {
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
  // the fast part runs from the sources and spawns nothing built: it needs no dist/
  t.equal(scripts.test, 'node test/suite.mjs typecheck fast')
  t.equal(scripts['test:slow'], 'node test/suite.mjs build slow pg')
})

t.test('a build and a type check that pass: each says ok, and the count line ends the run', async (t) => {
  const dir = t.testdir(project('export const n: number = 1\n'))
  const r = await suite(dir, ['build', 'typecheck'])
  t.equal(r.code, 0, r.stdout)
  t.match(r.stdout, /^the build: ok$/m)
  t.match(r.stdout, /^the type check: ok$/m)
  t.equal(lastLine(r.stdout), '0 passed, 0 failed')
})

t.test('a type error fails the type check: shown, counted as 1 failed, and the count line still ends the run', async (t) => {
  const dir = t.testdir(project("export const n: number = 'one'\n"))
  const r = await suite(dir, ['typecheck'])
  t.equal(r.code, 1)
  t.match(r.stdout, /^the type check failed \(tsc --noEmit -p \., exit 2\):$/m)
  t.match(r.stdout, /src\/main\.ts\(1,14\): error TS2322/, "tsc's own message")
  t.equal(lastLine(r.stdout), '0 passed, 1 failed')
})

t.test('a failed build runs no tests, and the count line still ends the run', async (t) => {
  const dir = t.testdir(project("export const n: number = 'one'\n"))
  const r = await suite(dir, ['build', 'fast'])
  t.equal(r.code, 1)
  t.match(r.stdout, /^the build failed \(tsc -p tsconfig\.build\.json, exit 2\):$/m)
  t.match(r.stdout, /^the build failed: fast not run/m)
  t.notMatch(r.stdout, /^fast:/m, 'tap never ran')
  t.equal(lastLine(r.stdout), '0 passed, 1 failed')
})

t.test('with a part, a type error does not stop it: the type check runs beside it and its line comes after it', async (t) => {
  // the small project has no tap of its own (no node_modules): its part fails at once, listing its
  // files, which is all this needs, a part that ran and reported before the type check's line
  const dir = t.testdir(project("export const n: number = 'one'\n"))
  const r = await suite(dir, ['typecheck', 'fast'])
  t.equal(r.code, 1)
  const part = r.stdout.indexOf("the fast part's files could not be listed (tap list, exit 1):")
  const check = r.stdout.indexOf('the type check failed (tsc --noEmit -p ., exit 2):')
  t.ok(part >= 0, `the part ran: ${r.stdout}`)
  t.ok(check > part, 'the type check reported after it')
  t.equal(lastLine(r.stdout), '0 passed, 2 failed', 'each counted as 1 failed')
})

t.test('the fast part runs its files in groups: a mark per file, failures under their file, and the files a crashed group never reached named', async (t) => {
  // a project with this checkout's tap and plugins (the same list, so tap's built class is used
  // as it is) and nine test files: with six groups dealt in path order, c and i share the third
  const { plugin } = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { tap: { plugin: string[] } }).tap
  const passing = "import t from 'tap'\nt.test('passes', async (t) => t.pass('fine'))\n"
  const dir = t.testdir({
    'package.json': JSON.stringify({ type: 'module', tap: { plugin, 'disable-coverage': true, jobs: 3 } }),
    node_modules: t.fixture('symlink', join(ROOT, 'node_modules')),
    test: {
      ...Object.fromEntries(['a', 'd', 'e', 'f', 'g', 'h', 'i'].map((n) => [`${n}.test.ts`, passing])),
      'b.test.ts': "import t from 'tap'\nt.test('outer', async (t) => {\n  t.test('inner', async (t) => t.equal(1, 2, 'one is two'))\n})\n",
      'c.test.ts': "import t from 'tap'\nt.test('exits', async (t) => {\n  t.pass('before')\n  process.exit(3)\n})\n",
    },
  })
  const r = await suite(dir, ['fast'])
  t.equal(r.code, 1, r.stdout)
  const marks = /^[.F]+$/m.exec(r.stdout)?.[0] ?? ''
  t.equal(marks.length, 9, `a mark per file: ${r.stdout}`)
  t.equal(marks.replace(/\./g, ''), 'FFF', 'b, c, and i (queued behind c in its process) failed')
  t.match(r.stdout, /^not ok - test\/b\.test\.ts > outer > inner > one is two$/m, "a failure under its file's path, the group left out")
  t.match(r.stdout, /^not ok - test\/c\.test\.ts > exits > test unfinished$/m)
  t.match(r.stdout, /^not run: \.tap\/groups\/fast-3\.mjs's process ended before test\/i\.test\.ts$/m)
  t.notMatch(r.stdout, /^\s*1\.\.0/m, 'nor the empty plans the ended process left')
  t.match(readFileSync(join(dir, '.tap/groups/fast-3.mjs'), 'utf8'), /runFiles\(\[\s*"test\/c\.test\.ts",\s*"test\/i\.test\.ts"\s*\]\)/, 'the group file names its files')
  // passed: a and d to h, and c's one assertion before it exited; failed, as tap counts them:
  // b's, c's unfinished test, and i, left in its group's queue
  t.equal(lastLine(r.stdout), '7 passed, 4 failed')
})
