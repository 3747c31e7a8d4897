/** Text helpers for the views: times in UTC (the VM's logs are), durations, short ids. */

const pad2 = (n: number): string => String(n).padStart(2, '0')

/** `2025-03-04 09:05` (UTC), or `-` for none */
export function formatTime(ms: number | null): string {
  if (ms === null) return '-'
  const d = new Date(ms)
  return `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())} ${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}`
}

/** `45s`, `12m`, `3h`, `29d`: the largest unit, rounded (7 days less a minute is `7d`) */
export function formatSpan(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000)
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.round(s / 60)}m`
  if (s < 86400) return `${Math.round(s / 3600)}h`
  return `${Math.round(s / 86400)}d`
}

/** `3m ago` / `in 29d` / `now` relative to `now` */
export function formatRelative(ms: number, now: number): string {
  const diff = ms - now
  if (Math.abs(diff) < 1000) return 'now'
  return diff < 0 ? `${formatSpan(diff)} ago` : `in ${formatSpan(diff)}`
}

/**
 * an email as a question names it: whole up to 60 characters, else its start and its end (where
 * the domain is) around an ellipsis, so that the question fits its lines whole
 */
export const promptEmail = (email: string): string => {
  const chars = Array.from(email)
  return chars.length > 60 ? `${chars.slice(0, 30).join('')}…${chars.slice(-29).join('')}` : email
}

/** the first characters of an opaque id, enough to tell ids apart on screen */
export const shortId = (id: string): string => (id.length > 10 ? `${id.slice(0, 8)}…` : id)

export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`
