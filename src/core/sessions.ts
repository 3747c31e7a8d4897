/**
 * Sessions and refresh-token rotation. A refresh token is 256 random bits; the store keeps only
 * its SHA-256, so a copy of the store cannot be replayed. The successor of a token is an HMAC of
 * it under a secret kept apart from the session records: the daemon can hand out the *same*
 * successor again within the reuse grace without ever storing a live token.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { RefreshDecision, SessionRecord, Store } from '../store/store.js'

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('base64url')

export const newRefreshToken = (): string => randomBytes(32).toString('base64url')

export const newSessionId = (): string => randomBytes(16).toString('base64url')

/** A syntactically possible refresh token: 43 base64url characters (256 bits). */
export const REFRESH_TOKEN = /^[A-Za-z0-9_-]{43}$/

export function successorToken(secret: Buffer, token: string): string {
  return createHmac('sha256', secret).update(token).digest('base64url')
}

// constant-time so a timing side channel cannot walk a stored hash byte by byte
const sameHash = (a: string, b: string): boolean => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

export interface SessionPolicy {
  idleTtlMs: number
  absoluteTtlMs: number
  reuseGraceMs: number
}

/** Whether a session can still be used at `now` (for access tokens and refresh alike). */
export function isLive(s: SessionRecord, now: number, policy: SessionPolicy): boolean {
  return now < s.expiresAt && now < s.lastUsedAt + policy.idleTtlMs
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
  ctx: { now: number; secret: Buffer; policy: SessionPolicy },
): RefreshDecision<RefreshOutcome> {
  if (session === undefined) return { action: 'none', result: { kind: 'unknown' } }
  const { now, policy } = ctx
  if (!isLive(session, now, policy)) return { action: 'revoke', result: { kind: 'expired', session } }

  if (sameHash(session.refreshHash, presented.hash)) {
    const token = successorToken(ctx.secret, presented.token)
    const next: SessionRecord = {
      ...session,
      lastUsedAt: now,
      previousHash: session.refreshHash,
      refreshHash: hashToken(token),
      rotatedAt: now,
      generation: session.generation + 1,
    }
    return { action: 'rotate', session: next, result: { kind: 'rotated', session: next, token } }
  }

  // The token this one replaced, presented again shortly after its rotation: a second tab, or a
  // response lost on the way. Answer with the same successor, if that successor is still live.
  if (
    session.previousHash !== null &&
    session.rotatedAt !== null &&
    sameHash(session.previousHash, presented.hash) &&
    now - session.rotatedAt <= policy.reuseGraceMs
  ) {
    const token = successorToken(ctx.secret, presented.token)
    if (sameHash(hashToken(token), session.refreshHash)) {
      return { action: 'none', result: { kind: 'grace', session, token } }
    }
  }

  // A used token presented again: someone holds a copy. End the whole session.
  return { action: 'revoke', result: { kind: 'reuse', session } }
}

/** Deletes sessions past their idle or absolute expiry; returns how many. */
export async function sweepExpiredSessions(store: Store, now: number, policy: SessionPolicy): Promise<number> {
  let n = 0
  for (const s of store.listSessions()) {
    if (!isLive(s, now, policy) && (await store.revokeSession(s.id))) n++
  }
  return n
}
