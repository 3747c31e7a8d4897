/**
 * User, session and key ids are base64url, so one in 64 starts with "-", and a parser takes such
 * an id for an unknown option (`authctl sessions revoke -Xy…` would fail). Tokens of exactly an
 * id's shape that are not options authctl knows are moved behind "--", where they can only be
 * operands. Every authctl command has at most one operand, so the order is kept.
 */

// session and user ids are 22 characters, key ids 16
const DASHED_ID = /^-(?:[A-Za-z0-9_-]{15}|[A-Za-z0-9_-]{21})$/

/**
 * @param known every option flag authctl defines ("--yes", "-h" …)
 * @param takesValue the flags whose next token is their value, never an operand
 */
export function protectDashedIds(argv: string[], known: ReadonlySet<string>, takesValue: ReadonlySet<string>): string[] {
  const end = argv.indexOf('--')
  const head = end === -1 ? argv : argv.slice(0, end)
  const tail = end === -1 ? [] : argv.slice(end + 1)
  const ids: string[] = []
  const rest: string[] = []
  head.forEach((token, i) => {
    const isValue = i > 0 && takesValue.has(head[i - 1]!)
    // a mistyped long option (lower case and dashes) stays an option, to be reported as unknown
    if (!isValue && DASHED_ID.test(token) && /[A-Z0-9_]/.test(token) && !known.has(token)) ids.push(token)
    else rest.push(token)
  })
  return ids.length === 0 ? argv : [...rest, '--', ...ids, ...tail]
}
