/** Reads the daemon's Prometheus text into { 'name{labels}': value }. */
import { get } from './http.mjs'

export async function scrape(url) {
  const r = await get(url, '/metrics', { timeoutMs: 10_000 })
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`)
  const out = {}
  for (const line of r.text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const i = line.lastIndexOf(' ')
    out[line.slice(0, i)] = Number(line.slice(i + 1))
  }
  return out
}

/** A counter's value (0 if absent), e.g. metric(m, 'authd_login_total', { outcome: 'success' }). */
export function metric(m, name, labels = {}) {
  const want = Object.entries(labels)
  let sum = 0
  for (const [k, v] of Object.entries(m)) {
    const brace = k.indexOf('{')
    const n = brace === -1 ? k : k.slice(0, brace)
    if (n !== name) continue
    const text = brace === -1 ? '' : k.slice(brace)
    if (want.every(([lk, lv]) => text.includes(`${lk}="${lv}"`))) sum += v
  }
  return sum
}

/**
 * From two scrapes, the bucket bound (seconds) under which `share` of a histogram's new
 * observations fell, for the series matching `labels`; Infinity if beyond the last bucket.
 */
export function histogramQuantile(before, after, name, labels, share) {
  const buckets = new Map()
  for (const [k, v] of Object.entries(after)) {
    if (!k.startsWith(`${name}_bucket{`)) continue
    if (!Object.entries(labels).every(([lk, lv]) => k.includes(`${lk}="${lv}"`))) continue
    const le = /le="([^"]+)"/.exec(k)[1]
    const bound = le === '+Inf' ? Infinity : Number(le)
    buckets.set(bound, (buckets.get(bound) ?? 0) + v - (before[k] ?? 0))
  }
  const sorted = [...buckets.entries()].sort((a, b) => a[0] - b[0])
  const total = sorted.at(-1)?.[1] ?? 0
  if (total === 0) return { bound: NaN, total: 0 }
  for (const [bound, cum] of sorted) if (cum >= share * total) return { bound, total }
  return { bound: Infinity, total }
}
