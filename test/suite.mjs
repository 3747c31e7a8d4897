#!/usr/bin/env node
/**
 * Runs parts of the test suite through tap, one after the other, and ends with one line
 * `N passed, N failed` (their sum; with several parts each also has its own line), whatever
 * happened before it.
 *
 *   node test/suite.mjs fast   the in-process tests: everything not in SLOW
 *   node test/suite.mjs slow   the tests that spawn daemons, authctl, browsers, tmux, and the
 *                              PostgreSQL backend's own tests (a throwaway server)
 *   node test/suite.mjs pg     the tests of ON_BOTH again, on PostgreSQL (TEST_STORE_BACKEND=postgres,
 *                              test/helpers/app.ts); without the server binaries it is skipped in one
 *                              line, or fails under TEST_REQUIRE_POSTGRES=1 (CI)
 *   node test/suite.mjs slow pg   both
 *
 * Before the parts, two steps may be named: `build` (tsc -p tsconfig.build.json: dist/, which the
 * tests that spawn bin/authd and bin/authctl run) and `typecheck` (tsc --noEmit -p .). A step that
 * fails counts as 1 failed and its output is shown; a failed build runs no part (its tests would
 * run an old dist/), a failed type check runs them all (they run from the sources). The two start
 * at the same time; the parts wait for the build, and the type check runs beside them and is
 * reported after them. The type check is incremental (its state in node_modules/.cache/authd-tsc).
 *
 * The tests run from the TypeScript sources through test/helpers/tap-typescript (a tap plugin in
 * place of tap's own): before the parts, every .ts file missing from its cache is transpiled here,
 * once for all the test processes.
 *
 *   npm test             node test/suite.mjs typecheck fast   (the fast part runs from the sources
 *                                                              and spawns nothing built: no build)
 *   npm run test:slow    node test/suite.mjs build slow pg
 *
 * The fast part runs its files in groups, several to a test process (GROUPS; test/helpers/file-group.ts):
 * each file is a subtest of its group's process, named by its path, and gets that subtest for its
 * `import t from 'tap'`. A test process costs about a second of CPU before its tests (node, tap, the
 * module hooks' thread, coverage) and loads the sources again: one process per file, that was two
 * thirds of the part's CPU. Given arguments for tap (`node test/suite.mjs fast --disable-coverage
 * test/x.test.ts`), it runs one file to a process, as tap does, and so do the other parts.
 *
 * A green run prints one character per test file, the coverage summary and the count; a red one
 * also prints each failing assertion with its file, subtest path and diagnostics. The whole TAP
 * stream is kept in .tap/<part>.tap. Arguments after the parts go to tap.
 *
 * The rule (keep it in step with the README's Development section): a test file is slow when it
 * matches one of SLOW, fast otherwise, so a new file lands in its directory's part without edits.
 * Coverage thresholds (package.json "tap") are checked on the fast part, over the sources it runs
 * (all but SLOW_ONLY_SOURCE); the slow part alone does not reach them, so it is run with
 * --allow-incomplete-coverage, and .ci/run checks them over the union of both, every source counted.
 */
import { spawn } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Parser } from 'tap-parser'
import { findPgBin, INSTALL_HINT } from './helpers/pg-server.mjs'

export const SLOW = [
  'test/stress-small/**',
  'test/deploy/**',
  'test/daemon/**',
  'test/cli/**',
  'test/clients/**',
  'test/tui/tui-e2e.test.ts',
  'test/readme-blocks.test.ts',
  // in other directories, files that spawn authd, authctl, PostgreSQL servers or the suite itself
  'test/suite.test.ts',
  'test/tui/lazy-ink.test.ts',
  'test/store/file-modes.test.ts',
  'test/store/lmdb-file-check.test.ts',
  'test/http/me-token-cache.test.ts',
  'test/helpers/pg.test.ts',
  // the PostgreSQL backend's own tests, on a throwaway server (test/helpers/pg.ts)
  'test/store/pg-*.test.ts',
]

/**
 * The source only the slow part runs: the PostgreSQL backend. The fast part's coverage leaves it
 * out, so its thresholds hold over what it runs; .ci/run holds them over the union of both parts.
 */
