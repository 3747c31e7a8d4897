/**
 * Sessions and refresh-token rotation. A refresh token is `<family>.<secret>`: the family, 128
 * bits, is drawn at login and shared by every token of the session; the secret, 256 bits, is new
 * at every rotation; both from the OS CSPRNG. The store keeps only SHA-256 hashes (of the whole
 * token, and of the family), so a copy of the store cannot be replayed, and a family alone
 * refreshes nothing. What the family gives is recognition: any token the session ever had, however
 * many rotations ago, is known as one of its own, so presenting a used one ends the session, and
 * nobody who never held a token of the session can name its family.
 *
 * To hand out the *same* live token again within the reuse grace, each rotation's successor is
 * kept sealed (AES-256-GCM) under a key derived from the token it replaced: only whoever holds
 * that token can open it, and the store alone never can.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import { liveAt, type RefreshDecision, type Rotation, type SessionCursor, type SessionEntry, type SessionRecord, type Store } from '../store/store.js'

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('base64url')

/** A new refresh token of `family` (a new family, for a new session, if none is given). */
export const newRefreshToken = (family: string = randomBytes(16).toString('base64url')): string => `${family}.${randomBytes(32).toString('base64url')}`

export const newSessionId = (): string => randomBytes(16).toString('base64url')

/** A syntactically possible refresh token: a family (22 base64url characters) and a secret (43) */
export const REFRESH_TOKEN = /^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/

/** The family part of a token that matched REFRESH_TOKEN */
export const tokenFamily = (token: string): string => token.slice(0, 22)

/** The hash the store finds a token's session by when the token itself is not indexed */
export const familyHashOf = (token: string): string => hashToken(tokenFamily(token))

/**
 * At most this many rotations are kept for the grace, however short it is: a token up to this many
 * rotations back, each within its own grace, is walked to the live one. A client refreshes once an
 * access token's lifetime (minutes); two tabs or a lost response take one rotation or two. The
 * bound keeps a session's record small (under PostgreSQL's 2 KB, where it would be stored apart,
 * in TOAST, and rewritten there at every refresh) however fast its holder refreshes.
 */
export const GRACE_ROTATIONS_KEPT = 8

/** the key a successor is sealed under: only the holder of the token it replaced can derive it */
const sealKey = (previous: string): Buffer =>
  Buffer.from(hkdfSync('sha256', previous, Buffer.alloc(0), 'authd refresh successor', 32))

/**
 * Seals `successor` so that only the holder of `previous` can open it. Only its secret is sealed
 * (the family is `previous`'s own): 80 characters.
 */
export function sealSuccessor(previous: string, successor: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', sealKey(previous), iv)
  const body = Buffer.concat([cipher.update(Buffer.from(successor.slice(successor.indexOf('.') + 1), 'base64url')), cipher.final()])
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')
}

/** What a seal opens to under `key`, or null when it was not sealed under it (GCM's tag says so). */
function openWith(key: Buffer, sealed: string): Buffer | null {
  const raw = Buffer.from(sealed, 'base64url')
  if (raw.length < 12 + 16 + 1) return null
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12))
    decipher.setAuthTag(raw.subarray(raw.length - 16))
    return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()])
  } catch {
    return null
  }
}

/** the token of `previous`'s family whose secret is `secret` (what a seal holds) */
const successorOf = (previous: string, secret: Buffer): string => `${tokenFamily(previous)}.${secret.toString('base64url')}`

/** The successor sealed under `previous`, or null if it does not open with that token. */
export function openSuccessor(previous: string, sealed: string): string | null {
  const secret = openWith(sealKey(previous), sealed)
  return secret === null ? null : successorOf(previous, secret)
}

/**
 * The token `presented` was walked forward to through `rotations`: the seal made under it opened
 * (the one that opens with it is its own rotation's: GCM's tag fails under any other key), then
 * its successor's, up to the last rotation's. Null when no seal opens with it, or a later one
 * does not open.
 */
