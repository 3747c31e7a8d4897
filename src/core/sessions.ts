/**
 * Sessions and refresh-token rotation. Every refresh token is 256 bits from the OS CSPRNG; the
 * store keeps only its SHA-256, so a copy of the store cannot be replayed. To hand out the *same*
 * successor again within the reuse grace, the successor is kept sealed (AES-256-GCM) under a key
 * derived from the token it replaced: only whoever holds that previous token can open it, and the
 * store alone never can.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import type { RefreshDecision, SessionRecord, Store } from '../store/store.js'

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('base64url')

export const newRefreshToken = (): string => randomBytes(32).toString('base64url')

export const newSessionId = (): string => randomBytes(16).toString('base64url')

/** A syntactically possible refresh token: 43 base64url characters (256 bits). */
export const REFRESH_TOKEN = /^[A-Za-z0-9_-]{43}$/

const sealKey = (previous: string): Buffer =>
  Buffer.from(hkdfSync('sha256', previous, Buffer.alloc(0), 'authd refresh successor', 32))

/** Seals `successor` so that only the holder of `previous` can open it. */
export function sealSuccessor(previous: string, successor: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', sealKey(previous), iv)
  const body = Buffer.concat([cipher.update(successor, 'utf8'), cipher.final()])
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')
}

/** The successor sealed under `previous`, or null if it does not open with that token. */
export function openSuccessor(previous: string, sealed: string): string | null {
  const raw = Buffer.from(sealed, 'base64url')
  if (raw.length < 12 + 16 + 1) return null
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealKey(previous), raw.subarray(0, 12))
    decipher.setAuthTag(raw.subarray(raw.length - 16))
    return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8')
  } catch {
    return null
  }
}

// constant-time so a timing side channel cannot walk a stored hash byte by byte
const sameHash = (a: string, b: string): boolean => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

export interface SessionPolicy {
  idleTtlMs: number
  absoluteTtlMs: number
  reuseGraceMs: number
}

/** Whether a session can still be used at `now` (for access tokens and refresh alike). */
export function isLive(s: Pick<SessionRecord, 'expiresAt' | 'lastUsedAt'>, now: number, policy: SessionPolicy): boolean {
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
  ctx: { now: number; policy: SessionPolicy },
): RefreshDecision<RefreshOutcome> {
  if (session === undefined) return { action: 'none', result: { kind: 'unknown' } }
  const { now, policy } = ctx
  if (!isLive(session, now, policy)) return { action: 'revoke', result: { kind: 'expired', session } }

  if (sameHash(session.refreshHash, presented.hash)) {
    const token = newRefreshToken()
    const next: SessionRecord = {
      ...session,
      lastUsedAt: now,
      previousHash: session.refreshHash,
      refreshHash: hashToken(token),
      sealedSuccessor: sealSuccessor(presented.token, token),
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
    const token = session.sealedSuccessor === undefined ? null : openSuccessor(presented.token, session.sealedSuccessor)
    if (token !== null && sameHash(hashToken(token), session.refreshHash)) {
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