export const SLOW_ONLY_SOURCE = ['src/store/pg/**']

/**
 * The tests of the outside of authd (HTTP and authctl, and authctl's operations in core/admin.ts),
 * which run on each backend: once on LMDB in the fast or slow part, once more on PostgreSQL in the
 * pg part. A test in them about LMDB itself skips there, saying why (lmdbOnly in test/helpers/app.ts).
 */
export const ON_BOTH = ['test/http/*.test.ts', 'test/cli/*.test.ts', 'test/core/admin.test.ts']

/**
 * How many test processes the fast part's files share: two for each of tap's 3 jobs (package.json
 * "tap"), so that a long group runs beside two shorter ones rather than last and alone. The files
 * are dealt out in path order, so each group has some of every directory.
 */
export const GROUPS = 6

/** where the fast part's group files are written (git-ignored, as all of .tap/), and what they run */
const GROUP_DIR = '.tap/groups'
const FILE_GROUP = new URL('./helpers/file-group.ts', import.meta.url).href

/** tap's command line, run in the working directory (the project's) */
const TAP = 'node_modules/tap/dist/esm/run.mjs'

/** the TypeScript compiler of this checkout, run in the working directory (the project's) */
const TSC = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url))
// The type check is incremental: tsc keeps what it learnt in node_modules/.cache/authd-tsc (of the
// working directory) and the next run checks only what changed since (4 s instead of 11 on 2
// cores). The build is not: tsc would trust its state over what dist/ holds, which `npm run build`,
// a checkout or a hand may have changed since, and write nothing.
const STEPS = {
  build: { what: 'the build', args: ['-p', 'tsconfig.build.json'] },
  typecheck: { what: 'the type check', args: ['--noEmit', '-p', '.'], state: 'node_modules/.cache/authd-tsc/typecheck.tsbuildinfo' },
}

const argv = process.argv.slice(2)
// the steps named first, then the parts, in order (`slow pg`: the slow part, then the pg part);
// then tap's arguments
const steps = []
while (argv[0] in STEPS && !steps.includes(argv[0])) steps.push(argv.shift())
const parts = []
while (['fast', 'slow', 'pg'].includes(argv[0])) parts.push(argv.shift())
if (steps.length + parts.length === 0) {
  console.error('usage: node test/suite.mjs [build] [typecheck] fast|slow|pg [more parts] [tap arguments]')
  process.exit(2)
}

let passed = 0
let failed = 0
let status = 0
let built = true
// the steps start at once (two tsc processes). The build is waited for before the parts (they
// run what it builds); the type check runs beside them (they run from the sources, not from what
// it checks), so that tsc (one thread, 4 to 11 s) shares the machine with the part instead of
// holding it up, and is reported after them
const running = new Map(steps.map((step) => [step, runStep(STEPS[step])]))
// meanwhile, tap's Test class built for the configured plugins (see tapBuild), and every .ts file
// transpiled once, here, for all the test processes (test/helpers/tap-typescript)
const tapBuilt = parts.length > 0 ? tapBuild() : null
let warmed = null
if (parts.length > 0) {
  try {
    const { warm } = await import('./helpers/tap-typescript/hooks.mjs')
    warmed = warm()
  } catch (error) {
    // only speed is lost: each test process transpiles what it imports
    console.log(`the TypeScript cache was not filled (${error instanceof Error ? error.message : error}); the tests transpile as they go`)
  }
}
/** prints a step's line once it has ended, counting it as 1 failed when it failed */
async function report(step) {
  const { ok, report } = await running.get(step)
  console.log(report)
  if (ok) return true
  failed++
  status = 1
  return false
}
if (running.has('build')) built = await report('build')
if (tapBuilt !== null) {
  const { ok, report } = await tapBuilt
  if (report !== null) console.log(report)
  if (!ok) {
    failed++
    status = 1
  }
}
if (running.has('typecheck') && parts.length === 0) await report('typecheck')
if (warmed !== null && warmed.transpiled > 0) console.log(`the TypeScript cache: ${warmed.transpiled} of ${warmed.files} files transpiled`)
if (!built && parts.length > 0) console.log(`the build failed: ${parts.join(', ')} not run (the tests that spawn authd and authctl would run an old dist/).`)
for (const part of built ? parts : []) {
  if (parts.length > 1) console.log(`${part}:`)
  const r = part === 'pg' && 'missing' in findPgBin() ? noPostgres() : await runPart(part, argv)
  if (parts.length > 1) console.log(`${part}: ${r.pass} passed, ${r.fail} failed`)
  passed += r.pass
  failed += r.fail
  if (r.code !== 0 || r.fail > 0) status = r.code || 1
}

