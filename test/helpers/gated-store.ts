/**
 * A gate in front of some of a real store's methods, for tests of what happens while a request
 * waits at its write: `hold()` makes the next call of any of them say it reached the gate, then
 * wait until released; the call then goes to the store as it is by then.
 */
import type { Test } from 'tap'
import type { Store } from '../../src/store/store.js'
import { buildApp, openTestStore, type TestApp } from './app.js'

export interface Gate {
  /** resolves once the held call arrived at the gate */
  reached: Promise<void>
  /** lets it through */
  release: () => void
}

export function gatedStore(store: Store, methods: ReadonlyArray<keyof Store>): { store: Store; hold: () => Gate } {
  let gate: { reached: () => void; released: Promise<void> } | null = null
  const wait = async (): Promise<void> => {
    const g = gate
    if (g === null) return
    gate = null
    g.reached()
    await g.released
  }
  const gated: Record<string, unknown> = { ...store }
  for (const m of methods) {
    const real = store[m] as (...a: unknown[]) => Promise<unknown>
    gated[m] = async (...a: unknown[]) => {
      await wait()
      return real(...a)
    }
  }
  const hold = (): Gate => {
    let reached!: () => void
    let release!: () => void
    const r = new Promise<void>((res) => (reached = res))
    gate = { reached, released: new Promise<void>((res) => (release = res)) }
    return { reached: r, release }
  }
  return { store: gated as unknown as Store, hold }
}

/** the app on a real store (LMDB, or PostgreSQL under TEST_STORE_BACKEND) whose `methods` wait while `hold()` is on */
export async function gatedApp(t: Test, methods: ReadonlyArray<keyof Store>, env: Record<string, string>): Promise<{ app: TestApp; store: Store; hold: () => Gate }> {
  const dir = t.testdir()
  const store = await openTestStore(t, dir)
  const gated = gatedStore(store, methods)
  const app = await buildApp(t, { dir, env, store: gated.store })
  return { app, store, hold: gated.hold }
}
