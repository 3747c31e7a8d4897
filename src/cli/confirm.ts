/**
 * Confirmation of destructive commands (user rm, keys revoke, sessions revoke --all): `--yes`
 * skips the question; without it, a terminal is asked and anything else is refused.
 */
import { AppError } from '../errors.js'
import { readFirstLine, type PasswordIo } from './password-input.js'

/** Asks before doing `action` ("delete user ann@example.com"); throws unless confirmed. */
export type Confirm = (action: string, yes: boolean) => Promise<void>

export function createConfirm(io: PasswordIo): Confirm {
  return async (action, yes) => {
    if (yes) return
    if (io.input.isTTY !== true) throw new AppError('CONFIRMATION_NEEDED', { params: { action } })
    io.prompt(`${action[0]!.toUpperCase()}${action.slice(1)}? [y/N] `)
    const answer = await readFirstLine(io.input, 1024)
    if (answer === null || !/^\s*y(es)?\s*$/i.test(answer)) throw new AppError('NOT_CONFIRMED', { params: { action } })
  }
}
