/**
 * Canonical email (docs/api.md, "Every response": trim, NFKC, lower-case, the domain in ASCII) and register-time validity. Properties run
 * over arbitrary Unicode and over an alphabet of the characters that make canonicalisation hard:
 * compatibility forms, spacing marks NFKC turns into a space plus a combining mark, the KELVIN
 * and ANGSTROM signs, dotted capital I, final sigma, ligatures.
 */
import fc from 'fast-check'
import t from 'tap'
import { canonicalEmail, checkEmail, mayBeStoredEmail, registrableEmail, storedEmailProblem } from '../../src/core/email.js'

const isValidEmail = (email: string): boolean => registrableEmail(email) !== null

const TRICKY = [
  ' ', '\t', '\n', '\u00a0', '\u3000', '\u2003', '\u200b', '\ufeff',
  '\u00a8', '\u00af', '\u00b4', '\u00b8', '\u02d8', '\u203e', '\ufe49', '\uffe3', '\u309b',
  '\u212a', '\u212b', '\u2126', '\u0130', '\u03a3', '\u03c2', '\u00df', '\u1e9e', '\ufb01', '\u2460',
  '\uff21', '\uff41', '\uff20', '\u0301', '\u0308', 'A', 'a', 'K', 'k', '@', '.', 'Z',
]
const trickyString = fc.array(fc.constantFrom(...TRICKY), { maxLength: 12 }).map((a) => a.join(''))
const anyString = fc.string({ unit: 'grapheme', maxLength: 40 })
const binaryString = fc.string({ unit: 'binary', maxLength: 40 })

/** Rewrites a plain ASCII email letter by letter: either case, full-width forms, KELVIN SIGN for k */
function variant(plain: string, choices: number[]): string {
  let out = ''
  for (let i = 0; i < plain.length; i++) {
    const ch = plain[i]!
    const c = choices[i % choices.length]!
    if (/[a-z]/.test(ch)) {
      const upper = ch.toUpperCase()
      const forms = [ch, upper, String.fromCodePoint(0xff41 + ch.charCodeAt(0) - 97), String.fromCodePoint(0xff21 + upper.charCodeAt(0) - 65)]
      if (ch === 'k') forms.push('\u212a')
      out += forms[c % forms.length]
    } else if (ch === '@') out += c % 2 === 0 ? '@' : '\uff20'
    else if (ch === '.') out += c % 2 === 0 ? '.' : '\uff0e'
    else out += ch
  }
  return out
}

t.test('canonicalises by trim, NFKC, then lower-case', async (t) => {
  t.equal(canonicalEmail('  Ann@Example.COM\t'), 'ann@example.com')
  t.equal(canonicalEmail('\uff21\uff4e\uff4e\uff20example.com'), 'ann@example.com', 'full-width letters and at sign')
  t.equal(canonicalEmail('\u212aate@example.com'), 'kate@example.com', 'KELVIN SIGN is a k')
  t.equal(canonicalEmail('\u212bsa@example.com'), '\u00e5sa@example.com', 'ANGSTROM SIGN is an å')
  t.equal(canonicalEmail('\ufb01le@example.com'), 'file@example.com', 'the fi ligature is f, i')
  t.equal(canonicalEmail('Stra\u00dfe@example.com'), 'stra\u00dfe@example.com', 'ß is kept (lower-case, not case-folded)')
})

t.test('is idempotent on arbitrary Unicode', async () => {
  const withDomain = (arb: fc.Arbitrary<string>): fc.Arbitrary<string> => fc.tuple(arb, arb).map(([l, d]) => `${l}@${d}`)
  for (const arb of [anyString, binaryString, trickyString, withDomain(anyString), withDomain(binaryString), withDomain(trickyString)]) {
    fc.assert(
      fc.property(arb, (s) => canonicalEmail(canonicalEmail(s)) === canonicalEmail(s)),
      { numRuns: 3000 },
    )
  }
})

