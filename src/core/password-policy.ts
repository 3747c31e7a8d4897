/** The password rules of register, `authctl user passwd` and `user add`. */
import { AppError } from '../errors.js'

export interface PasswordPolicy {
  /** throws the client-visible error for a password that breaks the rules */
  check(password: string): void
}

export async function createPasswordPolicy(opts: { minLength: number; maxLength: number }): Promise<PasswordPolicy> {
  const common = await loadCommonPasswords()
  return {
    check(password) {
      // lengths in code points of the password as sent (README, "Configure"), not UTF-16 units (an emoji
      // is one character to the user) and not its NFKC form, which is what gets hashed: the
      // ligature "ﬃ" is one character typed, three after NFKC
      const length = [...password].length
      if (length < opts.minLength) throw new AppError('PASSWORD_TOO_SHORT', { params: { min: opts.minLength } })
      if (length > opts.maxLength) throw new AppError('PASSWORD_TOO_LONG', { params: { max: opts.maxLength } })
      if (common.has(password.normalize('NFKC').toLowerCase())) throw new AppError('PASSWORD_TOO_COMMON')
    },
  }
}

/** the bundled list of common passwords (zxcvbn's ~49 000), read once per process: it is immutable */
let cached: Promise<Set<string>> | undefined
function loadCommonPasswords(): Promise<Set<string>> {
  cached ??= import('@zxcvbn-ts/language-common').then(
    (m) => new Set((m.dictionary as Record<string, string[]>)['passwords-common']),
  )
  return cached
}
