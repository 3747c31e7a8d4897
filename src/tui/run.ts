/**
 * Starts the terminal UI and resolves when it has quit and the terminal is restored. Imported
 * only by `authctl tui` (dynamically): Ink and React cost startup time no other command pays.
 */
import { createElement } from 'react'
import { render } from 'ink'
import { App } from './app.js'
import type { TuiDeps } from './deps.js'

// the alternate screen: the UI takes the whole terminal and leaves the shell's screen as it was
const ENTER_ALT = '\u001b[?1049h\u001b[H'
const LEAVE_ALT = '\u001b[?1049l'

export interface RunTuiOptions {
  stdin?: NodeJS.ReadStream
  stdout?: NodeJS.WriteStream
  pollMs?: number
}

export async function runTui(deps: TuiDeps, opts: RunTuiOptions = {}): Promise<void> {
  const stdin = opts.stdin ?? process.stdin
  const stdout = opts.stdout ?? process.stdout
  const leave = (): void => {
    stdout.write(LEAVE_ALT)
  }
  stdout.write(ENTER_ALT)
  // even if something kills the process from inside, do not leave the shell on the alternate screen
  process.once('exit', leave)
  try {
    const app = render(createElement(App, { deps, pollMs: opts.pollMs }), { stdin, stdout, exitOnCtrlC: false, patchConsole: true })
    await app.waitUntilExit()
  } finally {
    process.off('exit', leave)
    leave()
  }
}
