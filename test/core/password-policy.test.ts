/**
 * The password rules (core/password-policy.ts) of register, `authctl user passwd` and `user add`:
 * lengths counted in code points as sent, and zxcvbn's common passwords refused in any case and
 * compatibility form (README, "Configure").
 */
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import t from 'tap'
import { createPasswordPolicy, readCommonPasswords, unpackWords } from '../../src/core/password-policy.js'

const require = createRequire(import.meta.url)

t.test('refuses a password shorter or longer than the limits, naming the limit', async (t) => {
  const policy = await createPasswordPolicy({ minLength: 10, maxLength: 20 })
  t.throws(() => policy.check('nine-char'), { name: 'AppError', code: 'PASSWORD_TOO_SHORT', message: 'Password must be at least 10 characters' })
  t.throws(() => policy.check('x'.repeat(21)), { code: 'PASSWORD_TOO_LONG', message: 'Password must be at most 20 characters' })
  t.doesNotThrow(() => policy.check('ten-chars!'), 'exactly the minimum')
  t.doesNotThrow(() => policy.check('twenty-characters-ok'), 'exactly the maximum')
})

t.test('counts code points as sent: an emoji is one character, a ligature is one before NFKC', async (t) => {
  const policy = await createPasswordPolicy({ minLength: 4, maxLength: 4 })
  t.doesNotThrow(() => policy.check('\u{1F600}\u{1F601}\u{1F602}\u{1F603}'), 'four emoji (eight UTF-16 units)')
  t.doesNotThrow(() => policy.check('\uFB03\uFB03\uFB03\uFB03'), 'four ligatures (twelve letters after NFKC)')
  t.throws(() => policy.check('\u{1F600}\u{1F601}\u{1F602}'), { code: 'PASSWORD_TOO_SHORT' })
})

t.test('refuses a common password in any case and compatibility form, after the length checks', async (t) => {
  const policy = await createPasswordPolicy({ minLength: 8, maxLength: 64 })
  for (const p of ['password', 'PASSWORD', 'PassWord', '\uFF50assword']) {
    t.throws(() => policy.check(p), { code: 'PASSWORD_TOO_COMMON', message: 'Password is too common' }, p)
  }
  t.throws(() => policy.check('123456'), { code: 'PASSWORD_TOO_SHORT' }, 'a short common one is too short first')
  t.doesNotThrow(() => policy.check('lantern-orchard-41'))
})

t.test("the common passwords read from the package's file are the package's own list, word for word", async (t) => {
  const { dictionary } = (await import('@zxcvbn-ts/language-common')) as { dictionary: Record<string, string[]> }
  const theirs = dictionary['passwords-common']!
  const ours = await readCommonPasswords()
  t.ok(theirs.length > 40_000, `the package lists ${theirs.length}`)
  t.equal(ours.size, new Set(theirs).size)
  t.same(theirs.filter((w) => !ours.has(w)), [], 'none of theirs missing')
})

t.test('unpacks the packed format as the package decodes it', async (t) => {
  const decompress = (require('@zxcvbn-ts/dictionary-compression/decompress') as { default: (s: string) => string[] }).default
  for (const packed of ['Aabc', 'AabcCdAxyzBq', 'Apass123Ewor!dZzz', 'Ab12Cc', 'AaAaAb']) {
    t.same([...unpackWords(packed)!], [...new Set(decompress(packed))], packed)
  }
  t.equal(unpackWords(''), undefined, 'nothing')
  t.equal(unpackWords('abcB'), undefined, 'not starting with a capital')
})

t.test("falls back to the package's import when the file is not as expected", async (t) => {
  const dir = t.testdir()
  writeFileSync(join(dir, 'packed.cjs'), 'var passwords = decompress__default.default("AhunterBunter2");')
  t.same([...(await readCommonPasswords(join(dir, 'packed.cjs')))], ['hunter', 'hunter2'], 'a file as the package ships it: its words')
  const files = [
    ['other.cjs', 'module.exports = ["x"]'],
    ['escaped.cjs', 'decompress("Aab\\"c")'],
    ['another-call.cjs', 'require("Aabc"); module.exports = []'],
  ] as const
  for (const [name, text] of files) {
    writeFileSync(join(dir, name), text)
    const words = await readCommonPasswords(join(dir, name))
    t.ok(words.has('password') && words.size > 40_000, `${name}: the package's list`)
  }
  const missing = await readCommonPasswords(join(dir, 'absent.cjs'))
  t.ok(missing.has('password'), 'a missing file: the package\'s list')
})

