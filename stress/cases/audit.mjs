/**
 * Case 9 — supply chain: `npm audit --omit=dev`, the dependencies that ship. If the registry's
 * audit endpoint cannot be reached or refuses the request, the case says NOT MEASURED: an audit
 * that did not happen is not a pass.
 */
import { execFile } from 'node:child_process'
import { ROOT } from '../lib/daemon.mjs'
import { check, info } from '../lib/report.mjs'

export const id = 'audit'
export const title = 'Supply chain'

export async function run({ say }) {
  const { stdout, error } = await new Promise((resolve) =>
    execFile('npm', ['audit', '--omit=dev', '--json'], { cwd: ROOT, timeout: 120_000, maxBuffer: 32 * 1024 * 1024 }, (err, stdout) =>
      resolve({ stdout, error: err }),
    ),
  )
  let report
  try {
    report = JSON.parse(stdout)
  } catch {
    return { figures: [], status: 'NOT MEASURED', note: `npm audit printed no report (${error?.message?.split('\n')[0] ?? 'no output'})` }
  }
  const v = report?.metadata?.vulnerabilities
  if (v === undefined) {
    const why = report.message ?? report.error?.summary ?? 'no vulnerability counts in the report'
    say(`audit: ${why}`)
    return { figures: [], status: 'NOT MEASURED', note: `the audit endpoint did not answer: ${why}` }
  }
  return {
    figures: [
      check('high', v.high ?? 0, '=', 0),
      check('critical', v.critical ?? 0, '=', 0),
      info('moderate', v.moderate ?? 0),
      info('low', v.low ?? 0),
      info('dependencies', report.metadata.dependencies?.prod ?? report.metadata.totalDependencies ?? 'unknown'),
    ],
  }
}