if (running.has('typecheck') && parts.length > 0) await report('typecheck')

// the PostgreSQL tests skip without the server binaries (test/helpers/pg.ts): one line says so
const pgBin = findPgBin()
if ('missing' in pgBin && !parts.includes('pg')) {
  console.log(process.env.TEST_REQUIRE_POSTGRES === '1' ? `${pgBin.missing.replace('tests skip', 'tests fail under TEST_REQUIRE_POSTGRES=1')}.` : `${pgBin.missing}.`)
}
console.log(`${passed} passed, ${failed} failed`)
process.exit(status)

/**
 * tap generates its Test class for the plugins in package.json ("tap".plugin), and a run rebuilds
 * it when they differ, but only after the runner has taken the test processes' module hooks from
 * the class it found. `npm ci` installs the class for tap's default plugins, tap's TypeScript
 * plugin among them, so the first run after it loaded ts-node and the compiler into every test
 * process (the fast part took 5 min 20 s instead of 2 min 50 s). So the class is built here, before
 * any part, when its plugins are not the configured ones (`tap build`, about 7 s, once).
 * Resolves to whether that went well, and a line to print (null: nothing was needed).
 */
async function tapBuild() {
  const at = (path) => new URL(`../node_modules/${path}`, import.meta.url)
  try {
    const { defaultPlugins } = await import(at('@tapjs/test/dist/esm/default-plugins.js').href)
    const configured = new Set(defaultPlugins)
    for (const p of JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).tap?.plugin ?? []) {
      if (p.startsWith('!')) configured.delete(p.slice(1))
      else configured.add(p)
    }
    const wanted = [...configured].sort((a, b) => a.localeCompare(b, 'en')).join('\n')
    const built = /export const signature = `([^`]*)`/.exec(readFileSync(at('@tapjs/test/test-built/dist/esm/index.js'), 'utf8'))?.[1]
    if (built === wanted) return { ok: true, report: null }
  } catch (error) {
    // tap laid out otherwise than this reads: only speed is at stake, and tap's run rebuilds it as before
    return { ok: true, report: `tap's Test class was not checked (${error instanceof Error ? error.message : error})` }
  }
  const { code, out } = await runNode([fileURLToPath(at('tap/dist/esm/run.mjs')), 'build'])
  if (code === 0) return { ok: true, report: "tap's Test class: built for the configured plugins" }
  return { ok: false, report: `tap's Test class could not be built for the configured plugins (tap build, exit ${code}):\n${out.trimEnd()}` }
}

/** runs tsc for a step: whether it passed, and its line (with tsc's output when it failed) */
async function runStep({ what, args, state }) {
  const incremental = state === undefined ? [] : ['--incremental', '--tsBuildInfoFile', state]
  const { code, out } = await runNode([TSC, ...args, ...incremental])
  if (code === 0) return { ok: true, report: `${what}: ok` }
  return { ok: false, report: `${what} failed (tsc ${args.join(' ')}, exit ${code}):\n${out.trimEnd()}` }
}

/** runs node on `args` to its end: its exit code (1 when killed by a signal) and its output, stdout and stderr together */
async function runNode(args) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (c) => (out += c))
  child.stderr.on('data', (c) => (out += c))
  const code = await new Promise((resolve) => child.on('close', (c, signal) => resolve(c ?? (signal ? 1 : 0))))
  return { code, out }
}

