/**
 * config/redact-url.ts on its own: a connection URL as check-config, the logs, the TUI and config
 * messages show it, its password as `***` (README, "Configure": store.url). What is not a password
 * is kept as written; where a password would end is unclear, more is hidden rather than less.
 * test/config/store-keys.test.ts covers the common forms and where the result is shown.
 */
import t from 'tap'
import { redactUrl } from '../../src/config/redact-url.js'

const SECRET = 'Zq9-s3cret'

t.test('a URL without a password is shown as written', async (t) => {
  for (const url of [
    '',
    'postgres://db/authd',
    'postgres://authd@db.internal:5432/authd?sslmode=require',
    'postgresql://authd@/authd?host=/run/postgresql',
    'postgres://db/authd?user=me@corp&sslmode=require',
    'postgres://authd@db:5432/authd?application_name=a@b',
    'postgres://db/authd?passwordless=1&mypassword_hint=x',
    'not a url',
  ]) {
    t.equal(redactUrl(url), url, url)
  }
})

t.test('the password of the user part, whatever scheme, however written', async (t) => {
  const cases: Array<[string, string]> = [
    [`postgres://authd:${SECRET}@db/authd`, 'postgres://authd:***@db/authd'],
    [`mysql://root:${SECRET}@db/x`, 'mysql://root:***@db/x'],
    [`POSTGRES://authd:${SECRET}@db`, 'POSTGRES://authd:***@db'],
    ['postgres://authd:@db/authd', 'postgres://authd:***@db/authd'],
    [`postgres://:${SECRET}@db/authd`, 'postgres://:***@db/authd'],
    [`postgres://authd:a:b:${SECRET}@db/authd`, 'postgres://authd:***@db/authd'],
    [`postgres://me@corp:${SECRET}@db/authd`, 'postgres://me@corp:***@db/authd'],
    [`postgres://authd:${SECRET}@db/authd?sslmode=require#x`, 'postgres://authd:***@db/authd?sslmode=require#x'],
  ]
  for (const [url, shown] of cases) t.equal(redactUrl(url), shown, shown)
})

t.test('a password parameter of the query, in any case, and the rest of the query kept', async (t) => {
  t.equal(redactUrl(`postgres://db/authd?password=${SECRET}`), 'postgres://db/authd?password=***')
  t.equal(redactUrl(`postgres://db/authd?user=u&PASSWORD=${SECRET}&sslmode=require`), 'postgres://db/authd?user=u&PASSWORD=***&sslmode=require')
  t.equal(redactUrl(`postgres://db/authd?password=${SECRET}#frag`), 'postgres://db/authd?password=***#frag')
  t.equal(redactUrl(`postgres://u:${SECRET}@db/authd?password=${SECRET}`), 'postgres://u:***@db/authd?password=***', 'both')
})

// Regression: libpq's sslpassword (the passphrase of the client key) was shown as written.
t.test('the sslpassword parameter (the client key passphrase) is a password too', async (t) => {
  t.equal(redactUrl(`postgres://authd@db/authd?sslkey=/k.pem&sslpassword=${SECRET}`), 'postgres://authd@db/authd?sslkey=/k.pem&sslpassword=***')
  t.equal(redactUrl(`postgres://authd@db/authd?SSLPassword=${SECRET}`), 'postgres://authd@db/authd?SSLPassword=***')
})

// Regression: a password holding "/", "?" or "#" unescaped (as generated ones often do: base64 has
// "/") ended the user part too early for the reader, and the whole URL, password included, was
// shown by check-config and in config errors.
t.test('a password holding an unescaped "/", "?" or "#" is hidden whole', async (t) => {
  for (const password of ['Ab3/xyz+Q==', 'a?b', 'a#b', '/', 'x/y@z', 'a@b/c', '12/34']) {
    const shown = redactUrl(`postgres://authd:${password}@db.internal:5432/authd?sslmode=require`)
    t.equal(shown, 'postgres://authd:***@db.internal:5432/authd?sslmode=require', password)
  }
  // the price, where a "@" in the query makes the two readings differ: more is hidden, never a password shown
  t.equal(redactUrl('postgres://db:5432/authd?user=me@corp'), 'postgres://db:***@corp')
  t.equal(redactUrl(`postgres://authd:${SECRET}@db/authd?application_name=a@b`), 'postgres://authd:***@b')
})

t.test('text that is no scheme:// URL shows nothing after its first ":"', async (t) => {
  t.equal(redactUrl(`authd:${SECRET}@db/authd`), 'authd:***')
  t.equal(redactUrl(`postgres:/authd:${SECRET}@db`), 'postgres:***', 'one slash: not scheme://')
  t.equal(redactUrl(`://u:${SECRET}@db`), ':***', 'no scheme')
})

// Regression: a libpq key=value string (refused as store.url, and echoed in that refusal) has no
// ":" to cut at, and was shown whole, password included.
t.test('a libpq key=value string shows its password as ***', async (t) => {
  t.equal(redactUrl(`host=db user=authd password=${SECRET} dbname=authd`), 'host=db user=authd password=*** dbname=authd')
  t.equal(redactUrl(`host=db password = '${SECRET} x' dbname=authd`), "host=db password = *** dbname=authd", 'quoted, spaced')
  t.equal(redactUrl(`host=db PASSWORD=${SECRET}`), 'host=db PASSWORD=***')
})

t.test('no secret survives in any of the forms above', async (t) => {
  const forms = [
    `postgres://authd:${SECRET}@db/authd`,
    `postgres://authd:${SECRET}/x@db/authd`,
    `postgres://db/authd?password=${SECRET}`,
    `postgres://db/authd?sslpassword=${SECRET}`,
    `authd:${SECRET}@db`,
    `postgres://me@corp:${SECRET}@db`,
    `host=db password=${SECRET}`,
  ]
  for (const url of forms) t.notOk(redactUrl(url).includes(SECRET), url)
})
