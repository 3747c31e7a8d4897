/** The terminal UI rendered by Ink in memory (ink-testing-library), with helpers to wait and type. */
import type { Test } from 'tap'
import { render } from 'ink-testing-library'
import { createElement } from 'react'
import { App } from '../../src/tui/app.js'
import type { FakeDeps } from './fake-deps.js'

export const KEY = { enter: '\r', esc: '\u001b', up: '\u001b[A', down: '\u001b[B', tab: '\t', backspace: '\u007f', ctrlC: '\u0003' }

export const flat = (frame: string): string => frame.split('\n').map((l) => l.trim()).join(' ')

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** mounts the App on `deps` in a terminal of `columns`×`rows` (80×24 unless told) */
export function mount(t: Test, deps: FakeDeps, size: { columns?: number; rows?: number } = {}) {
  const props = { deps, pollMs: 40, rows: size.rows ?? 24, columns: size.columns ?? 80 }
  const app = render(createElement(App, props))
  t.teardown(() => app.unmount())
  const frame = (): string => app.lastFrame() ?? ''
  /** waits (at most 3 s) until the frame contains the text or matches */
  const waitFor = async (want: string | RegExp, not = false): Promise<string> => {
    const deadline = Date.now() + 3000
    for (;;) {
      const f = frame()
      // a long line wraps: strings are also looked for in the frame read as one line
      const has = typeof want === 'string' ? f.includes(want) || flat(f).includes(want) : want.test(f)
      if (has !== not) return f
      if (Date.now() > deadline) throw new Error(`timed out waiting ${not ? 'for no' : 'for'} ${String(want)}; last frame:\n${f}`)
      await sleep(10)
    }
  }
  /** writes each key separately, letting Ink read each */
  const press = async (...keys: string[]): Promise<void> => {
    for (const k of keys) {
      app.stdin.write(k)
      await sleep(15)
    }
  }
  /** the terminal is resized */
  const resize = (columns: number, rows: number): void => {
    app.rerender(createElement(App, { ...props, columns, rows }))
  }
  return { app, frame, waitFor, press, resize }
}
