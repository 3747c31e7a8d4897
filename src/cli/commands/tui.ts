/**
 * `authctl tui`: opens the store as the other commands do, and runs the terminal UI on it until
 * the admin quits. main.ts imports this module only inside the tui action, and this module is the
 * first to import Ink and React (through tui/run.js): the one place cli reaches up into tui.
 */
import type { BaseDeps } from '../deps.js'
import { openStoreDeps } from '../deps.js'
import { AppError } from '../../errors.js'
import { runTui } from '../../tui/run.js'
import { createStoreTuiDeps, storeLabel } from '../../tui/store-deps.js'

export async function tuiCommand(base: BaseDeps, io: { stdin?: NodeJS.ReadStream; stdout?: NodeJS.WriteStream } = {}): Promise<void> {
  const stdin = io.stdin ?? process.stdin
  const stdout = io.stdout ?? process.stdout
  if (stdin.isTTY !== true || stdout.isTTY !== true) {
    throw new AppError('TUI_NEEDS_TERMINAL')
  }
  const config = await base.config()
  const deps = await openStoreDeps(base, { create: false })
  try {
    const tui = createStoreTuiDeps({ admin: deps.admin, store: deps.store, storeLabel: storeLabel(deps.store), publicUrl: config.server.publicUrl, now: base.now })
    await runTui(tui, { stdin, stdout })
  } finally {
    await deps.close()
  }
}