function walkForward(presented: string, rotations: Rotation[]): string | null {
  if (rotations.length === 0) return null
  const key = sealKey(presented)
  for (let i = rotations.length - 1; i >= 0; i--) {
    const secret = openWith(key, rotations[i]!.sealed)
    if (secret === null) continue
    let token: string | null = successorOf(presented, secret)
    for (let j = i + 1; j < rotations.length && token !== null; j++) token = openSuccessor(token, rotations[j]!.sealed)
    return token
  }
  return null
}

// constant-time so a timing side channel cannot walk a stored hash byte by byte
export const sameHash = (a: string, b: string): boolean => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

export interface SessionPolicy {
  idleTtlMs: number
  absoluteTtlMs: number
  reuseGraceMs: number
}

/**
 * When a session dies if left unused: the earliest of its idle expiry (from its last use) and its
 * absolute expiries (the one given at login, and sessions.absolute_ttl after its login as
 * configured now): authctl sessions list's "expires", a user's own GET /api/auth/sessions.
 */
export function expiresIfUnused(s: Pick<SessionRecord, 'createdAt' | 'expiresAt' | 'lastUsedAt'>, policy: Pick<SessionPolicy, 'idleTtlMs' | 'absoluteTtlMs'>): number {
  return Math.min(s.expiresAt, s.createdAt + policy.absoluteTtlMs, s.lastUsedAt + policy.idleTtlMs)
}

/** Whether a session can still be used at `now` (for access tokens and refresh alike). */
export function isLive(s: Pick<SessionRecord, 'createdAt' | 'expiresAt' | 'lastUsedAt'>, now: number, policy: Pick<SessionPolicy, 'idleTtlMs' | 'absoluteTtlMs'>): boolean {
  return liveAt(s, now, policy.idleTtlMs, policy.absoluteTtlMs)
}

export type RefreshOutcome =
  | { kind: 'rotated'; session: SessionRecord; token: string }
  | { kind: 'grace'; session: SessionRecord; token: string }
  | { kind: 'reuse'; session: SessionRecord }
  | { kind: 'expired'; session: SessionRecord }
  | { kind: 'unknown' }

/**
 * Decides, inside the store's write transaction, what a presented refresh token does. Running
 * inside the transaction is what makes N concurrent refreshes of one token leave exactly one
 * live successor: each sees the effect of the one before.
 */
export function decideRefresh(
  session: SessionRecord | undefined,
  presented: { token: string; hash: string },
  ctx: { now: number; policy: SessionPolicy },
): RefreshDecision<RefreshOutcome> {
  if (session === undefined) return { action: 'none', result: { kind: 'unknown' } }
  const { now, policy } = ctx
  if (!isLive(session, now, policy)) return { action: 'revoke', result: { kind: 'expired', session } }

  // the rotations still inside their grace; each replaced the one before, so an older token can
  // be walked forward to the live one (below)
  const rotations = freshRotations(session, now, policy)
  if (sameHash(session.refreshHash, presented.hash)) {
    // the family goes on
    const token = newRefreshToken(tokenFamily(presented.token))
    const kept = [...rotations, { at: now, sealed: sealSuccessor(presented.token, token) }]
    const next: SessionRecord = {
      ...session,
      lastUsedAt: now,
      previousHash: session.refreshHash,
      refreshHash: hashToken(token),
      rotatedAt: now,
      generation: session.generation + 1,
      rotations: kept.slice(-GRACE_ROTATIONS_KEPT),
    }
    return { action: 'rotate', session: next, result: { kind: 'rotated', session: next, token } }
  }

  // A token replaced within the grace of its rotation, presented again: a second tab, a response
  // lost on the way, a page reloaded twice. Answer with the live token, the very one the other
  // presenters got, walked forward from this token through the rotations kept.
  const token = walkForward(presented.token, rotations)
  if (token !== null && sameHash(hashToken(token), session.refreshHash)) {
    return { action: 'none', result: { kind: 'grace', session, token } }
  }

  // A used token presented again: someone holds a copy. End the whole session.
  return { action: 'revoke', result: { kind: 'reuse', session } }
}

