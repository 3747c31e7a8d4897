/**
 * What /me needs, valid at a store version: the one owner of /me's speed, for either backend.
 *
 * Every /me (and every check of an access token by the account endpoints) asks here. The
 * lookups of one turn of the event loop are gathered into ONE `store.meRead` (with PostgreSQL,
 * one round trip for all of them), which answers the store's version, the keys' version and
 * the sessions asked for. The records read are kept as read at that version (bounded): while the
 * version stays the same, the store need not read them again (LMDB reads one number then). When
 * the keys' version moves, the keyring is loaded again before anyone is answered. So a write by
 * any process (a session revoked, a user disabled, a key revoked, by authd or authctl) is seen by
 * the first /me whose turn reads the store after it: in this process at once, in another within
 * one turn of the event loop of a busy daemon.
 *
 * What it leans on, each stale only as this module allows: the keyring (keys.ts) is synced here
 * with the keys' version meRead gives, and its `generation` tells this module when a token it
 * verified must be checked again; access-tokens.ts remembers verified tokens only while the
 * keyring holds the very key object that verified them; the LMDB store keeps the decoded fields
 * meRead reads (lmdb-store.ts, projectedOnChange) and drops them when their bytes change. No
 * caller outside this module passes a version to any of them.
 */
import { isStoreUnavailable } from '../errors.js'
import type { MeRecord, Store } from '../store/store.js'
import type { AccessClaims, AccessTokens } from './access-tokens.js'
import type { MeUser } from './caller.js'
import type { Keyring } from './keys.js'
import { isLive, type SessionPolicy } from './sessions.js'

/**
 * Sessions whose record and user are kept, with the store version they were read at. Past it the
 * oldest is forgotten and read again when next asked for. An entry is a few plain values (about
 * 200 bytes with its key; the user's object and body are shared by its sessions), so four times
 * as many sessions are kept as verified tokens (access-tokens.ts, about 1 KB each): a client whose
 * token fell out of that cache still finds its session here, at most about 3 MB in all.
 */
export const SESSIONS_REMEMBERED = 16_384

/** What a valid access token stands for. */
export interface MeAnswer {
  /** the user as /me answers it (frozen; the same object while its fields are as they were) */
  user: MeUser
  /** the session of the token (its `sid` claim) */
  sessionId: string
  /** /me's 200 body, JSON (`{"success":true,"data":…}`), and its size in bytes */
  body: string
  bytes: number
}

export interface MeView {
  /**
   * The checks of /me on a bearer token: signed by a key of ours, timely, its session there and
   * live, its user there and enabled. The answer, or null (401 INVALID_ACCESS_TOKEN). Rejects with
   * STORE_UNAVAILABLE when the store cannot be read.
   */
  check(token: string): Promise<MeAnswer | null>
  /** how many sessions are kept now (at most SESSIONS_REMEMBERED) */
  readonly size: number
}

/**
 * One kept session. Plain values, updated in place when read again: an entry replaced by a new
 * object on every write (a login flood moves the version all the time) left old ones to pile up
 * in the old generation until a full collection.
 */
interface Entry {
  /** the store version it was read at */
  version: number
  userId: string
  createdAt: number
  expiresAt: number
  lastUsedAt: number
  /** undefined once the user is gone */
  user: MeUser | undefined
  disabled: boolean
  body: string
  bytes: number
}

/** One turn's read: the sessions asked for, and its outcome (each sid's entry, or undefined) */
interface Turn {
  sids: Set<string>
  promise: Promise<Map<string, Entry | undefined>>
  resolve(found: Map<string, Entry | undefined>): void
  reject(err: unknown): void
  /** when its first lookup came (performance.now) */
  since: number
}

/** a turn that has waited this long for a read that failed shares its failure (readTurn) */
const SHARE_FAILURE_AFTER_MS = 1000

