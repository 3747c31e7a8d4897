/**
 * config/config-file.ts on its own: which file is read (`--config F`, else AUTHD_CONFIG, else
 * ./auth.toml if it exists; README, "Configure") and how a file that cannot be read or parsed is
 * reported: one CONFIG_INVALID line naming the file (and the line and column of a TOML error).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { locateConfigFile, readConfigFile } from '../../src/config/config-file.js'
import { isAppError } from '../../src/errors.js'

function configError(t: Test, fn: () => unknown, message: string | RegExp, key?: string): void {
  try {
    fn()
  } catch (error) {
    t.ok(isAppError(error), 'an AppError')
    t.equal((error as { code?: unknown }).code, 'CONFIG_INVALID')
    if (typeof message === 'string') t.equal((error as Error).message, message)
    else t.match((error as Error).message, message)
    t.notMatch((error as Error).message, /\n/, 'one line')
    t.same((error as { params?: unknown }).params, key === undefined ? undefined : { key })
    return
  }
  t.fail(`expected: ${message}`)
}

t.test('--config beats AUTHD_CONFIG, which beats ./auth.toml; relative paths against cwd', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '' })
  t.equal(locateConfigFile('a.toml', 'b.toml', cwd), join(cwd, 'a.toml'))
  t.equal(locateConfigFile(undefined, 'b.toml', cwd), join(cwd, 'b.toml'))
  t.equal(locateConfigFile(undefined, undefined, cwd), join(cwd, 'auth.toml'))
  t.equal(locateConfigFile('/etc/authd/auth.toml', undefined, cwd), '/etc/authd/auth.toml')
  t.equal(locateConfigFile('../x.toml', undefined, join(cwd, 'sub')), join(cwd, 'x.toml'))
})

t.test('a named file is returned whether or not it exists (reading it says what is wrong)', async (t) => {
  const cwd = t.testdir({})
  t.equal(locateConfigFile('missing.toml', undefined, cwd), join(cwd, 'missing.toml'))
  t.equal(locateConfigFile(undefined, 'missing.toml', cwd), join(cwd, 'missing.toml'))
})

t.test('without a name and without ./auth.toml: no file', async (t) => {
  const cwd = t.testdir({ 'other.toml': '', sub: { 'auth.toml': '' } })
  t.equal(locateConfigFile(undefined, undefined, cwd), null)
})

t.test('an empty name is an error naming where it came from, not a fallback to the next source', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '' })
  configError(t, () => locateConfigFile('', 'b.toml', cwd), 'config: --config must be a file path (got "")', '--config')
  configError(t, () => locateConfigFile(undefined, '', cwd), 'config: AUTHD_CONFIG must be a file path (got "")', 'AUTHD_CONFIG')
})

t.test('reads a file as a layer whose source names the file', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '# comment\n[server]\nport = 9000\n\n[tokens]\naccess_ttl = "5m"\n' })
  const file = join(cwd, 'auth.toml')
  t.same([...readConfigFile(file)], [
    ['server.port', { value: 9000, source: `in ${file}` }],
    ['tokens.access_ttl', { value: '5m', source: `in ${file}` }],
  ])
  t.equal(readConfigFile(join(t.testdir({ 'auth.toml': '' }), 'auth.toml')).size, 0, 'an empty file sets nothing')
  const bom = join(t.testdir({ 'auth.toml': '\uFEFF[server]\nport = 1\n' }), 'auth.toml')
  t.equal(readConfigFile(bom).get('server.port')?.value, 1, 'a UTF-8 byte order mark is no error')
})

t.test('a file that cannot be read names the file and the reason', async (t) => {
  const cwd = t.testdir({})
  configError(t, () => readConfigFile(join(cwd, 'missing.toml')), `config: cannot read config file ${join(cwd, 'missing.toml')} (no such file)`)
  mkdirSync(join(cwd, 'dir.toml'))
  configError(t, () => readConfigFile(join(cwd, 'dir.toml')), `config: cannot read config file ${join(cwd, 'dir.toml')} (it is a directory)`)
})

t.test('a file that is not UTF-8 is refused, not read with its bytes replaced', async (t) => {
  const cwd = t.testdir({})
  // Latin-1 "café", and a UTF-8 sequence cut short
  for (const [name, bytes] of [['latin1.toml', Buffer.from('[tokens]\nissuer = "caf\xe9"\n', 'latin1')], ['cut.toml', Buffer.concat([Buffer.from('[mfa]\nissuer = "Acme '), Buffer.from([0xe2, 0x82]), Buffer.from('"\n')])]] as const) {
    writeFileSync(join(cwd, name), bytes)
    configError(t, () => readConfigFile(join(cwd, name)), `config: config file ${join(cwd, name)} is not UTF-8 text (TOML files are UTF-8)`)
  }
})

t.test('a file that is not TOML names the file, the line and the column, on one line', async (t) => {
  const cases: Array<[string, number, number]> = [
    ['[server]\nport = = 1\n', 2, 8],
    ['[server]\nport = 1\nport = 2\n', 3, 1],
    ['[server\n', 1, 8],
    ['x = "unterminated\n', 1, 18],
  ]
  for (const [text, line, column] of cases) {
    const file = join(t.testdir({ 'auth.toml': text }), 'auth.toml')
    configError(t, () => readConfigFile(file), new RegExp(`^config: cannot parse config file ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} at line ${line}, column ${column}: Invalid TOML document: [^:]+$`))
  }
})

t.test('an unknown key in the file is an error naming the key and the file', async (t) => {
  const file = join(t.testdir({ 'auth.toml': '[server]\nprot = 1\n' }), 'auth.toml')
  configError(t, () => readConfigFile(file), `config: unknown key "server.prot" (got 1 in ${file})`, 'server.prot')
})

t.test('a quoted key with a dot in it is one unknown key, not a table and a key (it would hide or be hidden by the real one)', async (t) => {
  const both = join(t.testdir({ 'auth.toml': '"server.port" = 1\n[server]\nport = 2\n' }), 'auth.toml')
  configError(t, () => readConfigFile(both), `config: unknown key "server.port" (a quoted name with a dot is one key; got 1 in ${both})`, 'server.port')
  const nested = join(t.testdir({ 'auth.toml': '[rate_limit]\n"login.per_ip" = "1/1m"\n' }), 'auth.toml')
  configError(t, () => readConfigFile(nested), `config: unknown key rate_limit."login.per_ip" (a quoted name with a dot is one key; got "1/1m" in ${nested})`, 'rate_limit.login.per_ip')
  const plain = join(t.testdir({ 'auth.toml': 'server.port = 3\n"server".host = "127.0.0.2"\n' }), 'auth.toml')
  const layer = readConfigFile(plain)
  t.same([layer.get('server.port')?.value, layer.get('server.host')?.value], [3, '127.0.0.2'], 'dotted and quoted-segment keys are still paths')
})
