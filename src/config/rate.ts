import { parseDuration } from './duration.js'
import type { RateRule } from './types.js'

/**
 * Parses "<count>/<duration>", e.g. "5/15m": count an integer ≥ 1, duration > 0 (see
 * parseDuration). Throws a RangeError for anything else.
 */
export function parseRate(text: string): RateRule {
  const match = /^(\d+)\/(.+)$/.exec(text)
  const invalid = new RangeError(`invalid rate ${JSON.stringify(text)} (expected "<count>/<duration>", e.g. "5/15m")`)
  if (match === null) throw invalid
  const count = Number(match[1])
  if (!Number.isSafeInteger(count) || count < 1) throw invalid
  let windowMs: number
  try {
    windowMs = parseDuration(match[2])
  } catch {
    throw invalid
  }
  if (windowMs === 0) throw invalid
  return { count, windowMs, text }
}
