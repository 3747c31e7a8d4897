/**
 * A bad config's error (src/config/config-error.ts): configError's code, message and key, and
 * showValue, the form a value takes in those messages ("got 8080 in auth.toml", "got \"abc\"").
 */
import t from 'tap'
import { configError, showValue } from '../../src/config/config-error.js'
import { exitCodeOf } from '../../src/exit-codes.js'

t.test('showValue: strings and lists as JSON, so a space or an empty string shows; a table as "a table"; the rest as written', async (t) => {
  t.equal(showValue('abc'), '"abc"')
  t.equal(showValue(''), '""', 'an empty string is seen')
  t.equal(showValue(' 8080'), '" 8080"', 'a stray space is seen')
  t.equal(showValue('line\nbreak'), '"line\\nbreak"', 'a control character is escaped, the message stays one line')
  t.equal(showValue(['10.0.0.0/8', 'x']), '["10.0.0.0/8","x"]')
  t.equal(showValue([]), '[]')
  t.equal(showValue(8080), '8080')
  t.equal(showValue(1.5), '1.5')
  t.equal(showValue(true), 'true')
  t.equal(showValue(null), 'null')
  t.equal(showValue(undefined), 'undefined')
  t.equal(showValue({ port: 1 }), 'a table', 'a TOML table')
  // a TOML date-time (smol-toml gives a Date): quoted like a string, in the Date's own text
  const date = new Date('1979-05-27T07:32:00Z')
  t.equal(showValue(date), JSON.stringify(String(date)))
})

t.test('showValue hides the password of any URL in a string or a list, and keeps other text as written', async (t) => {
  t.equal(showValue('postgres://authd:hunter2@127.0.0.1:5432/authd'), '"postgres://authd:***@127.0.0.1:5432/authd"')
  t.equal(showValue(['postgres://authd:hunter2@db/authd', 'x']), '["postgres://authd:***@db/authd","x"]')
  t.equal(showValue('use postgres://a:hunter2@db and mysql://b:hunter3@db2'), '"use postgres://a:***@db and mysql://b:***@db2"', 'every URL in the text')
  t.equal(showValue('host=db password=hunter2'), '"host=db password=***"', 'a libpq key=value string')
  // text with no URL in it: a colon hides nothing (redactUrl, for store.url alone, hides what follows it)
  t.equal(showValue('127.0.0.1:8080'), '"127.0.0.1:8080"')
  t.equal(showValue('::1'), '"::1"')
})

t.test('configError: CONFIG_INVALID with the message as given and the key it is about; authd and authctl exit 2', async (t) => {
  const e = configError('config: server.port must be an integer from 0 to 65535 (got "abc" from AUTHD_SERVER_PORT)', 'server.port')
  t.match(e, { name: 'AppError', code: 'CONFIG_INVALID', message: 'config: server.port must be an integer from 0 to 65535 (got "abc" from AUTHD_SERVER_PORT)', params: { key: 'server.port' } })
  t.equal(configError('config: cannot read auth.toml').params, undefined, 'about a file: no key')
  t.equal(exitCodeOf(e.code), 2)
})
