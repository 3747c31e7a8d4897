/** authctl limits clear: compute only, no printing. */
import { adminDraft } from '../../core/audit.js'
import { parseLimitTarget } from '../../core/limit-clears.js'
import type { StoreDeps } from '../deps.js'
import { AppError, quoted } from '../../errors.js'
import type { View } from '../output.js'

export interface LimitsClearedDoc {
  /** the canonical email, or null */
  email: string | null
  /** the address as the limiter counts it (IPv6 as its /64), or null */
  ip: string | null
  /** the request's number in the store */
  seq: number
}

/**
 * Records the request in the store; every running authd clears those limits within a second
 * (it polls the store). Nothing to do without a running daemon: limits live in its memory.
 */
export async function limitsClear(deps: StoreDeps, args: { target: string }): Promise<LimitsClearedDoc> {
  const target = parseLimitTarget(args.target)
  if (target === null) throw new AppError('LIMITS_TARGET_INVALID', { params: { target: quoted(args.target) } })
  const at = deps.now()
  const fields = 'email' in target ? { email: target.email } : { detail: { ip: target.ipKey } }
  const seq = await deps.store.addLimitClear(target, at, [adminDraft('admin.limits.clear', { at, ...fields })])
  return 'email' in target ? { email: target.email, ip: null, seq } : { email: null, ip: target.ipKey, seq }
}

export const limitsClearView = (d: LimitsClearedDoc): View => ({
  lines: [
    d.email !== null
      ? `Cleared the login limits of ${d.email} (from every address) in every running authd.`
      : `Cleared the login limits of the address ${d.ip} in every running authd.`,
  ],
})