/**
 * The pg part without the server binaries (test/helpers/pg.ts): skipped, in one line, or failed
 * under TEST_REQUIRE_POSTGRES=1 (CI)
 */
function noPostgres() {
  const { missing } = findPgBin()
  const required = process.env.TEST_REQUIRE_POSTGRES === '1'
  console.log(`${missing.split(':')[0]}: the tests on PostgreSQL ${required ? 'fail under TEST_REQUIRE_POSTGRES=1' : 'skip'} (install them: ${INSTALL_HINT}).`)
  return { pass: 0, fail: required ? 1 : 0, code: required ? 1 : 0 }
}

/**
 * Writes the fast part's group files into GROUP_DIR: the files tap would run with `args` (`tap
 * list`), dealt out in path order into GROUPS groups. Answers a map of each group file's path to
 * its test files, or null when tap could not list them (said here).
 */
async function writeGroups(args) {
  const { code, out } = await runNode([TAP, 'list', ...args])
  const files = out.split('\n').filter((line) => /\.test\.tsx?$/.test(line))
  if (code !== 0 || files.length === 0) {
    console.log(`the fast part's files could not be listed (tap list, exit ${code}):\n${out.trimEnd()}`)
    return null
  }
  const groups = Array.from({ length: Math.min(GROUPS, files.length) }, () => [])
  files.forEach((file, i) => groups[i % groups.length].push(file))
  rmSync(GROUP_DIR, { recursive: true, force: true })
  mkdirSync(GROUP_DIR, { recursive: true })
  return new Map(
    groups.map((group, i) => {
      const path = `${GROUP_DIR}/fast-${i + 1}.mjs`
      writeFileSync(
        path,
        `// the fast part's group ${i + 1} of ${groups.length}, written by test/suite.mjs\n` +
          `import { runFiles } from ${JSON.stringify(FILE_GROUP)}\n\n` +
          `runFiles(${JSON.stringify(group, null, 2)})\n`,
      )
      return [path, group]
    }),
  )
}

