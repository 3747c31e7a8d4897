/**
 * What the rate limiter is to its callers, whichever kind counts: the in-process one (LMDB;
 * core/rate-limiter.ts) or the database's (PostgreSQL; store/pg/limiter.ts). Its keys are built
 * here (limitKey), so both kinds count on the same keys. README, "Rate limits".
 */
import { createHash } from 'node:crypto'
import type { RateRule } from '../config/types.js'

/**
 * How much a key protects, which decides what a full limiter forgets first (docs/api.md, "Rate
 * limits"): `ADDRESS` keys (a client address) are forgotten first while they hold one event,
 * `ACCOUNT` keys (the failures of an email) last, everything else in between.
 */
export const Keep = { ADDRESS: 0, PAIR: 1, ACCOUNT: 2 } as const
export type Keep = (typeof Keep)[keyof typeof Keep]

/** One counter to charge: `key` (see {@link limitKey}) under `rule`. */
export interface RateEntry {
  key: string
  rule: RateRule
  /** default `Keep.PAIR` */
  keep?: Keep
}

/** Opaque receipt of a successful consume; pass it to `release` to un-count those events. */
export interface ConsumeToken {
  readonly kind: 'rate-limit-token'
}

/**
 * A refusal says which entry had no room (`blockedBy`, its index; the first such one), and
 * whether it is the first refusal of that entry's key in the key's window (`firstBlock`): the
 * block the audit log records, once per limit and key per window (README, "Audit log"), however
 * many requests are refused and however many instances refuse them. The limiter keeps that on the
 * key's own entry, for its window's length from the first refusal; a key whose counted events
 * have all left the window, or that was reset or forgotten (a full limiter's eviction), starts
 * afresh, and its next refusal is a first block again. A full limiter never refuses: it forgets
 * other keys instead (see `RateLimiterOptions.maxKeys`).
 */
export type ConsumeResult = { ok: true; token: ConsumeToken } | { ok: false; retryAfterS: number; blockedBy: number; firstBlock: boolean }

/**
 * The limiter as the daemon uses it, of either kind: in process (LMDB; `createRateLimiter` behind
 * `asyncLimiter`) or in the database (PostgreSQL; store/pg/limiter.ts), where every instance
 * counts on the same windows under the database's clock.
 */
export interface RateLimiter {
  /**
   * Atomically counts one event on every entry, or on none: if any entry has no room, nothing is
   * counted and `retryAfterS` (whole seconds, ≥ 1) says when the last blocked entry will have
   * room again.
   */
  consume(entries: ReadonlyArray<RateEntry>): Promise<ConsumeResult>
  /**
   * A refusal of `entries` this limiter already knows (a counter found full a moment ago), at
   * once and without a promise; undefined when only `consume` can tell. Counts nothing, and is
   * never a first block (the refusal it repeats was that, if any).
   */
  refusedNow?(entries: ReadonlyArray<RateEntry>): ConsumeResult | undefined
  /**
   * Un-counts exactly the events the consume behind `token` added, if still present, and then,
   * given `reset`, forgets that key as `reset` does (one call: a successful login's). Idempotent.
   */
  release(token: ConsumeToken, reset?: string): Promise<void>
  /** Forgets `key` under every rule. */
  reset(key: string): Promise<void>
  /**
   * Forgets every key of `axis` whose part number `index` is `part` (as given to limitKey), under
   * every rule; resolves to how many. For an admin's rare request only.
   */
  resetByPart(axis: string, index: number, part: string): Promise<number>
}

const AXIS = /^[A-Za-z0-9_.-]+$/

/** one part of a key: the first 128 bits of its SHA-256, base64url (22 characters) */
const hashOf = (part: string): string => createHash('sha256').update(part, 'utf8').digest().toString('base64url', 0, 16)

/**
 * The hashes of short parts (an address, a device id, an email) computed lately, so that a client
 * seen again (a login flood from one address: every request is refused by login.per_ip) is not
 * hashed again. Bounded: emptied when full; a long part (a 16 KB email) is never kept.
 */
const HASHES_KEPT = 4096
const SHORT_PART = 256
const hashes = new Map<string, string>()
export const partHash = (part: string): string => {
  if (part.length > SHORT_PART) return hashOf(part)
  let h = hashes.get(part)
  if (h === undefined) {
    h = hashOf(part)
    if (hashes.size >= HASHES_KEPT) hashes.clear()
    hashes.set(part, h)
  }
  return h
}

/**
 * Builds a limiter key: `axis:h1|h2…`, each part replaced by a hash of it (22 characters), e.g.
 * `login_ip_email:<hash of the address>|<hash of the email>`. Every key is small and of one size
 * whatever the request held (a 16 KB email is 22 characters here), and two different (axis,
 * parts) never meet: the axis may not contain `:` or `|`, and the hashes contain neither.
 */
export function limitKey(axis: string, ...parts: string[]): string {
  if (!AXIS.test(axis)) throw new Error(`invalid rate limit axis: ${JSON.stringify(axis)}`)
  // built by join, which makes one flat string: `+=` would leave a rope of small strings per key
  const pieces = [axis, ':']
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) pieces.push('|')
    pieces.push(partHash(parts[i]!))
  }
  return pieces.join('')
}
