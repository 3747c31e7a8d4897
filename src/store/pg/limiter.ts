/**
 * The rate limiter in PostgreSQL (docs/api.md, "Rate limits"): every instance counts on the same
 * sliding logs, under the database's clock, so a limit of 5 is 5 across any number of
 * instances. One consume is one call of authd_rate_consume (store/pg/schema.ts): all entries
 * charged or none, with the in-process limiter's semantics (core/rate-limiter.ts). The logs live
 * in an unlogged table; keys are `limitKey`s (of one size whatever the request held), and a log
 * holds at most its rule's count of events. Nothing is evicted (rate_limit.max_keys bounds the
 * in-process limiter only): expired logs are deleted by a periodic prune.
 *
 * A counter the database found full stays full until its oldest event leaves the window (a
 * refused consume counts nothing), so each instance remembers a refusal for up to
 * REFUSAL_HOLD_MS and answers the same refusal without a round trip: a flood of refused logins
 * costs the database one call per counter and hold, not one per request. What can empty a counter
 * sooner (an admin's `limits clear`, a successful login's release) is seen by every instance
 * within the hold, well inside the second the README allows; by the instance that cleared, at
 * once (a refusal answered to a consume asked before its clear was done is not remembered).
 *
 * Whether a refusal is the first of its key's window (ConsumeResult.firstBlock, the block the
 * audit log records) is kept on the counter's row, in the same call: the first refusal marks it,
 * under the row's lock, so of any number of instances refusing one key exactly one is told so.
 * A refusal of a row marked already writes nothing.
 */
import { partHash, type ConsumeResult, type ConsumeToken, type RateEntry, type RateLimiter } from '../rate-limit.js'
import type { Db } from './db.js'

/** how long a refusal is answered from memory (an admin's clear is seen within it) */
export const REFUSAL_HOLD_MS = 500
/** keys whose refusals are remembered, at most (a flood from many addresses): forgotten all at once beyond it */
const REFUSALS_KEPT = 10_000

/** how often expired logs are deleted (by each instance; each run is bounded) */
const PRUNE_EVERY_MS = 60_000
const PRUNE_BATCH = 10_000

interface Counted {
  keys: string[]
  windows: number[]
  at: number
}


/** authd_rate_consume's answer (one row) */
export interface ConsumeRow {
  ok: boolean
  wait_us: number
  blocked_by: number
  at_us: number | null
  first_block: boolean
}

/** the columns of authd_rate_consume($1, $2, $3) that `settle` reads */
export const CONSUME_COLUMNS = 'ok, wait_us, blocked_by, at_us, first_block'

export interface PgRateLimiter extends RateLimiter {
  /** a refusal remembered (RateLimiter.refusedNow): only ever a refusal */
  refusedNow(entries: ReadonlyArray<RateEntry>): Extract<ConsumeResult, { ok: false }> | undefined
  /**
   * A consume made by another statement (the store's, charging in the same round trip as its
   * read): the arguments of authd_rate_consume for `entries`, and `settle` for the row it answered,
   * which takes it as `consume` would have (the refusal remembered, the charge's token issued).
   */
  consumeArgs(entries: ReadonlyArray<RateEntry>): unknown[]
  /** where this instance's clears stand: taken before the statement is sent, given to `settle` */
  epoch(): number
  settle(entries: ReadonlyArray<RateEntry>, row: ConsumeRow, asked: number): ConsumeResult
  /** deletes the logs whose events have all left their window (one bounded batch); how many */
  prune(): Promise<number>
  /** stops the periodic prune */
  close(): void
}

