/** The password rules of register, `authctl user passwd` and `user add`. */
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
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
let cached: Promise<ReadonlySet<string>> | undefined
function loadCommonPasswords(): Promise<ReadonlySet<string>> {
  cached ??= readCommonPasswords()
  return cached
}

const require = createRequire(import.meta.url)

/**
 * The list, from the file it ships in (`@zxcvbn-ts/language-common`'s `passwords.json.cjs`, or
 * `file`): its one string literal decoded here (unpackWords), straight into the Set. That is a
 * third of the package's own decoding, which is a tenth of authd's start-up (about 40 ms against
 * 16 here). Should the package ship the list another way, its own import is used instead; a test
 * checks that both give the same words.
 */
export async function readCommonPasswords(file?: string): Promise<ReadonlySet<string>> {
  try {
    const source = await readFile(file ?? require.resolve('@zxcvbn-ts/language-common/dist/passwords.json.cjs'), 'utf8')
    // the one argument of its decompress…("…") call: a string of no escapes, taken as it is
    const literal = /decompress[\w$.]*\("([^"\\]*)"\)/.exec(source)
    const words = literal === null ? undefined : unpackWords(literal[1]!)
    if (words !== undefined) return words
  } catch {
    // not where it was: the package's import below
  }
  const m = await import('@zxcvbn-ts/language-common')
  return new Set((m.dictionary as Record<string, string[]>)['passwords-common'])
}

/**
 * zxcvbn's packed word list (@zxcvbn-ts/dictionary-compression): each word is a capital letter,
 * how many leading characters it shares with the word before it (A none, B one, …), then the rest
 * of it (no capitals). Undefined when `packed` is not such a list.
 */
export function unpackWords(packed: string): Set<string> | undefined {
  const words = new Set<string>()
  let last = ''
  let i = 0
  while (i < packed.length) {
    const shared = packed.charCodeAt(i) - 65
    if (shared < 0 || shared > 25) return undefined
    let end = i + 1
    while (end < packed.length) {
      const c = packed.charCodeAt(end)
      if (c >= 65 && c <= 90) break
      end++
    }
    last = last.slice(0, shared) + packed.slice(i + 1, end)
    words.add(last)
    i = end
  }
  return words.size > 0 ? words : undefined
}
