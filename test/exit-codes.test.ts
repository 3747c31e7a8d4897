/**
 * The exit code of each error code, for authd and authctl alike (src/exit-codes.ts; README,
 * "Administer with authctl": 0 success, 1 the operation failed, 2 usage or config error): the
 * table covers every code only authctl and authd start show, an HTTP code that reaches either is a
 * failed operation, and each exit code the README names for a case is the table's.
 */
import t from 'tap'
import { exitCodeOf, exitCodes } from '../src/exit-codes.js'
import { errorRegistry, httpErrors, type ErrorCode } from '../src/errors.js'

const codes = Object.keys(errorRegistry) as ErrorCode[]
const cliCodes = codes.filter((c) => (errorRegistry[c] as { status?: number }).status === undefined)

t.test('the exit table covers every code only authctl and authd start show, and no other', async (t) => {
  t.same(Object.keys(exitCodes).sort(), [...cliCodes].sort())
  for (const code of cliCodes) t.ok(exitCodes[code as keyof typeof exitCodes] === 1 || exitCodes[code as keyof typeof exitCodes] === 2, `${code}: exit 1 or 2`)
  for (const code of cliCodes) t.equal(exitCodeOf(code), exitCodes[code as keyof typeof exitCodes], `${code}: exitCodeOf reads the table`)
  // an HTTP answer met by authctl (a password the policy refuses, the database unavailable): the operation failed
  for (const code of Object.keys(httpErrors) as ErrorCode[]) t.equal(exitCodeOf(code), 1, `${code}: exit 1`)
})

t.test('each exit code the README names for a case is the one the table gives', async (t) => {
  const readme: Array<[ErrorCode, 1 | 2, string]> = [
    ['CONFIG_INVALID', 2, 'a bad config value'],
    ['CONFIRMATION_NEEDED', 2, '--yes needed but no terminal to ask'],
    ['PASSWORD_NEEDS_TERMINAL', 2, 'no terminal and no --password-stdin'],
    ['DATA_DIR_NOT_DIRECTORY', 2, 'a file where the data directory should be (a config error, for authd start too)'],
    ['LIMITS_TARGET_INVALID', 2, 'limits clear of neither an email nor an IP address'],
    ['AUDIT_SINCE_INVALID', 2, 'a bad --since'],
    ['AUDIT_LIMIT_INVALID', 2, 'a bad --limit'],
    ['AUDIT_EVENT_UNKNOWN', 2, 'a bad --event'],
    ['NO_BACKUP', 2, 'backup of a PostgreSQL store'],
    ['SCHEMA_TOO_NEW', 2, 'a store written by a newer authd'],
    ['LISTEN_FAILED', 1, 'authd start on an address or socket it cannot listen on'],
    ['DATA_DIR_IN_USE', 1, 'authd start on an LMDB data directory another authd runs on'],
    ['USER_NOT_FOUND', 1, 'an unknown user'],
    ['SESSION_ID_NOT_FOUND', 1, 'an unknown session'],
    ['KEY_NOT_FOUND', 1, 'an unknown key'],
    ['USER_EXISTS', 1, 'email taken'],
    ['PASSWORD_TOO_SHORT', 1, 'password refused'],
    ['NOT_CONFIRMED', 1, 'cancelled at the question'],
    ['CANCELLED', 1, 'cancelled'],
    ['SMOKE_CHECK_FAILED', 1, 'a smoke step failed'],
  ]
  for (const [code, exit, why] of readme) t.equal(exitCodeOf(code), exit, `${why} (${code}): exit ${exit}`)
})

t.test('a name the table inherits from Object is no code of its own: exit 1, never a function', async (t) => {
  for (const name of ['toString', 'constructor', 'hasOwnProperty', '__proto__', 'valueOf']) {
    t.equal(exitCodeOf(name as ErrorCode), 1, name)
  }
})
