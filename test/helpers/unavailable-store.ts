/**
 * A real store that can be made unreachable: while `down` is set, every method but close()
 * rejects with STORE_UNAVAILABLE, as the PostgreSQL store does when its database is gone; after
 * `hangMs` when set, as it does when the database hangs (its deadline). `pings` counts the calls
 * of ping() (the readiness probe's), `meReads` those of meRead() (/me's).
 */
import { AppError } from '../../src/errors.js'
import type { Store } from '../../src/store/store.js'

export interface Switchable {
  store: Store
  down: boolean
  hangMs: number
  /** methods that fail as `down` makes them, while the others answer */
  failing: Set<string>
  pings: number
  meReads: number
}

export function switchable(real: Store): Switchable {
  const state: Switchable = { store: real, down: false, hangMs: 0, failing: new Set(), pings: 0, meReads: 0 }
  state.store = new Proxy(real, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown
      if (typeof value !== 'function' || prop === 'close') return value
      return (...args: unknown[]) => {
        if (prop === 'ping') state.pings++
        if (prop === 'meRead') state.meReads++
        if (state.down || state.failing.has(String(prop))) {
          const refused = (): Promise<never> => Promise.reject(new AppError('STORE_UNAVAILABLE', { message: 'the database does not answer' }))
          return state.hangMs === 0 ? refused() : new Promise((r) => setTimeout(r, state.hangMs)).then(refused)
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
  return state
}
