/**
 * The one error type and its registry (src/errors.ts): every code has a message, every HTTP code
 * a 4xx/5xx status, and authctl shows an AppError as one sentence with its exit code (the table
 * itself: test/exit-codes.test.ts).
 */
import { join } from 'node:path'
import t from 'tap'
import { main } from '../src/cli/main.js'
import { AppError, errorRegistry, httpErrors, isAppError, isHttpError, quoted, visible, type ErrorCode } from '../src/errors.js'

const codes = Object.keys(errorRegistry) as ErrorCode[]
const entry = (code: ErrorCode): { status?: number; message: string } => errorRegistry[code]
const cliCodes = codes.filter((c) => entry(c).status === undefined)

t.test('every code has a message; every HTTP code a 4xx or 5xx status', async (t) => {
  for (const code of codes) {
    const { status, message } = entry(code)
    t.match(code, /^[A-Z][A-Z0-9_]*$/, `${code}: an upper-case code`)
    t.ok(typeof message === 'string' && message.trim() !== '', `${code}: has a message`)
    if (status !== undefined) t.ok(Number.isInteger(status) && status >= 400 && status <= 599, `${code}: status ${status} is 4xx or 5xx`)
  }
  t.same(Object.keys(httpErrors).sort(), codes.filter((c) => entry(c).status !== undefined).sort(), 'httpErrors: exactly the codes with a status')
  t.ok(cliCodes.length > 0 && cliCodes.length < codes.length, 'both kinds are there')
})

t.test('an AppError: its code, status and filled message; the message given at the throw wins', async (t) => {
  const short = new AppError('PASSWORD_TOO_SHORT', { params: { min: 12 } })
  t.match(short, { name: 'AppError', code: 'PASSWORD_TOO_SHORT', status: 400, message: 'Password must be at least 12 characters' })
  t.ok(isAppError(short) && isHttpError(short))
  t.notMatch(short.stack ?? '', /\n\s+at /, 'an HTTP answer takes no stack (the cost of a 429 flood)')

  const missing = new AppError('NO_FILE', { params: { file: '/srv/a.jsonl' } })
  t.match(missing, { code: 'NO_FILE', status: undefined, message: 'No file /srv/a.jsonl.', params: { file: '/srv/a.jsonl' } })
  t.ok(isAppError(missing))
  t.notOk(isHttpError(missing), 'a code without a status is no HTTP answer (a 500 if it reaches the API)')
  t.match(missing.stack ?? '', /\n\s+at /, 'an error for people at a terminal keeps its stack for --debug')

  const config = new AppError('CONFIG_INVALID', { message: 'config: server.port must be a port (got 70000 from the config file)', params: { key: 'server.port' } })
  t.equal(config.message, 'config: server.port must be a port (got 70000 from the config file)')
  t.equal(config.params?.key, 'server.port')

  t.notOk(isAppError(new Error('boom')))
  t.notOk(isAppError({ name: 'AppError', code: 'NO_FILE', message: 'not an Error' }))
})

t.test('a value is put into the message as it is: no replacement patterns, not read as a template again', async (t) => {
  // String.prototype.replace reads $&, $' and $` in a replacement string; a path or an email may hold them
  t.equal(new AppError('NO_FILE', { params: { file: "/tmp/$&$'$`$$" } }).message, "No file /tmp/$&$'$`$$.")
  t.equal(new AppError('DATA_DIR', { params: { path: '/srv/{why}', why: 'permission denied' } }).message, 'cannot use the data directory /srv/{why}: permission denied')
  t.equal(new AppError('PASSWORD_TOO_SHORT').message, 'Password must be at least {min} characters', 'no params: the template')
})

/** runs authctl in this process */
async function authctl(argv: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const code = await main({ argv, env: {}, cwd, stdout: (s) => void (stdout += s), stderr: (s) => void (stderr += s) })
  return { code, stdout, stderr }
}

t.test('authctl: an AppError is one sentence on stderr and the exit code of its code', async (t) => {
  const dir = t.testdir({})
  const usage = await authctl(['smoke', '--email', 'ann@example.com', '--url', 'not a url'], dir)
  t.same(usage, { code: 2, stdout: '', stderr: 'authctl: --url must be an absolute http:// or https:// URL (got "not a url").\n' }, 'a usage error: 2, no --debug hint')
  const failed = await authctl(['import', 'missing.jsonl'], dir)
  t.same(failed, { code: 1, stdout: '', stderr: `authctl: No file ${join(dir, 'missing.jsonl')}.\n` }, 'a failed operation: 1, no --debug hint')
  const config = await authctl(['smoke', '--email', 'ann@example.com', '--config', join(dir, 'none.toml')], dir)
  t.equal(config.code, 2, 'a config error: 2')
  t.match(config.stderr, /^authctl: Config: cannot read config file [^\n]+\.\n$/)
})

t.test('quoted and visible write what a terminal would act on or hide as escapes, and nothing else', async (t) => {
  t.equal(quoted('ann@example.com'), '"ann@example.com"')
  t.equal(quoted('a"b\\c'), '"a\\"b\\\\c"', "JSON's own escapes")
  t.equal(quoted('a\u202eb\u200b\u00adc\u2028d\u0085e\u{e0001}'), '"a\\u202eb\\u200b\\u00adc\\u2028d\\u0085e\\u{e0001}"')
  t.equal(quoted('\u001b[31m'), '"\\u001b[31m"')
  t.equal(quoted('bücher.example ｆｕｌｌ 名前 🙂'), '"bücher.example ｆｕｌｌ 名前 🙂"', 'letters of every script and emoji as they are')
  t.equal(visible('line\tend\u202e'), 'line\\u0009end\\u202e')
  t.equal(visible('plain text: "quoted", 100 %'), 'plain text: "quoted", 100 %')
})