/** runs one part through tap; its counts and tap's exit status */
async function runPart(part, rest) {
  const args =
    part === 'fast'
      ? [...SLOW.map((p) => `--exclude=${p}`), ...SLOW_ONLY_SOURCE.map((p) => `--coverage-exclude=${p}`), ...rest]
      : part === 'slow'
        ? // a directory would run its helper modules too: name only the test files in it
          ['--allow-incomplete-coverage', ...rest, ...SLOW.map((p) => (p.endsWith('/**') ? `${p}/*.test.ts` : p))]
        : // the coverage thresholds are held by the other two parts (.ci/run), which this one would replace
          ['--disable-coverage', ...rest, ...ON_BOTH]

  mkdirSync('.tap', { recursive: true })
  // the fast part, unless files are named: its files in groups (GROUPS), each group a test file
  const grouped = part === 'fast' && rest.length === 0
  // group file -> its test files, and those that reported (a group's process may end before its last)
  const groups = grouped ? await writeGroups(args) : new Map()
  if (groups === null) return { pass: 0, fail: 1, code: 1 }
  args.push(...groups.keys())
  const reported = new Map([...groups.keys()].map((group) => [group, new Set()]))
  // tap empties .tap/coverage at its start, even with coverage off: keep the slow part's for .ci/run
  const kept = part === 'pg' && existsSync('.tap/coverage')
  if (kept) {
    rmSync('.tap/coverage-kept', { recursive: true, force: true })
    renameSync('.tap/coverage', '.tap/coverage-kept')
  }
  const log = createWriteStream(`.tap/${part}.tap`)
  const tap = spawn(process.execPath, [TAP, '--reporter=tap', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: part === 'pg' ? { ...process.env, TEST_STORE_BACKEND: 'postgres' } : process.env,
  })

  const failures = []
  let files = 0
  const parser = new Parser({ bail: false })
  // one character per finished test file
  const mark = (ok) => {
    files++
    process.stdout.write(ok ? '.' : 'F')
    if (files % 80 === 0) process.stdout.write('\n')
  }
  // grouped, a test file is a subtest of its group; a group that failed with no file failed (its
  // process ended between them) gets an F of its own
  const groupsWithFailedFile = new Set()
  if (grouped) {
    parser.on('child', (group) =>
      group.on('assert', (res) => {
        mark(res.ok)
        reported.get(group.name)?.add(res.name)
        if (!res.ok) groupsWithFailedFile.add(group.name)
      }),
    )
  }
  parser.on('assert', (res) => {
    if (!grouped) mark(res.ok)
    else if (!res.ok && !groupsWithFailedFile.has(res.name)) mark(false)
  })
  // lines outside TAP at the top level: tap's coverage summary, a crash message
  const extra = []
  parser.on('extra', (line) => extra.push(line))
  let totals = null
  parser.on('comment', (c) => {
    const m = /^# \{ total: (\d+), pass: (\d+)(?:, fail: (\d+))?/.exec(c)
    if (m) totals = { total: +m[1], pass: +m[2], fail: +(m[3] ?? 0) }
  })
  parser.on('complete', (results) => {
    for (const f of results.failures) failures.push(f)
  })

  tap.stdout.on('data', (chunk) => {
    log.write(chunk)
    parser.write(chunk)
  })

  const code = await new Promise((resolve) => tap.on('close', (c, signal) => resolve(c ?? (signal ? 1 : 0))))
  parser.end()
  log.end()
  process.stdout.write('\n')
  if (kept) {
    rmSync('.tap/coverage', { recursive: true, force: true })
    renameSync('.tap/coverage-kept', '.tap/coverage')
  }

  // each failing assertion: the file and subtest path, its name, and tap's diagnostics
  const leaves = []
  const walk = (p, path) => {
    p.on('child', (child) => walk(child, [...path, child.name]))
    p.on('assert', (res) => {
      if (!res.ok && !res.todo && !res.skip) leaves.push({ path, res })
    })
  }
  // re-parse the kept stream with child parsers to find the nested failures (the root parser only
  // reports the failed files)
  if (failures.length) {
    const deep = new Parser()
    walk(deep, [])
    deep.end(readFileSync(`.tap/${part}.tap`, 'utf8'))
    // the assertions inside test files (grouped, the files are one level down, and the group's
    // name is left out of the path: the file's path says where)
    const depth = grouped ? 1 : 0
    const nested = leaves.filter((l) => l.path.length > depth && !(l.res.diag && l.res.diag.externalID))
    console.log(`\nFailed (${part}):`)
    for (const { path, res } of nested.length ? nested : leaves) {
      const where = [...(path.length > depth ? path.slice(depth) : path), res.name].filter(Boolean).join(' > ')
      console.log(`\nnot ok - ${where}`)
      if (res.diag) {
        const { stack, at, source, ...rest } = res.diag
        const lines = []
        if (at && at.fileName) lines.push(`at: ${at.fileName}:${at.lineNumber}:${at.columnNumber}`)
        for (const [k, v] of Object.entries(rest)) lines.push(`${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
        if (source) lines.push(String(source).trimEnd())
        for (const l of lines) console.log(`    ${l.split('\n').join('\n    ')}`)
      }
    }
  }

  for (const [group, files] of groups) {
    const unrun = files.filter((file) => !reported.get(group).has(file))
    if (unrun.length > 0) console.log(`\nnot run: ${group}'s process ended before ${unrun.join(', ')}`)
  }

  // (not the empty plans a dying test process leaves unparsed: `1..0 # no tests found`)
  const shown = extra.filter((l) => l.trim() !== '' && !/^\s*(1\.\.0( # no tests found)?|TAP version \d+)\s*$/.test(l))
  if (shown.length) console.log(`${failures.length ? '\n' : ''}${shown.join('').trimEnd()}`)

  let pass = totals?.pass ?? 0
  let fail = totals?.fail ?? 0
  if (code !== 0 && fail === 0) {
    console.log(`tap exited with status ${code} without a failed assertion: a coverage threshold was not met (see the summary above) or a test file crashed; .tap/${part}.tap has the whole run.`)
    fail = 1
  }
  return { pass, fail, code }
}
