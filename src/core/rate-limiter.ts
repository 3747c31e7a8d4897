import type { RateRule } from '../config/types.js'
import { Keep, partHash, type ConsumeResult, type ConsumeToken, type RateEntry, type RateLimiter } from '../store/rate-limit.js'

/*
 * The in-process rate limiter (LMDB backend): sliding logs in memory, bounded by
 * rate_limit.max_keys. What a limiter is to its callers, and its keys, are store/rate-limit.ts's:
 * the database's limiter (PostgreSQL) implements the same interface there.
 */
/** The in-process limiter (LMDB backend): synchronous, bounded by `maxKeys`. */
export interface MemoryRateLimiter {
  consume(entries: ReadonlyArray<RateEntry>): ConsumeResult
  release(token: ConsumeToken): void
  reset(key: string): void
  resetByPart(axis: string, index: number, part: string): number
  /** Drops every key whose window has fully expired; returns how many. Meant for an idle timer. */
  prune(): number
  /** Number of keys held. */
  size(): number
}

export interface RateLimiterOptions {
  /**
   * At most this many keys are held (all windows together). When a new key would pass it, expired
   * keys go first, then live ones: the least protective first (see {@link Keep}), the oldest of
   * each kind first. A request is never refused because the limiter is full.
   */
  maxKeys: number
  /** told how many live keys were just forgotten to make room (metrics, a warning) */
  onEvict?: (count: number) => void
  /**
   * Milliseconds; should be monotonic (e.g. `() => performance.now()`). If it steps back, the
   * limiter holds its time still until the clock catches up, so its ordering stays valid.
   */
  now: () => number
}
/** One key's sliding log under one window length, linked into that window's expiry list. */
class Node {
  /** event times, ascending */
  times: number[]
  prev: Node | null = null
  next: Node | null = null
  /** the list of its window it is in (see listOf) */
  list = 0
  /** until when a refusal of this key is not a first block (ConsumeResult.firstBlock): a window from the first */
  blockedUntil = -Infinity
  constructor(
    readonly key: string,
    at: number,
    readonly keep: Keep,
  ) {
    this.times = [at]
  }
}

interface List {
  head: Node | null
  tail: Node | null
}

/** Lists per window: 0 an address seen once, 1 the rest, 2 the failures of an email. */
const LISTS = 3

/** the list a key belongs in now, by what it protects and how often it was seen */
const listOf = (n: Node): number => (n.keep === Keep.ADDRESS ? (n.times.length <= 1 ? 0 : 1) : n.keep)

/**
 * All keys counted under one window length, in three lists by what they protect (listOf). Each
 * list is kept in order of each key's latest event (a touched key moves to the tail), and with
 * one window length that is also expiry order: each head is its list's next key to expire, so
 * dropping expired keys, or forgetting the oldest live ones, is popping heads — O(1) per key,
 * never a scan.
 */
interface Window {
  ms: number
  keys: Map<string, Node>
  lists: List[]
}

interface Counted {
  window: Window
  node: Node
  at: number
}

/** Expired keys dropped per consume: more than any consume can add, so memory falls back with traffic. */
const SWEEP_CHUNK = 32