export function createPgRateLimiter(db: Db, now: () => number = () => performance.now()): PgRateLimiter {
  const issued = new WeakMap<ConsumeToken, Counted>()
  /** key → window (ms) → a refusal the database gave: asked again at `recheck`, room again at `free` */
  const refusals = new Map<string, Map<number, { recheck: number; free: number }>>()
  // A clear of this instance (a key's: a successful login's, an admin's of one key; or by part:
  // `limits clear`) forgets what it clears from memory before and after its DELETE, and a refusal
  // the database gave to a consume asked before the clear was done (its answer may predate the
  // DELETE) is returned but not remembered: no refusal is answered from memory after a clear.
  // Only the keys cleared are forgotten: a successful login must not send a flood's remembered
  // refusals of other keys back to the database.
  let epoch = 0
  /** a key's clear: Infinity while it runs, then the epoch it ended at */
  const clearedAt = new Map<string, number>()
  /** the same for a clear by part (any key may be among those it deletes) */
  let clearedAllAt = 0
  const clearing = async <T>(key: string | null, work: () => Promise<T>): Promise<T> => {
    epoch++
    if (key === null) {
      clearedAllAt = Infinity
      refusals.clear()
    } else {
      if (clearedAt.size >= REFUSALS_KEPT) {
        // too many to keep apart: as if all were cleared now
        clearedAt.clear()
        clearedAllAt = Math.max(clearedAllAt, epoch)
      }
      clearedAt.set(key, Infinity)
      refusals.delete(key)
    }
    try {
      return await work()
    } finally {
      epoch++
      if (key === null) {
        clearedAllAt = epoch
        refusals.clear()
      } else {
        clearedAt.set(key, epoch)
        refusals.delete(key)
      }
    }
  }
  /** whether a refusal of `key` asked at epoch `asked` may be remembered: no clear of it since */
  const rememberable = (key: string, asked: number): boolean => asked >= clearedAllAt && asked >= (clearedAt.get(key) ?? 0)

  /** a refusal of `entries` remembered and still held, or undefined: ask the database */
  const remembered = (entries: ReadonlyArray<RateEntry>): Extract<ConsumeResult, { ok: false }> | undefined => {
    if (refusals.size === 0) return undefined
    const t = now()
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      const windows = refusals.get(e.key)
      const r = windows?.get(e.rule.windowMs)
      if (r === undefined) continue
      // the database answered this refusal a moment ago, and said then whether it was the first
      if (r.recheck > t) return { ok: false, retryAfterS: Math.max(1, Math.ceil((r.free - t) / 1000)), blockedBy: i, firstBlock: false }
      windows!.delete(e.rule.windowMs)
      if (windows!.size === 0) refusals.delete(e.key)
    }
    return undefined
  }

  const prune = async (): Promise<number> => {
    const rows = await db.query<{ n: number }>(
      `WITH gone AS (
         DELETE FROM authd_rate WHERE ctid = ANY (ARRAY(
           SELECT ctid FROM authd_rate
           WHERE cardinality(times) = 0
              OR times[cardinality(times)] + window_ms * 1000 <= (extract(epoch FROM clock_timestamp()) * 1000000)::bigint
           LIMIT $1 FOR UPDATE SKIP LOCKED))
         RETURNING 1)
       SELECT count(*)::integer AS n FROM gone`,
      [PRUNE_BATCH],
    )
    return rows[0]!.n
  }
  const forget = (key: string): Promise<void> =>
    clearing(key, async () => {
      await db.query(`DELETE FROM authd_rate WHERE key = $1`, [key])
    })

  const consumeArgs = (entries: ReadonlyArray<RateEntry>): unknown[] => [entries.map((e) => e.key), entries.map((e) => e.rule.windowMs), entries.map((e) => e.rule.count)]
  const settle = (entries: ReadonlyArray<RateEntry>, r: ConsumeRow, asked: number): ConsumeResult => {
    if (!r.ok) {
      const waitMs = r.wait_us / 1000
      const t = now()
      const { key, rule } = entries[r.blocked_by]!
      // a counter listed twice in one call was refused for the double charge: not remembered;
      // nor a refusal asked for before a clear of its key by this instance was done
      if (entries.filter((e) => e.key === key && e.rule.windowMs === rule.windowMs).length === 1 && rememberable(key, asked)) {
        let windows = refusals.get(key)
        if (windows === undefined) {
          if (refusals.size >= REFUSALS_KEPT) refusals.clear()
          windows = new Map()
          refusals.set(key, windows)
        }
        windows.set(rule.windowMs, { recheck: t + Math.min(waitMs, REFUSAL_HOLD_MS), free: t + waitMs })
      }
      return { ok: false, retryAfterS: Math.max(1, Math.ceil(r.wait_us / 1e6)), blockedBy: r.blocked_by, firstBlock: r.first_block }
    }
    const token: ConsumeToken = { kind: 'rate-limit-token' }
    issued.set(token, { keys: entries.map((e) => e.key), windows: entries.map((e) => e.rule.windowMs), at: r.at_us! })
    return { ok: true, token }
  }

  const timer = setInterval(() => {
    prune().catch(() => {
      // the database is away: the next run tries again
    })
  }, PRUNE_EVERY_MS)
  timer.unref()

  return {
    refusedNow: remembered,

    consumeArgs,
    epoch: () => epoch,
    settle,

    async consume(entries: ReadonlyArray<RateEntry>): Promise<ConsumeResult> {
      const held = remembered(entries)
      if (held !== undefined) return held
      const asked = epoch
      const [r] = await db.query<ConsumeRow>(`SELECT ${CONSUME_COLUMNS} FROM authd_rate_consume($1, $2, $3)`, consumeArgs(entries))
      return settle(entries, r!, asked)
    },

    async release(token, reset) {
      const counted = issued.get(token)
      if (counted === undefined) {
        if (reset !== undefined) await forget(reset)
        return
      }
      // un-counting by time twice removes nothing more: kept until done, so a failed release can be repeated
      const release = () => db.query(`SELECT authd_rate_release($1, $2, $3, $4)`, [counted.keys, counted.windows, counted.at, reset ?? null])
      await (reset !== undefined ? clearing(reset, release) : release())
      issued.delete(token)
    },

    reset: forget,

    resetByPart(axis, index, part) {
      // keys are `axis:h1|h2…` (limitKey); the part's hash sits at `index` after the colon
      return clearing(null, async () => {
        const rows = await db.query<{ n: number }>(
          `WITH gone AS (
             DELETE FROM authd_rate
             WHERE starts_with(key, $1) AND split_part(substr(key, length($1) + 1), '|', $2) = $3
             RETURNING 1)
           SELECT count(*)::integer AS n FROM gone`,
          [`${axis}:`, index + 1, partHash(part)],
        )
        return rows[0]!.n
      })
    },

    prune,
    close: () => clearInterval(timer),
  }
}