t.test('is idempotent for a spacing mark that NFKC turns into a space (U+00A8 DIAERESIS)', async (t) => {
  // NFKC('\u00a8') is ' \u0308': without a trim after normalising, a second pass changes it
  const once = canonicalEmail('\u00a8ann@example.com')
  t.equal(canonicalEmail(once), once)
  t.notMatch(once, /^\s|\s$/, 'the canonical form never starts or ends with whitespace')
})

t.test('is idempotent for every single code point, alone and between letters', async (t) => {
  let bad = 0
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue
    const ch = String.fromCodePoint(cp)
    for (const s of [ch, `a${ch}`, `${ch}a`, ` ${ch}`, `${ch} `]) {
      const c = canonicalEmail(s)
      if (canonicalEmail(c) !== c) {
        bad++
        break
      }
    }
  }
  t.equal(bad, 0, 'code points whose canonical form changes on a second pass')
})

t.test('maps case and Unicode variants of an email to one canonical form', async () => {
  const local = fc.stringMatching(/^[a-z][a-z0-9.]{0,10}[a-z0-9]$/)
  const domain = fc.stringMatching(/^[a-z]{1,10}\.[a-z]{2,5}$/)
  fc.assert(
    fc.property(local, domain, fc.array(fc.nat(9), { minLength: 1, maxLength: 30 }), fc.constantFrom('', ' ', '\t', '\u00a0', '\u3000'), (l, d, choices, pad) => {
      const plain = `${l}@${d}`
      return canonicalEmail(pad + variant(plain, choices) + pad) === plain
    }),
    { numRuns: 2000 },
  )
})

t.test('accepts exactly one @ with both sides non-empty, within 254 bytes, without controls or spaces', async (t) => {
  for (const ok of ['a@b', 'ann@example.com', 'ann+tag@example.co.uk', '\u00e5sa@example.com', `${'a'.repeat(240)}@example.com`]) {
    t.ok(isValidEmail(ok), ok.slice(0, 30))
  }
  const bad = [
    '', 'ann', '@example.com', 'ann@', 'a@b@c', 'ann @example.com', 'ann@exa\u0000mple.com', 'ann@example.com\u007f',
    'ann@example\u0085.com', `${'a'.repeat(250)}@example.com`, `${'\u00e5'.repeat(125)}@ex.com`, 'ann@\ud800x.com',
  ]
  for (const no of bad) t.notOk(isValidEmail(no), JSON.stringify(no).slice(0, 30))
})

t.test('only a non-empty email within 254 bytes may be stored', async (t) => {
  t.notOk(mayBeStoredEmail(''))
  t.ok(mayBeStoredEmail('a@b'))
  t.notOk(mayBeStoredEmail('a'.repeat(255)))
  t.notOk(mayBeStoredEmail('\u00e5'.repeat(128)), 'counted in UTF-8 bytes, not characters')
  t.notOk(mayBeStoredEmail('a\u0000b@example.com'), 'a NUL: never stored (PostgreSQL cannot hold one in text)')
  t.notOk(mayBeStoredEmail('a\u001fb@example.com'), 'a C0 control character')
  t.notOk(mayBeStoredEmail('a\u007fb@example.com'), 'DEL')
  t.notOk(mayBeStoredEmail('a\u0085b@example.com'), 'a C1 control character')
  t.equal(storedEmailProblem('a@b'), undefined)
  t.equal(storedEmailProblem(''), 'is empty')
  t.equal(storedEmailProblem('a'.repeat(255)), 'is too long')
  t.equal(storedEmailProblem('a\u0000b@example.com'), 'contains a control character')
})

