/**
 * The terminal UI: one reducer, the key hook, the effects hook, and the screen. The store comes
 * in as TuiDeps, so tests hand in a fake or a temp store.
 */
import { useApp, useStdout } from 'ink'
import { useEffect, useReducer } from 'react'
import type { TuiDeps } from './deps.js'
import { reducer } from './reducer.js'
import { Screen } from './screen.js'
import { initialState } from './state.js'
import { useKeys } from './use-keys.js'
import { useStoreEffects } from './use-store-effects.js'
import { useAuditFeed } from './use-audit-feed.js'

/** `rows` and `columns` stand in for the terminal's size (tests) */
export function App(props: { deps: TuiDeps; pollMs?: number; rows?: number; columns?: number }) {
  const { deps } = props
  const [state, dispatch] = useReducer(reducer, undefined, () =>
    initialState({ smokeUrl: deps.defaultSmokeUrl, smokeSteps: deps.smokeStepNames }),
  )
  useKeys(state, dispatch)
  useStoreEffects(deps, state, dispatch, { pollMs: props.pollMs })
  useAuditFeed(deps, state, dispatch, { pollMs: props.pollMs })

  const { exit } = useApp()
  useEffect(() => {
    if (state.quit) exit()
  }, [state.quit, exit])

  // the list shows as many rows as the terminal has room for; too small a terminal is told so
  const { stdout } = useStdout()
  useEffect(() => {
    const fit = (): void => dispatch({ type: 'resize', columns: props.columns ?? stdout.columns ?? 80, rows: props.rows ?? stdout.rows ?? 24 })
    fit()
    stdout.on('resize', fit)
    return () => {
      stdout.off('resize', fit)
    }
  }, [stdout, props.rows, props.columns])

  return <Screen state={state} storeLabel={deps.storeLabel} now={deps.now()} />
}
