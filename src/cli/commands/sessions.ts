/** authctl sessions list | revoke: compute only, no printing. */
import type { SessionSummary } from '../../core/admin.js'
import type { StoreDeps } from '../deps.js'
import { AppError } from '../../errors.js'
import { cell, iso, jsonArrayPages, shortTime, tablePages, type View } from '../output.js'
import { userDoc, type UserDoc } from './user.js'

/** a live session as authctl shows it (never a token or its hash) */
export interface SessionDoc {
  id: string
  userId: string
  email: string | null
  createdAt: string
  lastUsedAt: string
  /** when it dies if left unused: the earlier of the idle and the absolute expiry */
  expiresAt: string
  absoluteExpiresAt: string
  ip: string
  userAgent: string
}

export const sessionDoc = (s: SessionSummary): SessionDoc => ({
  id: s.id,
  userId: s.userId,
  email: s.email,
  createdAt: iso(s.createdAt)!,
  lastUsedAt: iso(s.lastUsedAt)!,
  expiresAt: iso(s.expiresAt)!,
  absoluteExpiresAt: iso(s.absoluteExpiresAt)!,
  ip: s.ip,
  userAgent: s.userAgent,
})

const t = (s: string): string => shortTime(Date.parse(s))

/**
 * `sessions list`, printed while it is read (a store may hold 100 000 sessions: they are never
 * all in memory): with `json`, the document `{"sessions": [...]}`, else the table. An unknown
 * --user fails before anything is printed.
 */
export async function sessionsListPrint(
  deps: StoreDeps,
  args: { user?: string },
  out: { json: boolean; write: (s: string) => boolean | void; drained?: () => Promise<void> },
): Promise<void> {
  // an unknown user fails here, before anything is written
  if (args.user !== undefined) await deps.admin.resolveUser(args.user)
  const pages = deps.admin.sessionPages(args.user)
  // a page is read only once the one before has been taken: a slow reader holds nothing up here
  const write = async (text: string): Promise<void> => {
    if (out.write(text) === false && out.drained !== undefined) await out.drained()
  }
  if (out.json) {
    const doc = jsonArrayPages('sessions')
    await write(doc.open())
    for await (const page of pages) await write(doc.items(page.map(sessionDoc)))
    await write(doc.close())
    return
  }
  const table = tablePages(['SESSION', 'USER', 'CREATED', 'LAST USED', 'EXPIRES', 'IP', 'USER AGENT'])
  let any = false
  for await (const page of pages) {
    any = true
    await write(table(page.map(sessionDoc).map((s) => [s.id, cell(s.email ?? s.userId, 40), t(s.createdAt), t(s.lastUsedAt), t(s.expiresAt), cell(s.ip, 45), cell(s.userAgent, 40)])))
  }
  if (!any) await write('No live sessions.\n')
}

export interface RevokedDoc {
  revoked: number
  /** set when one session was revoked */
  session?: SessionDoc
  /** set with --user */
  user?: UserDoc
}

export async function sessionsRevoke(deps: StoreDeps, args: { sessionId?: string; user?: string; all: boolean; yes: boolean }): Promise<RevokedDoc> {
  const chosen = [args.sessionId !== undefined, args.user !== undefined, args.all].filter(Boolean).length
  if (chosen !== 1) throw new AppError('REVOKE_WHAT')
  if (args.sessionId !== undefined) return { revoked: 1, session: sessionDoc(await deps.admin.revokeSession(args.sessionId)) }
  if (args.user !== undefined) {
    const r = await deps.admin.revokeUserSessions(args.user)
    return { revoked: r.revoked, user: userDoc({ ...r.user, sessions: 0 }) }
  }
  // README, "Administer with authctl": `--all --yes`. Unlike the other destructive commands, which ask on a terminal,
  // signing out everyone is never one keystroke away: the flag is required even there.
  if (!args.yes) throw new AppError('REVOKE_ALL_NEEDS_YES')
  return { revoked: (await deps.admin.revokeAllSessions()).revoked }
}
export const sessionsRevokeView = (d: RevokedDoc): View => {
  if (d.session !== undefined) return { lines: [`Revoked session ${d.session.id} of ${d.session.email ?? d.session.userId}.`] }
  const n = `${d.revoked} session${d.revoked === 1 ? '' : 's'}`
  return { lines: [d.user !== undefined ? `Revoked ${n} of ${d.user.email}.` : `Revoked ${n}.`] }
}
