/**
 * A real store that can be made unreachable: while `down` is set, every method but close()
 * rejects with STORE_UNAVAILABLE, as the PostgreSQL store does when its database is gone.
 * `pings` counts the calls of ping() (the readiness probe's).
 */
import { AppError } from '../../src/errors.js'
import type { Store } from '../../src/store/store.js'

export interface Switchable {
  store: Store
  down: boolean
  pings: number
}

export function switchable(real: Store): Switchable {
  const state: Switchable = { store: real, down: false, pings: 0 }
  state.store = new Proxy(real, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown
      if (typeof value !== 'function' || prop === 'close') return value
      return (...args: unknown[]) => {
        if (prop === 'ping') state.pings++
        if (state.down) return Promise.reject(new AppError('STORE_UNAVAILABLE', { message: 'the database does not answer' }))
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
  return state
}
