/**
 * config/layer.ts on its own: a TOML-shaped table flattened into dotted keys, each value with its
 * source; a key it does not know, at any depth, and a value where a table belongs, are
 * CONFIG_INVALID errors naming the key and the value (README, "Configure").
 */
import { parse } from 'smol-toml'
import t, { type Test } from 'tap'
import { flattenTable, isTable } from '../../src/config/layer.js'
import { isAppError } from '../../src/errors.js'

const SOURCE = 'in /etc/authd/auth.toml'

function configError(t: Test, fn: () => unknown, message: string, key: string): void {
  try {
    fn()
  } catch (error) {
    t.ok(isAppError(error), 'an AppError')
    t.equal((error as { code?: unknown }).code, 'CONFIG_INVALID')
    t.equal((error as Error).message, message)
    t.same((error as { params?: unknown }).params, { key })
    return
  }
  t.fail(`expected: ${message}`)
}

t.test('isTable: a plain or null-prototype object; not an array, a date or null', async (t) => {
  t.ok(isTable({}))
  t.ok(isTable(Object.create(null)))
  t.ok(isTable(parse('[server]\nport = 1\n').server), "smol-toml's tables")
  for (const value of [null, undefined, [], [{}], new Date(0), parse('d = 1979-05-27').d, 'x', 1, true]) t.notOk(isTable(value), String(value))
})

t.test('flattens nested tables into dotted keys, every value with the source, as written', async (t) => {
  const table = parse('[server]\nport = 9000\ntrust_proxy = ["10.0.0.0/8"]\n[rate_limit]\nmax_keys = 5000\n[rate_limit.login]\nper_ip = "10/1m"\n')
  t.same([...flattenTable(table, SOURCE)], [
    ['server.port', { value: 9000, source: SOURCE }],
    ['server.trust_proxy', { value: ['10.0.0.0/8'], source: SOURCE }],
    ['rate_limit.max_keys', { value: 5000, source: SOURCE }],
    ['rate_limit.login.per_ip', { value: '10/1m', source: SOURCE }],
  ])
  t.equal(flattenTable({}, SOURCE).size, 0, 'nothing set: an empty layer')
  t.equal(flattenTable({ server: {}, rate_limit: { login: {} } }, SOURCE).size, 0, 'empty tables set nothing')
})

t.test('a value of the wrong type at a key is kept for validation to name, a table included', async (t) => {
  const date = parse('d = 1979-05-27').d
  const l = flattenTable({ server: { port: { x: 1 }, host: date, socket: null } }, SOURCE)
  t.same(l.get('server.port'), { value: { x: 1 }, source: SOURCE })
  t.equal(l.get('server.host')?.value, date)
  t.same(l.get('server.socket'), { value: null, source: SOURCE })
})

t.test('an unknown key, at any depth, names the whole path and its value', async (t) => {
  configError(t, () => flattenTable({ top: 'x' }, SOURCE), `config: unknown key "top" (got "x" ${SOURCE})`, 'top')
  configError(t, () => flattenTable({ server: { prot: 1 } }, SOURCE), `config: unknown key "server.prot" (got 1 ${SOURCE})`, 'server.prot')
  configError(t, () => flattenTable({ servre: { port: 1 } }, SOURCE), `config: unknown key "servre" (got a table ${SOURCE})`, 'servre')
  configError(t, () => flattenTable({ rate_limit: { login: { per_ip_mail: '5/1m' } } }, SOURCE), `config: unknown key "rate_limit.login.per_ip_mail" (got "5/1m" ${SOURCE})`, 'rate_limit.login.per_ip_mail')
  configError(t, () => flattenTable({ rate_limit: { log: {} } }, SOURCE), `config: unknown key "rate_limit.log" (got a table ${SOURCE})`, 'rate_limit.log')
  configError(t, () => flattenTable({ server: { Port: 1 } }, SOURCE), `config: unknown key "server.Port" (got 1 ${SOURCE})`, 'server.Port')
})

t.test('names of Object.prototype are unknown keys, not tables or keys by inheritance', async (t) => {
  configError(t, () => flattenTable(parse('__proto__ = 1'), SOURCE), `config: unknown key "__proto__" (got 1 ${SOURCE})`, '__proto__')
  configError(t, () => flattenTable({ server: { constructor: 1 } }, SOURCE), `config: unknown key "server.constructor" (got 1 ${SOURCE})`, 'server.constructor')
  configError(t, () => flattenTable({ toString: {} }, SOURCE), `config: unknown key "toString" (got a table ${SOURCE})`, 'toString')
})

t.test('a value where a table belongs is an error naming the table', async (t) => {
  configError(t, () => flattenTable({ server: 1 }, SOURCE), `config: server must be a table (got 1 ${SOURCE})`, 'server')
  configError(t, () => flattenTable({ server: ['a'] }, SOURCE), `config: server must be a table (got ["a"] ${SOURCE})`, 'server')
  configError(t, () => flattenTable({ rate_limit: { login: '5/1m' } }, SOURCE), `config: rate_limit.login must be a table (got "5/1m" ${SOURCE})`, 'rate_limit.login')
  const date = new Date(Date.UTC(1979, 4, 27))
  configError(t, () => flattenTable({ server: date }, SOURCE), `config: server must be a table (got ${JSON.stringify(String(date))} ${SOURCE})`, 'server')
})
