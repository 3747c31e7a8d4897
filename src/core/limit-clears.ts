/**
 * `authctl limits clear <email|ip>`: authctl writes the request into the store, and every running
 * daemon picks it up within a second (docs/api.md, "Rate limits"). The daemon polls one number in the
 * store; only when it moved does it read the requests and clear those limiter keys.
 */
import type { LimitClearTarget, Store } from '../store/store.js'
import { addressKey } from './address.js'
import { canonicalEmail, withinEmailLength } from './email.js'

/** how often a daemon looks for new requests: well inside the promised second */
export const LIMIT_CLEAR_POLL_MS = 250

/** how long a request whose clear fails (its database out of reach) is tried again before dropped */
export const LIMIT_CLEAR_RETRY_MS = 60_000

/** what a failure was: reading the requests (no request), or applying one (tried again, or dropped) */
export interface LimitClearFailure {
  target: LimitClearTarget
  dropped: boolean
}

export interface LimitClearWatch {
  stop(): void
}

/**
 * Applies every request recorded after this call, `apply` once per request (in order, each
 * awaited), until stopped. Requests made before it started are not applied (a starting daemon
 * holds no limits anyway). One poll at a time: a slow store delays the next, never stacks them.
 * A request whose `apply` fails (a limiter in a database out of reach) is tried again at each
 * poll, before any later one, for LIMIT_CLEAR_RETRY_MS; then dropped. Its failure is reported
 * when it first fails and when it is dropped, not at every try; reads that fail are reported when
 * they begin to fail, and (onReadable) when they work again.
 */
export function watchLimitClears(opts: {
  store: Pick<Store, 'limitClearsAfter'>
  apply: (target: LimitClearTarget) => unknown
  onError: (err: unknown, failure?: LimitClearFailure) => void
  /** the requests are read again after reads failed (reported once, by onError, when they began to) */
  onReadable?: () => void
  intervalMs?: number
  /** a clock in ms (performance.now) */
  now?: () => number
}): LimitClearWatch {
  const now = opts.now ?? (() => performance.now())
  // the newest request when the watch starts: only later ones are applied
  let seen: number | undefined
  // the request failing since when
  let failing: { seq: number; since: number } | undefined
  // reads failing (a database away): said when they begin to, and when they work again
  let unreadable = false
  const read = async (after: number) => {
    const clears = await opts.store.limitClearsAfter(after)
    if (unreadable) {
      unreadable = false
      opts.onReadable?.()
    }
    return clears
  }
  let polling = false
  const poll = async (): Promise<void> => {
    if (polling) return
    polling = true
    try {
      if (seen === undefined) {
        seen = (await read(0)).at(-1)?.seq ?? 0
        return
      }
      for (const c of await read(seen)) {
        try {
          await opts.apply(c.target)
        } catch (err) {
          if (failing?.seq !== c.seq) {
            failing = { seq: c.seq, since: now() }
            opts.onError(err, { target: c.target, dropped: false })
          }
          // tried again at the next poll: `seen` stays before it
          if (now() - failing.since < LIMIT_CLEAR_RETRY_MS) return
          opts.onError(err, { target: c.target, dropped: true })
        }
        failing = undefined
        seen = c.seq
      }
    } catch (err) {
      // once per outage, not at every poll (four times a second)
      if (!unreadable) opts.onError(err)
      unreadable = true
    } finally {
      polling = false
    }
  }
  void poll()
  const timer = setInterval(() => void poll(), opts.intervalMs ?? LIMIT_CLEAR_POLL_MS).unref()
  return { stop: () => clearInterval(timer) }
}

/**
 * What the admin named: an IP address (as the limiter keys it: IPv6 as its /64) or an email
 * (canonical); null when it is neither.
 */
export function parseLimitTarget(text: string): LimitClearTarget | null {
  const bare = text.trim().replace(/^\[(.*)\]$/, '$1')
  const key = addressKey(bare)
  if (key !== null) return { ipKey: key }
  if (!text.includes('@')) return null
  // the limits are kept under the canonical form of whatever was tried, registrable or not
  const email = canonicalEmail(text)
  const at = email.lastIndexOf('@')
  return at > 0 && at < email.length - 1 && withinEmailLength(email) ? { email } : null
}
