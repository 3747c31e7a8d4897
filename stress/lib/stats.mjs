/** Small statistics for latency samples (milliseconds). */

export function percentile(samples, p) {
  if (samples.length === 0) return NaN
  const sorted = [...samples].sort((a, b) => a - b)
  // nearest rank
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1]
}

export const median = (samples) => {
  if (samples.length === 0) return NaN
  const s = [...samples].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/**
 * The accuracy of the best single-threshold classifier telling `a` from `b` by value: for every
 * cut point, "below is a, above is b" and the reverse; the best share of correct labels.
 * 0.5 means the two cannot be told apart by any threshold (with equal sample counts).
 */
export function bestThresholdAccuracy(a, b) {
  const all = [...a.map((v) => [v, 0]), ...b.map((v) => [v, 1])].sort((x, y) => x[0] - y[0])
  const n = all.length
  let aBelow = 0
  let bBelow = 0
  let best = Math.max(a.length, b.length) / n
  for (let i = 0; i < n; i++) {
    if (all[i][1] === 0) aBelow++
    else bBelow++
    // only cut between distinct values
    if (i + 1 < n && all[i + 1][0] === all[i][0]) continue
    const aLow = aBelow + (b.length - bBelow) // a below, b above
    const bLow = bBelow + (a.length - aBelow) // b below, a above
    best = Math.max(best, aLow / n, bLow / n)
  }
  return best
}

export const round = (x, digits = 1) => (Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : x)

export const mb = (bytes) => round(bytes / (1024 * 1024), 1)

/** Fisher–Yates with Math.random: order of interleaved probes */
export function shuffle(list) {
  const a = [...list]
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[a[i], a[j]] = [a[j], a[i]]
  }
  return a
}

/** Runs `task(i)` for i in [0, count) with at most `concurrency` at once. */
export async function pool(count, concurrency, task) {
  let next = 0
  const workers = Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) {
      const i = next++
      await task(i)
    }
  })
  await Promise.all(workers)
}
