/**
 * Runs cases of `npm run stress` at the small scale (stress/run.mjs --scale small) against the
 * real daemon from dist/, and hands back their figures. The log-hygiene case always runs after
 * them, over the logs they produced.
 */
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { ROOT } from '../helpers/app.js'
import { findPgBin, INSTALL_HINT } from '../helpers/pg-server.mjs'

export interface Figure {
  label: string
  value: number | string
  op?: string
  limit?: number
  unit: string
  pass: boolean
  judged: boolean
}

export interface CaseResult {
  id: string
  status: 'PASS' | 'FAIL' | 'NOT MEASURED'
  figures: Figure[]
  note?: string
}

export async function runSmall(t: Test, ids: string[]): Promise<Map<string, CaseResult>> {
  const json = join(t.testdir(), 'stress.json')
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'stress', 'run.mjs'), '--scale', 'small', '--only', [...ids, 'hygiene'].join(','), '--json', json],
      { cwd: ROOT, timeout: 150_000, env: { PATH: process.env.PATH, HOME: process.env.HOME } },
      (err, stdout, stderr) => resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : null, stdout, stderr }),
    )
  })
  t.comment(stdout.trim())
  if (code !== 0) t.comment(stderr.trim())
  t.equal(code, 0, 'stress/run.mjs exits 0')
  const report = JSON.parse(readFileSync(json, 'utf8')) as { results: CaseResult[] }
  return new Map(report.results.map((r) => [r.id, r]))
}

/** The figure named `label` of a case (fails the test if it is missing). */
export function figure(t: Test, result: CaseResult | undefined, label: string): Figure {
  const f = result?.figures.find((x) => x.label === label)
  t.ok(f, `figure "${label}" reported`)
  return f ?? { label, value: NaN, unit: '', pass: false, judged: true }
}

/** Every judged figure of the case passes, and the case reports PASS. */
export function allPass(t: Test, result: CaseResult | undefined): void {
  t.ok(result, 'the case ran')
  if (result === undefined) return
  for (const f of result.figures) if (f.judged) t.ok(f.pass, `${result.id}: ${f.label} ${f.value}${f.unit} ${f.op ?? ''} ${f.limit ?? ''}`)
  t.equal(result.status, 'PASS', `${result.id}: ${result.note ?? ''}`)
}

/**
 * Whether the PostgreSQL cases (…-pg) can run: without the server binaries `t` is skipped with
 * one line saying so, or fails under TEST_REQUIRE_POSTGRES=1 (as test/helpers/pg.ts does).
 */
export function withPostgres(t: Test): boolean {
  const found = findPgBin()
  if (!('missing' in found)) return true
  if (process.env.TEST_REQUIRE_POSTGRES === '1') t.fail(`${found.missing.split(':')[0]}, and TEST_REQUIRE_POSTGRES=1 requires them (install them: ${INSTALL_HINT})`)
  else t.plan(0, found.missing)
  return false
}
