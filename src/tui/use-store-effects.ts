/**
 * The one place the UI has effects: it reads the store about once a second (a user added by
 * `authctl user add` in another terminal shows up on its own), runs the operations the reducer
 * described in State.tasks, and reports every outcome back as an action. Failures become
 * messages on screen; nothing thrown here reaches React.
 */
import { useEffect, useRef, type Dispatch } from 'react'
import type { TuiDeps } from './deps.js'
import type { Action } from './reducer.js'
import type { RunningTask, State, TaskResult } from './state.js'

export const POLL_MS = 1000

export function errorMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err)
  return text.split('\n')[0] || 'Unknown error'
}

/**
 * A reader that runs `read` one at a time: a call during a read runs it once more after it (with
 * whatever it reads then), however many calls came meanwhile, while `alive()` holds. `read`
 * reports its own outcome and never rejects.
 */
export function oneAtATime(read: () => Promise<unknown>, alive: () => boolean): () => void {
  let loading = false
  let again = false
  const load = (): void => {
    if (loading) {
      again = true
      return
    }
    loading = true
    Promise.resolve()
      .then(read)
      .finally(() => {
        loading = false
        if (again && alive()) {
          again = false
          load()
        }
      })
  }
  return load
}

export function useStoreEffects(deps: TuiDeps, state: State, dispatch: Dispatch<Action>, opts: { pollMs?: number } = {}): void {
  const pollMs = opts.pollMs ?? POLL_MS
  const alive = useRef(true)
  const loadNow = useRef<() => void>(() => {})
  const started = useRef(new Set<number>())
  // the Sessions view's filter, read by each load: the sessions read are those it matches
  const sessionFilter = useRef(state.lists.sessions.filter)
  sessionFilter.current = state.lists.sessions.filter
  const sessionExact = useRef(state.lists.sessions.exact)
  sessionExact.current = state.lists.sessions.exact

  // operations finished so far: a read begun before one finished may not hold its change
  const finished = useRef(0)

  useEffect(() => {
    alive.current = true
    // a read in progress when the UI quits stops at its next step
    const quit = new AbortController()
    const load = oneAtATime(() => {
      const before = finished.current
      // a read that throws at once is a failure like one that rejects
      return Promise.resolve()
        .then(() => deps.snapshot({ sessionFilter: sessionFilter.current, sessionExact: sessionExact.current, signal: quit.signal }))
        .then(
          (snapshot) => {
            // older than what the screen shows (a rotated key would vanish and take the
            // selection with it); the read the operation asked for comes next
            if (!alive.current || finished.current !== before) return
            dispatch({ type: 'loaded', snapshot })
          },
          (err: unknown) => alive.current && dispatch({ type: 'loadFailed', message: `Cannot read the store: ${errorMessage(err)}` }),
        )
    }, () => alive.current)
    loadNow.current = load
    load()
    const timer = setInterval(load, pollMs)
    return () => {
      alive.current = false
      quit.abort()
      clearInterval(timer)
    }
  }, [deps, dispatch, pollMs])

  // another filter: read the sessions it matches now, not at the next poll
  const filter = state.lists.sessions.filter
  const readFilter = useRef(filter)
  useEffect(() => {
    if (filter === readFilter.current) return
    readFilter.current = filter
    loadNow.current()
  }, [filter])

  useEffect(() => {
    for (const running of state.tasks) {
      if (started.current.has(running.id)) continue
      started.current.add(running.id)
      run(deps, running, dispatch, () => alive.current).then(
        (result) => {
          if (!alive.current) return
          finished.current++
          dispatch({ type: 'taskDone', id: running.id, result })
          loadNow.current()
        },
        (err: unknown) => {
          if (!alive.current) return
          finished.current++
          dispatch({ type: 'taskFailed', id: running.id, message: errorMessage(err) })
          loadNow.current()
        },
      )
    }
  }, [deps, dispatch, state.tasks])
}

async function run(deps: TuiDeps, { id, task }: RunningTask, dispatch: Dispatch<Action>, alive: () => boolean): Promise<TaskResult> {
  switch (task.kind) {
    case 'addUser':
      return { user: await deps.addUser(task.email, task.password) }
    case 'setPassword':
      return { count: await deps.setPassword(task.userId, task.password) }
    case 'setDisabled':
      return { count: await deps.setDisabled(task.userId, task.disabled) }
    case 'removeUser':
      await deps.removeUser(task.userId)
      return {}
    case 'resetMfa':
      return await deps.resetMfa(task.userId)
    case 'revokeSession':
      await deps.revokeSession(task.sessionId)
      return {}
    case 'revokeUserSessions':
      return { count: await deps.revokeUserSessions(task.userId) }
    case 'rotateKey':
      return { key: await deps.rotateKey() }
    case 'checkRevokeKey':
      await deps.checkRevokeKey(task.kid)
      return {}
    case 'revokeKey':
      await deps.revokeKey(task.kid)
      return {}
    case 'smoke': {
      const passed = await deps.smoke({ url: task.url, email: task.email, password: task.password }, (step) => {
        if (alive()) dispatch({ type: 'smokeStep', id, step })
      })
      return { passed }
    }
  }
}
