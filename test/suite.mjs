#!/usr/bin/env node
/**
 * Runs one part of the test suite through tap and ends with one line `N passed, N failed`.
 *
 *   node test/suite.mjs fast   the in-process tests (npm test): everything not in SLOW
 *   node test/suite.mjs slow   the tests that spawn daemons, authctl, browsers, tmux (npm run test:slow)
 *   node test/suite.mjs pg     the contract-level tests (ON_BOTH) again, on PostgreSQL
 *                              (AUTHD_TEST_BACKEND=postgres: test/helpers/app.ts; npm run test:slow)
 *
 * A green run prints one character per test file, the coverage summary and the count; a red one
 * also prints each failing assertion with its file, subtest path and diagnostics. The whole TAP
 * stream is kept in .tap/<part>.tap. Extra arguments go to tap.
 *
 * The rule (keep it in step with the README's Development section): a test file is slow when it
 * matches one of SLOW, fast otherwise, so a new file lands in its directory's part without edits.
 * Coverage thresholds (package.json "tap") are checked on the fast part; the slow part alone does
 * not reach them, so it is run with --allow-incomplete-coverage and .ci/run checks the union.
 */
import { spawn } from 'node:child_process'
import { createWriteStream, mkdirSync } from 'node:fs'
import { Parser } from 'tap-parser'
import { findPgBin } from './helpers/pg-server.mjs'

export const SLOW = [
  'test/stress-small/**',
  'test/deploy/**',
  'test/daemon/**',
  'test/cli/**',
  'test/clients/**',
  'test/tui/tui-e2e.test.ts',
]

/**
 * The tests of the outside of authd (HTTP and authctl), which run on each backend: once on LMDB
 * in the fast or slow part, once more on PostgreSQL in the pg part. A test in them about LMDB
 * itself skips there, saying why (lmdbOnly in test/helpers/app.ts).
 */
export const ON_BOTH = ['test/http/*.test.ts', 'test/cli/*.test.ts']

const [part, ...rest] = process.argv.slice(2)
if (part !== 'fast' && part !== 'slow' && part !== 'pg') {
  console.error('usage: node test/suite.mjs fast|slow|pg [tap arguments]')
  process.exit(2)
}

// the pg part needs the server binaries (test/helpers/pg.ts): without them it is skipped, in one
// line, or fails under AUTHD_REQUIRE_POSTGRES=1 (CI)
if (part === 'pg' && 'missing' in findPgBin()) {
  const { missing } = findPgBin()
  const required = process.env.AUTHD_REQUIRE_POSTGRES === '1'
  console.log(`${missing.split(':')[0]}: the tests on PostgreSQL ${required ? 'fail under AUTHD_REQUIRE_POSTGRES=1' : 'skip'} (install them: apt-get install postgresql).`)
  console.log(`0 passed, ${required ? 1 : 0} failed`)
  process.exit(required ? 1 : 0)
}

const args =
  part === 'fast'
    ? [...SLOW.map((p) => `--exclude=${p}`), ...rest]
    : part === 'slow'
      ? // a directory would run its helper modules too: name only the test files in it
        ['--allow-incomplete-coverage', ...rest, ...SLOW.map((p) => (p.endsWith('/**') ? `${p}/*.test.ts` : p))]
      : // the coverage thresholds are held by the other two parts (.ci/run), which this one would replace
        ['--disable-coverage', ...rest, ...ON_BOTH]

mkdirSync('.tap', { recursive: true })
const log = createWriteStream(`.tap/${part}.tap`)
const tap = spawn(process.execPath, ['node_modules/tap/dist/esm/run.mjs', '--reporter=tap', ...args], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: part === 'pg' ? { ...process.env, AUTHD_TEST_BACKEND: 'postgres' } : process.env,
})

const failures = []
let files = 0
const parser = new Parser({ bail: false })
// one character per finished test file
parser.on('assert', (res) => {
  files++
  process.stdout.write(res.ok ? '.' : 'F')
  if (files % 80 === 0) process.stdout.write('\n')
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
  const { readFileSync } = await import('node:fs')
  const deep = new Parser()
  walk(deep, [])
  deep.end(readFileSync(`.tap/${part}.tap`, 'utf8'))
  const nested = leaves.filter((l) => l.path.length > 0 && !(l.res.diag && l.res.diag.externalID))
  console.log(`\nFailed (${part}):`)
  for (const { path, res } of nested.length ? nested : leaves) {
    const where = [...path, res.name].filter(Boolean).join(' > ')
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

const shown = extra.filter((l) => l.trim() !== '')
if (shown.length) console.log(`${failures.length ? '\n' : ''}${shown.join('').trimEnd()}`)

// the PostgreSQL tests skip without the server binaries (test/helpers/pg.ts): one line says so
const pgBin = findPgBin()
if ('missing' in pgBin && part !== 'pg') {
  console.log(process.env.AUTHD_REQUIRE_POSTGRES === '1' ? `${pgBin.missing.replace('tests skip', 'tests fail under AUTHD_REQUIRE_POSTGRES=1')}.` : `${pgBin.missing}.`)
}

let pass = totals?.pass ?? 0
let fail = totals?.fail ?? 0
if (code !== 0 && fail === 0) {
  console.log(`tap exited with status ${code} without a failed assertion: a coverage threshold was not met (see the summary above) or a test file crashed; .tap/${part}.tap has the whole run.`)
  fail = 1
}
console.log(`${pass} passed, ${fail} failed`)
process.exit(code !== 0 ? code : fail > 0 ? 1 : 0)
