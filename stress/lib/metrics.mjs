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
