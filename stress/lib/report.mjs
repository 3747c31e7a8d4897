/** Figures of a case: each with its threshold and verdict, printed as one line per case. */

/**
 * A judged figure. `op` is one of '<=', '>=', '=', '<', '>'. `value` and `limit` are numbers; `unit`
 * is printed after both.
 */
export function check(label, value, op, limit, unit = '') {
  const pass =
    Number.isFinite(value) &&
    (op === '<=' ? value <= limit : op === '>=' ? value >= limit : op === '<' ? value < limit : op === '>' ? value > limit : op === '=' ? value === limit : false)
  return { label, value, op, limit, unit, pass, judged: true }
}

/** A figure shown for context, not judged (e.g. statistics at the small scale of npm test). */
export function info(label, value, unit = '') {
  return { label, value, unit, pass: true, judged: false }
}

const num = (v) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : String(Math.round(v * 100) / 100)) : String(v))
const sym = { '<=': '≤', '>=': '≥', '=': '=', '<': '<', '>': '>' }

export function formatFigure(f) {
  const u = f.unit === '' ? '' : f.unit === '%' ? '%' : ` ${f.unit}`
  if (!f.judged && f.op !== undefined) return `${f.label} ${num(f.value)}${u} (${sym[f.op]} ${num(f.limit)}${u}, not judged)`
  if (!f.judged) return `${f.label} ${num(f.value)}${u}`
  return `${f.label} ${num(f.value)}${u} (${sym[f.op]} ${num(f.limit)}${u})${f.pass ? '' : ' ✗'}`
}

/** One line: verdict, number and name, figures. */
export function formatLine(result) {
  const verdict = result.status.padEnd(14)
  const name = `${result.n} ${result.id}`.padEnd(16)
  const figures = result.figures.map(formatFigure).join(' · ')
  const note = result.note ? ` — ${result.note}` : ''
  return `${verdict}${name}${figures}${note} [${Math.round(result.seconds)} s; others used ${result.others}% of the CPU]`
}

/**
 * `check` at full scale; at the small scale of npm test, timing figures that a shared machine's
 * load can move are reported with their threshold but not judged.
 */
export const timingCheck = (scale) => (scale === 'full' ? check : (label, value, op, limit, unit = '') => ({ ...check(label, value, op, limit, unit), pass: true, judged: false }))

/** The run as a Markdown table (the one docs/reliability.md shows), one row per case. */
export function formatMarkdown(results, run) {
  const rows = results.map((r) => {
    const figures = r.figures.map((f) => formatFigure(f).replace(/\|/g, '\\|')).join('<br>')
    const note = r.note ? `${figures === '' ? '' : '<br>'}${r.note.replace(/\|/g, '\\|')}` : ''
    return `| ${r.n} | ${r.title} | ${figures}${note} | **${r.status}** | ${Math.round(r.seconds)} s, ${r.others} % |`
  })
  const failed = results.filter((r) => r.status === 'FAIL').length
  const unmeasured = results.filter((r) => r.status === 'NOT MEASURED').length
  return [
    `Run of ${run.date}, ${run.scale} scale, Node ${run.node}, ${run.cores} cores: ${results.length - failed - unmeasured} passed, ${failed} failed, ${unmeasured} not measured, in ${Math.round(run.seconds)} s.`,
    '',
    '| # | case | figures (threshold in brackets) | result | time, CPU used by others |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n')
}
