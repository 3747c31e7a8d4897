/**
 * The Audit view's reads: while the view shows, the newest events its filter matches, at once and
 * then every `pollMs` (at most a second, so new events come in live), and again as soon as the
 * filter changes. One read at a time; a read asked for during another runs after it, with the
 * filter as it is then. Failures become a message on screen.
 */
import { useEffect, useRef, type Dispatch } from 'react'
import { AUDIT_READ, type TuiDeps } from './deps.js'
import type { Action } from './actions.js'
import type { State } from './state.js'
import { errorMessage, oneAtATime, POLL_MS } from './use-store-effects.js'

export function useAuditFeed(deps: TuiDeps, state: State, dispatch: Dispatch<Action>, opts: { pollMs?: number } = {}): void {
  const pollMs = Math.min(opts.pollMs ?? POLL_MS, POLL_MS)
  const showing = state.view === 'audit'
  const filter = state.lists.audit.filter
  const current = useRef(filter)
  current.current = filter
  const loadNow = useRef<() => void>(() => {})

  useEffect(() => {
    if (!showing) return
    let alive = true
    const load = oneAtATime(
      () =>
        // a read that throws at once is a failure like one that rejects
        Promise.resolve()
          .then(() => deps.auditEvents({ filter: current.current, limit: AUDIT_READ }))
          .then(
            (rows) => alive && dispatch({ type: 'auditLoaded', rows }),
            (err: unknown) => alive && dispatch({ type: 'auditFailed', message: `Cannot read the audit log: ${errorMessage(err)}` }),
          ),
      () => alive,
    )
    loadNow.current = load
    load()
    const timer = setInterval(load, pollMs)
    return () => {
      alive = false
      loadNow.current = () => {}
      clearInterval(timer)
    }
  }, [deps, dispatch, pollMs, showing])

  // another filter: read what it matches now, not at the next poll
  const read = useRef(filter)
  useEffect(() => {
    if (filter === read.current) return
    read.current = filter
    loadNow.current()
  }, [filter])
}