/**
 * The session's rotations still inside their grace at `now`, oldest first: up to and including
 * `reuseGraceMs` after each. A grace of 0 is none at all, also in the millisecond of the rotation
 * (a second presentation at once is a reuse, as the setting says).
 */
const freshRotations = (s: SessionRecord, now: number, policy: SessionPolicy): Rotation[] =>
  policy.reuseGraceMs > 0 ? (s.rotations ?? []).filter((r) => now - r.at <= policy.reuseGraceMs) : []

/**
 * The session without the sealed successors whose grace has run out (undefined: none to drop).
 * Past its grace a seal serves nobody, and a copy of the store together with a used token must
 * not open the way to the live one.
 */
export function withoutStaleSeals(s: SessionRecord, now: number, policy: SessionPolicy): SessionRecord | undefined {
  const kept = freshRotations(s, now, policy)
  if (kept.length === (s.rotations?.length ?? 0)) return undefined
  return { ...s, rotations: kept }
}

/** Sessions the sweep looks at per step; each step is one short synchronous stretch. */
export const SWEEP_CHUNK = 256

export interface SweepOptions {
  /** index entries per step (default SWEEP_CHUNK) */
  chunk?: number
  /** what runs between steps (default: a turn of the event loop, so requests go first) */
  pause?: () => Promise<void>
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * Deletes sessions past their idle or absolute expiry, drops the sealed successors of live ones
 * once their grace has run out, and, given `maxPerUser`, ends the live sessions of a user beyond
 * it, oldest last use first (sessions.max_per_user lowered since they began); returns how many sessions were
 * deleted. It walks the sessions index a bounded chunk at a time, with one write per chunk and a
 * turn of the event loop between chunks: a store of 100 000 sessions never holds the daemon's
 * requests for more than one chunk's work. Only the sessions that hold seals are read whole.
 */
export async function sweepExpiredSessions(
  store: Store,
  now: number,
  policy: SessionPolicy & { maxPerUser?: number },
  opts: SweepOptions = {},
): Promise<number> {
  const chunk = opts.chunk ?? SWEEP_CHUNK
  const pause = opts.pause ?? nextTurn
  let n = 0
  // the live sessions of the user being walked (the index is in user order)
  let user: string | undefined
  let live: SessionEntry[] = []
  const trimUser = async (ofUser: SessionEntry[]): Promise<void> => {
    const max = policy.maxPerUser
    if (max === undefined || ofUser.length <= max) return
    ofUser.sort((a, b) => a.lastUsedAt - b.lastUsedAt || (a.id < b.id ? -1 : 1))
    const excess = ofUser.slice(0, ofUser.length - max)
    for (let i = 0; i < excess.length; i += chunk) {
      await pause()
      const part = excess.slice(i, i + chunk)
      const seen = new Map(part.map((e) => [e.id, e.lastUsedAt]))
      // one used since it was read is no longer among the oldest: left alone
      n += await store.sweepSessions([...seen.keys()], (s) => (s.lastUsedAt === seen.get(s.id) ? 'delete' : undefined))
    }
  }
  let after: SessionCursor | undefined
  for (;;) {
    const entries = await store.sessionEntries({ after, limit: chunk })
    if (entries.length > 0) after = entries[entries.length - 1]
    const due: string[] = []
    const walked: SessionEntry[][] = []
    for (const e of entries) {
      const alive = isLive(e, now, policy)
      if (!alive || e.sealed) due.push(e.id)
      if (!alive) continue
      if (e.userId !== user) {
        if (user !== undefined) walked.push(live)
        user = e.userId
        live = []
      }
      live.push(e)
    }
    // decided again on each record as it is inside the write: it may have been used since
    if (due.length > 0) n += await store.sweepSessions(due, (s) => (isLive(s, now, policy) ? withoutStaleSeals(s, now, policy) : 'delete'))
    // the users whose entries ended in this chunk (and the last one, at the end of the walk)
    for (const w of walked) await trimUser(w)
    if (entries.length < chunk) {
      await trimUser(live)
      return n
    }
    await pause()
  }
}
