const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
type Unit = keyof typeof UNIT_MS

/** Largest first, so formatDuration picks the shortest exact spelling. */
const FORMAT_UNITS: readonly Unit[] = ['d', 'h', 'm', 's']

/**
 * Parses "500ms", "30s", "15m", "12h", "30d" into milliseconds: a non-negative integer count and
 * one lower-case unit, nothing else (no spaces, signs, fractions or compound forms like "1h30m").
 * Throws a RangeError for anything else.
 */
export function parseDuration(text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text)
  if (match === null) throw new RangeError(`invalid duration ${JSON.stringify(text)}`)
  const ms = Number(match[1]) * UNIT_MS[match[2] as Unit]
  if (!Number.isSafeInteger(ms)) throw new RangeError(`duration ${JSON.stringify(text)} is too large`)
  return ms
}

/** The shortest exact text for `ms` that parseDuration reads back: 900000 → "15m", 90000 → "90s". */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`cannot format duration ${ms}`)
  if (ms === 0) return '0s'
  for (const unit of FORMAT_UNITS) {
    if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`
  }
  return `${ms}ms`
}