export function createRateLimiter({ maxKeys, now, onEvict }: RateLimiterOptions): MemoryRateLimiter {
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
      w = { ms, keys: new Map(), lists: Array.from({ length: LISTS }, () => ({ head: null, tail: null })) }
      windows.set(ms, w)
    }
    return w
  }

  function unlink(w: Window, n: Node): void {
    const l = w.lists[n.list]!
    if (n.prev === null) l.head = n.next
    else n.prev.next = n.next
    if (n.next === null) l.tail = n.prev
    else n.next.prev = n.prev
    n.prev = n.next = null
  }

  function append(w: Window, n: Node): void {
    n.list = listOf(n)
    const l = w.lists[n.list]!
    n.prev = l.tail
    if (l.tail === null) l.head = n
    else l.tail.next = n
    l.tail = n
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
      for (const l of w.lists) {
        while (dropped < limit && l.head !== null && expiresAt(w, l.head) <= t) {
          drop(w, l.head)
          dropped++
        }
      }
    }
    return dropped
  }

  /**
   * Forgets `count` live keys, none of `spare`: the least protective list first, across windows,
   * and the oldest (latest event longest ago) of each list first. Returns how many.
   */
  function evict(count: number, spare: ReadonlySet<Node>): number {
    let dropped = 0
    for (let list = 0; list < LISTS && dropped < count; list++) {
      for (const w of windows.values()) {
        let n = w.lists[list]!.head
        while (dropped < count && n !== null) {
          const next = n.next
          if (!spare.has(n)) {
            drop(w, n)
            dropped++
          }
          n = next
        }
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
    let blocked = false
    let blockedBy = -1
    let waitMs = 0
    // the entry that blocks, for firstBlock: its key's node (none only for a count of 0) and window
    let blockedNode: Node | undefined
    let blockedWindowMs = 0
    for (let i = 0; i < entries.length; i++) {
      const { key, rule } = entries[i]
      const w = windowOf(rule.windowMs)
      // the same counter listed twice in one call is charged twice
      let earlier = 0
      for (let j = 0; j < i; j++) {
        if (entries[j].key === key && entries[j].rule.windowMs === rule.windowMs) earlier++
      }
      const n = w.keys.get(key)
      const inWindow = n === undefined ? 0 : live(w, n, t)
      const over = inWindow + earlier - rule.count // ≥ 0: this many events must expire first
      if (over >= 0) {
        if (!blocked) {
          blockedBy = i
          blockedNode = n
          blockedWindowMs = w.ms
        }
        blocked = true
        waitMs = Math.max(waitMs, n !== undefined && over < inWindow ? n.times[over] + w.ms - t : w.ms)
      }
    }

    if (blocked) {
      // the first refusal of the key in a window is the block to record; a flood's others only
      // read a number on the key's own entry (nothing is allocated for them)
      let firstBlock = true
      if (blockedNode !== undefined) {
        firstBlock = blockedNode.blockedUntil <= t
        if (firstBlock) blockedNode.blockedUntil = t + blockedWindowMs
      }
      return { ok: false, retryAfterS: toSeconds(waitMs), blockedBy, firstBlock }
    }

    // Make room for the keys this call adds: expired keys first (nothing counted is lost), then,
    // when every key held is live, the ones that protect least. A full limiter never refuses:
    // refusing would let whoever fills it (new addresses are cheap behind a proxy) lock everyone
    // else out. Only a call that counts makes room; the keys it names are spared (an expired one
    // may go: it is new below).
    if (held + entries.length > maxKeys) {
      const named = new Set<Node>()
      const fresh = new Set<string>()
      for (const { key, rule } of entries) {
        const n = windows.get(rule.windowMs)?.keys.get(key)
        if (n !== undefined) named.add(n)
        else fresh.add(`${rule.windowMs} ${key}`)
      }
      const need = held + fresh.size - maxKeys
      if (need > 0) {
        const forgotten = evict(need - sweep(t, need), named)
        if (forgotten > 0) onEvict?.(forgotten)
      }
    }

    const counted: Counted[] = []
    for (const { key, rule, keep } of entries) {
      const w = windowOf(rule.windowMs)
      let n = w.keys.get(key)
      if (n === undefined) {
        n = new Node(key, t, keep ?? Keep.PAIR)
        w.keys.set(key, n)
        held++
      } else {
        // its events had all left the window (not yet swept): a new window, whose block is a new one
        if (n.times.length === 0) n.blockedUntil = -Infinity
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

  function resetByPart(axis: string, index: number, part: string): number {
    const prefix = axis + ':'
    const h = partHash(part)
    let n = 0
    for (const w of windows.values()) {
      for (const node of [...w.keys.values()]) {
        if (node.key.startsWith(prefix) && node.key.slice(prefix.length).split('|')[index] === h) {
          drop(w, node)
          n++
        }
      }
    }
    return n
  }

  return {
    consume,
    release,
    reset,
    resetByPart,
    prune: () => sweep(clock(), Infinity),
    size: () => held,
  }
}

/**
 * The in-process limiter behind the asynchronous interface the daemon uses (RateLimiter): every
 * answer is already settled, nothing waits on I/O. `memory` is the limiter itself, for what only
 * the in-process one has (its size for the metrics, the idle prune).
 */
export function asyncLimiter(mem: MemoryRateLimiter): RateLimiter & { readonly memory: MemoryRateLimiter } {
  return {
    memory: mem,
    consume: (entries) => Promise.resolve(mem.consume(entries)),
    release: (token, reset) => {
      mem.release(token)
      if (reset !== undefined) mem.reset(reset)
      return Promise.resolve()
    },
    reset: (key) => {
      mem.reset(key)
      return Promise.resolve()
    },
    resetByPart: (axis, index, part) => Promise.resolve(mem.resetByPart(axis, index, part)),
  }
}
