/**
 * Log lines for requests a rate limit refused, without letting a flood of refusals flood the log
 * (or cost more than the refusal itself): the first refusal of a client address under a limit is
 * written at once; the ones after it within the same period are only counted, and written as one
 * line with `repeated: <count>` when the period ends. An address quiet for a period is written at
 * once again. Every refusal is still counted in the metrics (authd_rate_limited_total).
 *
 * `repeat` is the same mechanism for any line one client can make a flood of (the request lines
 * of its 400s, 404s and 405s: docs/observability.md).
 */
export interface RefusalFields {
  event: 'login' | 'register' | 'password_change' | 'login_mfa' | 'mfa_change'
  limit: string
  ip: string
}

export interface RefusalLog {
  refused(fields: RefusalFields, msg: string): void
  /**
   * One more occurrence of what `key` names (a client and what it did): the first in a period
   * calls `first` (which writes its own line); later ones are only counted, and written at the
   * end of the period as `fields` with `repeated: <count>` and the message `<msg> (repeated)`.
   */
  repeat(key: string, first: () => void, fields: object, msg: string): void
  /** writes the counts gathered so far and stops the timer */
  close(): void
}

export interface RefusalLogOptions {
  write: (fields: object, msg: string) => void
  /** default 10 s */
  periodMs?: number
  /** addresses remembered at most; beyond, every refusal is written as it comes (default 10 000) */
  maxKeys?: number
}

interface Quiet {
  fields: object
  msg: string
  repeated: number
}

export function createRefusalLog(opts: RefusalLogOptions): RefusalLog {
  const maxKeys = opts.maxKeys ?? 10_000
  let quiet = new Map<string, Quiet>()

  const flush = (): void => {
    const ended = quiet
    quiet = new Map()
    for (const q of ended.values()) {
      if (q.repeated > 0) opts.write({ ...q.fields, repeated: q.repeated }, `${q.msg} (repeated)`)
    }
  }
  const timer = setInterval(flush, opts.periodMs ?? 10_000).unref()
  // the key of the last refusal's event, limit and address, remembered as one string (its hash
  // with it); the event is part of it: a login flood and a password change refused under one
  // limit from one address are two lines, each with its own repeats
  let last = { event: '', limit: '', ip: '', key: '' }

  const repeat = (key: string, first: () => void, fields: object, msg: string): void => {
    const q = quiet.get(key)
    if (q !== undefined) {
      q.repeated++
      return
    }
    if (quiet.size < maxKeys) quiet.set(key, { fields, msg, repeated: 0 })
    first()
  }

  return {
    refused(fields, msg) {
      // a refusal of a client already quiet under that limit (a flood) only counts: nothing made
      if (last.event !== fields.event || last.limit !== fields.limit || last.ip !== fields.ip) {
        last = { event: fields.event, limit: fields.limit, ip: fields.ip, key: `${fields.event} ${fields.limit} ${fields.ip}` }
      }
      const q = quiet.get(last.key)
      if (q !== undefined) {
        q.repeated++
        return
      }
      const line = { event: fields.event, outcome: 'rate_limited', limit: fields.limit, ip: fields.ip }
      repeat(last.key, () => opts.write(line, msg), line, msg)
    },
    repeat,
    close() {
      clearInterval(timer)
      flush()
    },
  }
}