t.test('puts the domain in its UTS #46 ToASCII form: a U-label and its A-label are one address', async (t) => {
  t.equal(canonicalEmail('ann@b\u00fccher.example'), 'ann@xn--bcher-kva.example')
  t.equal(canonicalEmail('ann@xn--bcher-kva.example'), 'ann@xn--bcher-kva.example')
  t.equal(canonicalEmail('Ann@B\u00dcCHER.Example'), 'ann@xn--bcher-kva.example')
  t.equal(canonicalEmail('ann@example\u3002com'), 'ann@example.com', 'the ideographic full stop is a dot')
  t.equal(canonicalEmail('ann@ex\u00adample.com'), 'ann@example.com', 'ToASCII drops a soft hyphen')
  t.equal(canonicalEmail('b\u00fccher@b\u00fccher.example'), 'b\u00fccher@xn--bcher-kva.example', 'the local part is left as it is')
  t.equal(canonicalEmail('ann@exa mple.com'), 'ann@exa mple.com', 'a domain ToASCII refuses is kept (nothing is stored under it)')
  t.equal(registrableEmail(' Ann@B\u00fccher.Example '), 'ann@xn--bcher-kva.example', 'registered under the ASCII form')
})

const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/u
const BIDI_CONTROL = /\p{Bidi_Control}/u
/** every code point with the property (a few hundred assigned, over 4000 reserved) */
const withProperty = (re: RegExp): string[] => {
  const out: string[] = []
  for (let cp = 0; cp <= 0x10ffff; cp++) if (!(cp >= 0xd800 && cp <= 0xdfff) && re.test(String.fromCodePoint(cp))) out.push(String.fromCodePoint(cp))
  return out
}
const ignorables = withProperty(DEFAULT_IGNORABLE)
const bidiControls = withProperty(BIDI_CONTROL)

t.test('refuses look-alike addresses: invisible and direction-changing characters, trailing-dot domains', async (t) => {
  const bad: Record<string, string> = {
    'zero-width space in the local part': 'ann\u200b@example.com',
    'zero-width space in the domain (ToASCII would drop it)': 'ann@exa\u200bmple.com',
    'zero-width joiner': 'an\u200dn@example.com',
    'zero-width non-joiner': 'an\u200cn@example.com',
    'word joiner': 'ann\u2060@example.com',
    'soft hyphen in the local part': 'an\u00adn@example.com',
    'soft hyphen in the domain': 'ann@ex\u00adample.com',
    'byte order mark inside': 'an\ufeffn@example.com',
    'byte order mark at the start (trim would drop it)': '\ufeffann@example.com',
    'Hangul filler': 'ann\u3164@example.com',
    'variation selector': 'ann\ufe0f@example.com',
    'right-to-left override': 'ann\u202e@example.com',
    'left-to-right mark': 'ann@example.com\u200e',
    'Arabic letter mark': '\u061cann@example.com',
    'first strong isolate': 'ann\u2068@example.com',
    'trailing-dot domain': 'ann@example.com.',
    'trailing ideographic full stop (a dot under ToASCII)': 'ann@example.com\u3002',
    'domain of one dot': 'ann@.',
    'domain ToASCII refuses (bad punycode)': 'ann@xn--zz.example',
    'domain ToASCII refuses (numeric last label)': 'ann@example.123',
    'domain ToASCII refuses (forbidden character)': 'ann@exa<mple.com',
    'domain ToASCII refuses (zero-width joiner out of context)': 'ann@x\u200d.com',
    'over 254 bytes once the domain is in ASCII': `${'a'.repeat(240)}@b\u00fccher.example`,
  }
  for (const [why, email] of Object.entries(bad)) t.equal(registrableEmail(email), null, why)
  t.equal(registrableEmail(`${'a'.repeat(232)}@b\u00fccher.example`), `${'a'.repeat(232)}@xn--bcher-kva.example`, '254 bytes in ASCII form is accepted')
  t.match(checkEmail('ann\u200b@example.com'), { problem: /invisible or direction-changing character \(U\+200B\)/ }, 'the admin is told which character')
  t.ok(ignorables.includes('\u00ad') && ignorables.includes('\u200b') && bidiControls.includes('\u202e'), 'the properties are the ones meant')
})