export function createMeView(deps: {
  store: Pick<Store, 'meRead'>
  keyring: Pick<Keyring, 'sync' | 'version' | 'generation'>
  tokens: Pick<AccessTokens, 'verify'>
  now: () => number
  sessions: SessionPolicy
  /** default SESSIONS_REMEMBERED */
  max?: number
}): MeView {
  const { store, keyring, tokens } = deps
  const max = deps.max ?? SESSIONS_REMEMBERED
  const kept = new Map<string, Entry>()
  /**
   * What /me answers of each user lately seen, shared by the user's sessions: a session read for
   * the first time (or again, once forgotten) whose user is known takes its frozen object and
   * body from here instead of making them again.
   */
  const shown = new Map<string, { user: MeUser; body: string; bytes: number }>()
  /** the version of the last read */
  let known = -1
  /** the turn gathering lookups, not read yet */
  let next: Turn | undefined
  /** a read in flight: the next one starts when it is done (one at a time, in order) */
  let reading = false

  const newTurn = (): Turn => {
    let resolve!: Turn['resolve']
    let reject!: Turn['reject']
    const promise = new Promise<Map<string, Entry | undefined>>((ok, fail) => {
      resolve = ok
      reject = fail
    })
    return { sids: new Set(), promise, resolve, reject, since: performance.now() }
  }

  /** the lookups of this turn, read together once its I/O is done */
  const join = (sid: string | undefined): Promise<Map<string, Entry | undefined>> => {
    if (next === undefined) {
      next = newTurn()
      if (!reading) setImmediate(readTurn)
    }
    if (sid !== undefined) next.sids.add(sid)
    return next.promise
  }

  const keep = (sid: string, r: MeRecord, version: number): Entry => {
    let e = kept.get(sid)
    if (e === undefined) {
      if (kept.size >= max) kept.delete(kept.keys().next().value!)
      e = { version, userId: r.userId, createdAt: 0, expiresAt: 0, lastUsedAt: 0, user: undefined, disabled: false, body: '', bytes: 0 }
      kept.set(sid, e)
    }
    e.version = version
    e.userId = r.userId
    e.createdAt = r.createdAt
    e.expiresAt = r.expiresAt
    e.lastUsedAt = r.lastUsedAt
    const u = r.user
    if (u === undefined) e.user = undefined
    else if (e.user === undefined || e.user.id !== u.id || e.user.email !== u.email || e.user.mfaEnabled !== u.mfaEnabled) {
      // the same object, and the same body, while the user's id, email and factor are as they were
      let a = shown.get(u.id)
      if (a === undefined || a.user.email !== u.email || a.user.mfaEnabled !== u.mfaEnabled) {
        const user: MeUser = Object.freeze({ id: u.id, email: u.email, mfaEnabled: u.mfaEnabled })
        const body = JSON.stringify({ success: true, data: user })
        a = { user, body, bytes: Buffer.byteLength(body) }
        if (!shown.has(u.id) && shown.size >= max) shown.delete(shown.keys().next().value!)
        shown.set(u.id, a)
      }
      e.user = a.user
      e.body = a.body
      e.bytes = a.bytes
    }
    e.disabled = u?.disabled ?? false
    return e
  }

  async function readTurn(): Promise<void> {
    const turn = next
    if (turn === undefined) return
    next = undefined
    reading = true
    let failed: { err: unknown } | undefined
    try {
      const sids = [...turn.sids]
      const cached = new Set<string>()
      for (const sid of sids) if (kept.get(sid)?.version === known) cached.add(sid)
      const at = deps.now()
      const read = await store.meRead(sids, known, cached)
      // the keys as of the read's start (sync also notes them confirmed then)
      await keyring.sync(read.keysVersion, at)
      const found = new Map<string, Entry | undefined>()
      for (const sid of sids) {
        if (read.records.has(sid)) {
          const r = read.records.get(sid)
          if (r === undefined) kept.delete(sid)
          found.set(sid, r === undefined ? undefined : keep(sid, r, read.version))
        } else {
          // left out: still as kept (the version has not moved since it was read)
          const e = kept.get(sid)
          if (e !== undefined) e.version = read.version
          found.set(sid, e)
        }
      }
      known = read.version
      turn.resolve(found)
    } catch (err) {
      failed = { err }
      turn.reject(err)
    } finally {
      reading = false
      // The lookups that came while a read failed for want of the store have waited for it: a
      // second read, as long (a hung database's deadline), would keep them past what any request
      // may wait (docs/api.md: 5 s). The turn they make shares the failure when its first lookup
      // has waited a second or more (all its lookups then answer 503); a younger turn reads again.
      const waiting = next as Turn | undefined // set meanwhile, by join()
      if (failed !== undefined && isStoreUnavailable(failed.err) && waiting !== undefined && performance.now() - waiting.since >= SHARE_FAILURE_AFTER_MS) {
        next = undefined
        waiting.reject(failed.err)
      }
      if (next !== undefined) setImmediate(readTurn)
    }
  }

  const answer = (claims: AccessClaims, e: Entry | undefined): MeAnswer | null => {
    if (e === undefined || e.userId !== claims.sub || e.user === undefined || e.disabled || !isLive(e, deps.now(), deps.sessions)) return null
    return { user: e.user, sessionId: claims.sid, body: e.body, bytes: e.bytes }
  }

  return {
    check(token) {
      // verified against the keys as loaded; checked again below if this turn's read moved them
      const generation = keyring.generation
      const claims = tokens.verify(token)
      return join(claims?.sid).then((found) => {
        if (keyring.generation === generation) return claims === null ? null : answer(claims, found.get(claims.sid))
        const again = tokens.verify(token)
        if (again === null) return null
        // a token of a key loaded just now (another instance signs with it already): one more read
        if (again.sid !== claims?.sid) return join(again.sid).then((more) => answer(again, more.get(again.sid)))
        return answer(again, found.get(again.sid))
      })
    },
    get size() {
      return kept.size
    },
  }
}
