import type { RateRule } from '../config/types.js'

/** One counter to charge: `key` (see {@link limitKey}) under `rule`. */
export interface RateEntry {
  key: string
  rule: RateRule
}

/** Opaque receipt of a successful consume; pass it to `release` to un-count those events. */
export interface ConsumeToken {
  readonly kind: 'rate-limit-token'
}

/**
 * A refusal says which entry had no room (`blockedBy`, its index; the first such one) or -1 when
 * every entry had room but the limiter could not hold a new key (`maxKeys`).
 */
export type ConsumeResult = { ok: true; token: ConsumeToken } | { ok: false; retryAfterS: number; blockedBy: number }

export interface RateLimiter {
  /**
   * Atomically counts one event on every entry, or on none: if any entry has no room (or a new
   * key cannot be held), nothing is counted and `retryAfterS` (whole seconds, ≥ 1) says when
   * the last blocked entry will have room again.
   */
  consume(entries: ReadonlyArray<RateEntry>): ConsumeResult
  /** Un-counts exactly the events the consume behind `token` added, if still present. Idempotent. */
  release(token: ConsumeToken): void
  /** Forgets `key` under every rule. */
  reset(key: string): void
  /** Drops every key whose window has fully expired; returns how many. Meant for an idle timer. */
  prune(): number
  /** Number of keys held. */
  size(): number
}

export interface RateLimiterOptions {
  /** At most this many keys are held (all windows together). */
  maxKeys: number
  /**
   * Milliseconds; should be monotonic (e.g. `() => performance.now()`). If it steps back, the
   * limiter holds its time still until the clock catches up, so its ordering stays valid.
   */
  now: () => number
}

const AXIS = /^[A-Za-z0-9_.-]+$/

/**
 * Builds a limiter key: `axis:part1|part2…`, e.g. `login.ip_email:1.2.3.4|a@b.c`.
 * The axis may not contain `:` or `|`, and `\` and `|` inside parts are backslash-escaped, so two
 * different (axis, parts) never give the same key (emails may contain `|` and `:`).
 */
export function limitKey(axis: string, ...parts: string[]): string {
  if (!AXIS.test(axis)) throw new Error(`invalid rate limit axis: ${JSON.stringify(axis)}`)
  let key = axis + ':'
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]
    if (i > 0) key += '|'
    key += part.includes('|') || part.includes('\\') ? part.replace(/[\\|]/g, '\\$&') : part
  }
  return key
}

/** One key's sliding log under one window length, linked into that window's expiry list. */
class Node {
  /** event times, ascending */
  times: number[]
  prev: Node | null = null
  next: Node | null = null
  constructor(
    readonly key: string,
    at: number,
  ) {
    this.times = [at]
  }
}

/**
 * All keys counted under one window length. The list is kept in order of each key's latest
 * event (a touched key moves to the tail), and with one window length that is also expiry
 * order: the head is always the next key to expire, so dropping expired keys is popping the
 * head — O(1) per key, never a scan.
 */
interface Window {
  ms: number
  keys: Map<string, Node>
  head: Node | null
  tail: Node | null
}

interface Counted {
  window: Window
  node: Node
  at: number
}

/** Expired keys dropped per consume: more than any consume can add, so memory falls back with traffic. */
const SWEEP_CHUNK = 32