t.test('refuses any address holding a Default_Ignorable_Code_Point or a bidi control, wherever it sits', async (t) => {
  const local = fc.stringMatching(/^[a-z0-9]{1,10}$/)
  const domain = fc.stringMatching(/^[a-z]{1,10}\.[a-z]{2,5}$/)
  const invisible = fc.constantFrom(...ignorables, ...bidiControls)
  fc.assert(
    fc.property(local, domain, invisible, fc.nat(), (l, d, ch, at) => {
      const plain = `${l}@${d}`
      const i = at % (plain.length + 1)
      return registrableEmail(plain.slice(0, i) + ch + plain.slice(i)) === null
    }),
    { numRuns: 5000 },
  )
  // around any text at all, at either end too (trim would drop a byte order mark there)
  fc.assert(
    fc.property(anyString, invisible, anyString, (a, ch, b) => registrableEmail(a + ch + b) === null),
    { numRuns: 5000 },
  )
  for (const ch of [...ignorables, ...bidiControls]) {
    for (const s of [`${ch}ann@example.com`, `ann@example.com${ch}`, `ann${ch}@example.com`, `ann@exa${ch}mple.com`]) {
      if (registrableEmail(s) !== null) t.fail(`accepted ${JSON.stringify(s)}`)
    }
  }
})

t.test('registers under the canonical form: what registrableEmail accepts is canonical and looks itself up', async () => {
  const arbs = [anyString, trickyString, fc.tuple(trickyString, fc.constantFrom('b\u00fccher.example', 'EXAMPLE.com', 'ex.com', '\uff45x.com', 'xn--bcher-kva.example')).map(([l, d]) => `${l}@${d}`)]
  for (const arb of arbs) {
    fc.assert(
      fc.property(arb, (s) => {
        const r = registrableEmail(s)
        return r === null || (r === canonicalEmail(s) && canonicalEmail(r) === r && registrableEmail(r) === r)
      }),
      { numRuns: 3000 },
    )
  }
})

t.test('refuses a domain ToASCII reads as an IP address (it would store it rewritten), and a trailing dot ToASCII drops from one', async (t) => {
  const bad: Record<string, [string, RegExp]> = {
    'a number (ToASCII: 0.0.7.232)': ['z@2024', /IP address/],
    'a number and a dot (ToASCII drops the dot: 0.0.7.232)': ['z@2024.', /ends in a dot/],
    'hex (ToASCII: 0.0.0.16)': ['Dragon@0x10', /IP address/],
    'two numbers (ToASCII: 123.0.0.45)': ['Password@123.45', /IP address/],
    'dotted IPv4': ['ann@192.0.2.7', /IP address/],
    'IPv6 literal': ['ann@[::1]', /IP address/],
  }
  for (const [why, [email, problem]] of Object.entries(bad)) {
    t.equal(registrableEmail(email), null, why)
    t.match(checkEmail(email), { problem }, `${why}: the admin is told why`)
    t.match(checkEmail(email), { problem: /^its domain / }, `${why}: a domain problem (an import keeps such a stored email)`)
  }
  t.equal(registrableEmail('ann@2024.example'), 'ann@2024.example', 'numeric labels that are not the last one are a name')
  t.equal(registrableEmail('ann@example.co'), 'ann@example.co')
})

t.test('refuses an address that is not well-formed Unicode (a lone surrogate, as an import file can carry)', async (t) => {
  for (const email of ['ann\ud800@example.com', 'ann@exa\udc00mple.com', '\udbff@example.com']) {
    t.same(checkEmail(email), { problem: 'it is not well-formed Unicode' }, JSON.stringify(email))
  }
  t.equal(registrableEmail('ann\ud83d\ude00@example.com'), 'ann\ud83d\ude00@example.com', 'a surrogate pair is a character like any other')
})
