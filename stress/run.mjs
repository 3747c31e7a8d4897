#!/usr/bin/env node
/**
 * npm run stress — drives the real daemon (bin/authd.js, built dist/) on loopback and measures
 * the reliability claims of docs/reliability.md. One line per case with its figures, thresholds
 * and PASS/FAIL; exit 1 if any case fails, 2 if a case could not be measured, 0 otherwise.
 *
 *   node stress/run.mjs [--scale full|small] [--only fuzz,timing,…] [--json FILE] [--markdown FILE] [--keep]
 *
 * --scale small runs every case at the tiny scale npm test uses (statistical thresholds are then
 * reported, not judged). Every loop is bounded in count and time; the whole run is cut at 25 min.
 * Every case but one sends traffic only to loopback; case 9 (`npm audit`) asks the npm registry,
 * so it runs only when named: --only audit.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, readdirSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { closeAgents } from './lib/http.mjs'
import { killAllDaemons, ROOT } from './lib/daemon.mjs'
import { formatLine, formatMarkdown } from './lib/report.mjs'
import * as fuzz from './cases/fuzz.mjs'
import * as timing from './cases/timing.mjs'
import * as limiter from './cases/limiter.mjs'
import * as flood from './cases/flood.mjs'
import * as slow from './cases/slow-clients.mjs'
import * as crash from './cases/crash.mjs'
import * as races from './cases/refresh-races.mjs'
import * as hygiene from './cases/log-hygiene.mjs'
import * as audit from './cases/audit.mjs'
import * as junk from './cases/junk.mjs'
import * as lockout from './cases/lockout.mjs'
import * as limiterFill from './cases/limiter-fill.mjs'
import * as longEmail from './cases/long-email.mjs'
import * as sessions from './cases/sessions.mjs'
import * as mfaTiming from './cases/mfa-timing.mjs'
import * as crashPg from './cases/crash-pg.mjs'
import * as racesPg from './cases/races-pg.mjs'
import * as limiterPg from './cases/limiter-pg.mjs'

const CASES = [fuzz, timing, limiter, flood, slow, crash, races, hygiene, audit, lockout, limiterFill, longEmail, junk, sessions, mfaTiming, crashPg, racesPg, limiterPg]
const RUN_LIMIT_MS = 25 * 60_000

const { values: args } = parseArgs({
  options: {
    scale: { type: 'string', default: 'full' },
    only: { type: 'string' },
    json: { type: 'string' },
    markdown: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
})
if (args.scale !== 'full' && args.scale !== 'small') {
  console.error(`stress: --scale must be full or small (got ${args.scale})`)
  process.exit(2)
}
const only = args.only === undefined ? null : new Set(args.only.split(',').map((s) => s.trim()))
if (only !== null) {
  for (const id of only) {
    if (!CASES.some((c) => c.id === id)) {
      console.error(`stress: unknown case ${id} (cases: ${CASES.map((c) => c.id).join(', ')})`)
      process.exit(2)
    }
  }
}

// the daemon runs the built code: refuse to measure a stale build
const distMain = join(ROOT, 'dist', 'daemon', 'main.js')
if (!existsSync(distMain)) {
  console.error('stress: dist/ is missing; run `npm run build` first')
  process.exit(2)
}
const newestSrc = newest(join(ROOT, 'src'))
if (newestSrc > statSync(distMain).mtimeMs + 1000 && newest(join(ROOT, 'dist')) < newestSrc) {
  console.error('stress: warning: src/ is newer than dist/; run `npm run build` to measure the current code')
}

const rejections = []
process.on('unhandledRejection', (err) => rejections.push(err))

const tmp = mkdtempSync(join(tmpdir(), 'authd-stress-'))
const started = performance.now()
const watchdog = setTimeout(() => {
  console.error(`stress: the run exceeded ${RUN_LIMIT_MS / 60_000} min; stopping`)
  killAllDaemons()
  process.exit(1)
}, RUN_LIMIT_MS)
watchdog.unref()

const results = []
const say = (msg) => process.stderr.write(`  · ${msg}\n`)
console.log(`authd stress (${args.scale} scale), ${new Date().toISOString()}, node ${process.version}, ${availableParallelism()} cores`)
// log hygiene reads the logs of every case before it: it runs last, whatever its number
for (const [i, c] of [...CASES.entries()].sort(([, a], [, b]) => Number(a === hygiene) - Number(b === hygiene))) {
  if (only !== null && !only.has(c.id)) continue
  // the dependency audit asks the npm registry, off this machine: only when named (--only audit)
  if (c === audit && only === null) continue
  const t0 = performance.now()
  const cpu0 = cpuSnapshot()
  const dir = join(tmp, c.id)
  let result
  try {
    const r = await c.run({ scale: args.scale, dir, tmp, say, results })
    const failed = r.figures.some((f) => !f.pass)
    result = { n: i + 1, id: c.id, title: c.title, status: r.status ?? (failed ? 'FAIL' : 'PASS'), figures: r.figures, note: r.note, extra: r.extra }
  } catch (err) {
    result = { n: i + 1, id: c.id, title: c.title, status: 'FAIL', figures: [], note: `error: ${err?.stack ?? err}` }
  }
  closeAgents()
  killAllDaemons()
  result.seconds = (performance.now() - t0) / 1000
  // The machine is shared: how much of its CPU went to other people's processes during the case
  // (everything busy minus this run: the stress process and the daemons it started and reaped).
  result.others = othersShare(cpu0, cpuSnapshot())
  results.push(result)
  console.log(formatLine(result))
}
clearTimeout(watchdog)

if (rejections.length > 0) {
  console.log(`FAIL        harness: ${rejections.length} unhandled rejection(s) in the stress process: ${rejections[0]?.stack ?? rejections[0]}`)
}
const failed = results.filter((r) => r.status === 'FAIL').length + (rejections.length > 0 ? 1 : 0)
const unmeasured = results.filter((r) => r.status === 'NOT MEASURED').length
const total = (performance.now() - started) / 1000
console.log(
  `${failed === 0 ? (unmeasured === 0 ? 'PASS' : 'INCOMPLETE') : 'FAIL'}: ${results.length - failed - unmeasured} passed, ${failed} failed, ${unmeasured} not measured, in ${Math.round(total)} s`,
)
if (args.json !== undefined) writeFileSync(args.json, JSON.stringify({ scale: args.scale, seconds: total, results }, null, 2))
if (args.markdown !== undefined) writeFileSync(args.markdown, formatMarkdown(results, { scale: args.scale, seconds: total, date: new Date().toISOString().slice(0, 10), node: process.version, cores: availableParallelism() }))
if (args.keep) console.log(`stress: kept ${tmp}`)
else rmSync(tmp, { recursive: true, force: true })
process.exit(failed > 0 ? 1 : unmeasured > 0 ? 2 : 0)

function newest(dir) {
  let t = 0
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) t = Math.max(t, statSync(join(e.parentPath ?? e.path, e.name)).mtimeMs)
  }
  return t
}

/** Clock ticks: the machine's busy and total time (/proc/stat), and this process with its reaped children. */
function cpuSnapshot() {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  const [user, nice, system, idle, iowait, irq, softirq, steal] = cpu
  const self = readFileSync('/proc/self/stat', 'utf8')
  // fields after the command name: utime is the 14th field, stime, cutime, cstime follow
  const f = self.slice(self.lastIndexOf(')') + 2).split(' ').map(Number)
  return { busy: user + nice + system + irq + softirq + steal, total: user + nice + system + idle + iowait + irq + softirq + steal, ours: f[11] + f[12] + f[13] + f[14] }
}

/** Percent of the machine's CPU capacity used by other processes between two snapshots. */
function othersShare(a, b) {
  const total = b.total - a.total
  if (total <= 0) return 0
  return Math.max(0, Math.round(((b.busy - a.busy - (b.ours - a.ours)) / total) * 100))
}