export function createRateLimiter({ maxKeys, now }: RateLimiterOptions): RateLimiter {
  // Keyed by window length: a key under two rules of different lengths is two counters.
  const windows = new Map<number, Window>()
  const issued = new WeakMap<ConsumeToken, Counted[]>()
  let held = 0
  let last = -Infinity

  function clock(): number {
    const t = now()
    if (t > last) last = t
    return last
  }

  function windowOf(ms: number): Window {
    let w = windows.get(ms)
    if (w === undefined) {
      w = { ms, keys: new Map(), head: null, tail: null }
      windows.set(ms, w)
    }
    return w
  }

  function unlink(w: Window, n: Node): void {
    if (n.prev === null) w.head = n.next
    else n.prev.next = n.next
    if (n.next === null) w.tail = n.prev
    else n.next.prev = n.prev
    n.prev = n.next = null
  }

  function append(w: Window, n: Node): void {
    n.prev = w.tail
    if (w.tail === null) w.head = n
    else w.tail.next = n
    w.tail = n
  }

  function drop(w: Window, n: Node): void {
    unlink(w, n)
    w.keys.delete(n.key)
    held--
  }

  function expiresAt(w: Window, n: Node): number {
    return n.times.length === 0 ? -Infinity : n.times[n.times.length - 1] + w.ms
  }

  /** Pops up to `limit` expired heads, across windows; returns how many. */
  function sweep(t: number, limit: number): number {
    let dropped = 0
    for (const w of windows.values()) {
      while (dropped < limit && w.head !== null && expiresAt(w, w.head) <= t) {
        drop(w, w.head)
        dropped++
      }
    }
    return dropped
  }

  /** Removes events that left the window; returns the number still in it. */
  function live(w: Window, n: Node, t: number): number {
    const times = n.times
    let first = 0
    while (first < times.length && times[first] + w.ms <= t) first++
    if (first > 0) times.splice(0, first)
    return times.length
  }

  function toSeconds(ms: number): number {
    return Math.max(1, Math.ceil(ms / 1000))
  }

  function consume(entries: ReadonlyArray<RateEntry>): ConsumeResult {
    const t = clock()
    sweep(t, SWEEP_CHUNK)
    // Make room before looking anything up: a key dropped here was expired, so it simply
    // becomes a new key below and nothing counted is lost.
    if (held + entries.length > maxKeys) sweep(t, held + entries.length - maxKeys)

    let blocked = false
    let blockedBy = -1
    let waitMs = 0
    let newKeys = 0
    for (let i = 0; i < entries.length; i++) {
      const { key, rule } = entries[i]
      const w = windowOf(rule.windowMs)
      // the same counter listed twice in one call is charged twice
      let earlier = 0
      for (let j = 0; j < i; j++) {
        if (entries[j].key === key && entries[j].rule.windowMs === rule.windowMs) earlier++
      }
      const n = w.keys.get(key)
      if (n === undefined && earlier === 0) newKeys++
      const inWindow = n === undefined ? 0 : live(w, n, t)
      const over = inWindow + earlier - rule.count // ≥ 0: this many events must expire first
      if (over >= 0) {
        if (!blocked) blockedBy = i
        blocked = true
        waitMs = Math.max(waitMs, n !== undefined && over < inWindow ? n.times[over] + w.ms - t : w.ms)
      }
    }

    if (held + newKeys > maxKeys) {
      // Full of live keys: refuse rather than evict. Evicting a live key would let anyone reset
      // someone else's counter (say, the failed logins against one account) by flooding new keys.
      // The sweep above left only live heads, and each head is its window's next to expire.
      let earliest = Infinity
      for (const w of windows.values()) {
        if (w.head !== null) earliest = Math.min(earliest, expiresAt(w, w.head))
      }
      // nothing held at all (maxKeys below this call's own new keys): a window is the honest wait
      if (earliest === Infinity) earliest = t + Math.max(...entries.map((e) => e.rule.windowMs))
      blocked = true
      waitMs = Math.max(waitMs, earliest - t)
    }
    if (blocked) return { ok: false, retryAfterS: toSeconds(waitMs), blockedBy }

    const counted: Counted[] = []
    for (const { key, rule } of entries) {
      const w = windowOf(rule.windowMs)
      let n = w.keys.get(key)
      if (n === undefined) {
        n = new Node(key, t)
        w.keys.set(key, n)
        held++
      } else {
        n.times.push(t)
        unlink(w, n)
      }
      append(w, n)
      counted.push({ window: w, node: n, at: t })
    }
    const token: ConsumeToken = { kind: 'rate-limit-token' }
    issued.set(token, counted)
    return { ok: true, token }
  }

  function release(token: ConsumeToken): void {
    const counted = issued.get(token)
    if (counted === undefined) return
    issued.delete(token)
    for (const { window: w, node: n, at } of counted) {
      // a key that was reset or expired since is another Node now: nothing of ours is left in it
      if (w.keys.get(n.key) !== n) continue
      const i = n.times.lastIndexOf(at)
      if (i === -1) continue
      n.times.splice(i, 1)
      // A node that keeps earlier events stays where it is in the list: later than its expiry
      // warrants, so it is dropped a little late (at most one window), never too early.
      if (n.times.length === 0) drop(w, n)
    }
  }

  function reset(key: string): void {
    for (const w of windows.values()) {
      const n = w.keys.get(key)
      if (n !== undefined) drop(w, n)
    }
  }

  return {
    consume,
    release,
    reset,
    prune: () => sweep(clock(), Infinity),
    size: () => held,
  }
}
