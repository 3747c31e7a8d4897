/**
 * The `authd` command as an operator runs it (the built bin/authd.js in a child process):
 * version, check-config, and start refusing a bad config with exit 2 and a message naming the key.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { open } from 'lmdb'
import { parse } from 'smol-toml'
import t from 'tap'
import { SCHEMA_VERSION } from '../../src/store/migrations.js'
import { ROOT } from '../helpers/app.js'
import { runAuthd as authd, type ProgramRun as Run } from '../helpers/daemon.js'

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version

t.test('authd version prints the package version', async (t) => {
  const r = await authd(['version'], { cwd: t.testdir() })
  t.equal(r.code, 0)
  t.equal(r.stdout, `authd ${VERSION}\n`)
  t.equal(r.stderr, '')
})

t.test('authd --version and -V print the version like authd version (regression: the flag was --version-flag)', async (t) => {
  for (const flag of ['--version', '-V']) {
    const r = await authd([flag], { cwd: t.testdir() })
    t.equal(r.code, 0, flag)
    t.equal(r.stdout, `authd ${VERSION}\n`, flag)
    t.equal(r.stderr, '', flag)
  }
})

t.test('authd check-config prints the effective values from defaults, file, environment and flags', async (t) => {
  const dir = t.testdir({ 'auth.toml': '[server]\nport = 7000\nbody_limit = "32kb"\n[tokens]\naccess_ttl = "10m"\n' })
  const r = await authd(['check-config', '--data', 'store-here'], { cwd: dir, env: { AUTHD_SERVER_PORT: '9000', AUTHD_RATE_LIMIT_LOGIN_PER_IP: '7/1m' } })
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /^# effective config/)
  const effective = parse(r.stdout) as Record<string, Record<string, unknown>>
  t.equal(effective.server!.port, 9000, 'the environment beats the file')
  t.equal(effective.server!.body_limit, '32kb', 'the file beats the default')
  t.equal(effective.server!.host, '127.0.0.1', 'defaults fill the rest')
  t.equal((effective.tokens as Record<string, unknown>).access_ttl, '10m')
  t.equal((effective.store as Record<string, unknown>).path, join(dir, 'store-here'), 'the flag, made absolute')
  t.match(effective.rate_limit, { login: { per_ip: '7/1m', per_ip_email: '5/15m' } })
  t.match(effective.passwords, { memory_kib: 19456, time_cost: 2, parallelism: 1 })
  t.equal(r.stderr, '')
  t.notOk(existsSync(join(dir, 'store-here')), 'checking creates no store')
})

t.test('authd check-config exits 2 naming the key and the value', async (t) => {
  const r = await authd(['check-config'], { cwd: t.testdir(), env: { AUTHD_TOKENS_ACCESS_TTL: 'forever' } })
  t.equal(r.code, 2)
  t.match(r.stderr, /tokens\.access_ttl/)
  t.match(r.stderr, /forever/)
  t.equal(r.stdout, '')
})

t.test('authd start with a bad config exits 2 with one line naming the key, and starts nothing', async (t) => {
  const cases: Array<[string, { args?: string[]; env?: Record<string, string>; files?: Record<string, string> }, RegExp[]]> = [
    ['a bad environment value', { env: { AUTHD_SERVER_PORT: 'abc' } }, [/server\.port|AUTHD_SERVER_PORT/, /abc/]],
    ['an unknown environment key', { env: { AUTHD_SERVER_PROT: '1' } }, [/AUTHD_SERVER_PROT/, /got "1"/]],
    ['an unknown key in auth.toml', { files: { 'auth.toml': '[server]\nprot = 8080\n' } }, [/server\.prot/, /got 8080/]],
    ['a bad value in auth.toml', { files: { 'auth.toml': '[tokens]\nalgorithm = "HS256"\n' } }, [/tokens\.algorithm/, /HS256/]],
    ['auth.toml that is not TOML', { files: { 'auth.toml': '[server\nport = \n' } }, [/auth\.toml/]],
    ['a missing --config file', { args: ['--config', 'nope.toml'] }, [/nope\.toml/]],
    ['a bad --port flag', { args: ['--port', 'eighty'] }, [/port/, /eighty/]],
  ]
  // the runs are independent: start them three at a time, then check each
  const runs: Array<Promise<{ dir: string; r: Run }>> = []
  for (let i = 0; i < cases.length; i++) {
    const [, c] = cases[i]!
    const dir = join(t.testdir(), `case-${i}`)
    const prev = runs[i - 3]
    runs.push(
      (async () => {
        await prev
        mkdirSync(dir, { recursive: true })
        for (const [f, text] of Object.entries(c.files ?? {})) writeFileSync(join(dir, f), text)
        return { dir, r: await authd(['start', '--data', join(dir, 'data'), ...(c.args ?? [])], { cwd: dir, env: c.env }) }
      })(),
    )
  }
  for (let i = 0; i < cases.length; i++) {
    const [name, , patterns] = cases[i]!
    const { dir, r } = await runs[i]!
    await t.test(name, async (t) => {
      t.equal(r.code, 2)
      for (const p of patterns) t.match(r.stderr, p)
      t.equal(r.stderr.trim().split('\n').length, 1, 'one line')
      t.notMatch(r.stderr, /\n\s+at |Error:/, 'no stack')
      t.notOk(existsSync(join(dir, 'data')), 'no store was created')
      t.notMatch(r.stdout, /listening/)
    })
  }
})

t.test('authd with an unknown command or option exits 2, with one line saying so', async (t) => {
  const dir = t.testdir()
  const command = await authd(['bogus'], { cwd: dir })
  t.equal(command.code, 2)
  t.equal(command.stderr, "authd: unknown command 'bogus'\n")
  const option = await authd(['start', '--bogus'], { cwd: dir })
  t.equal(option.code, 2)
  t.equal(option.stderr, "authd: unknown option '--bogus'\n")
  t.equal(option.stdout, '')
})

t.test('authd start with a data directory it cannot use says why in one plain line, and starts nothing', async (t) => {
  const dir = t.testdir({ 'a-file': 'not a directory\n' })
  const file = join(dir, 'a-file')
  for (const data of [file, join(file, 'below')]) {
    const r = await authd(['start', '--dev', '--port', '0', '--data', data], { cwd: dir })
    t.equal(r.code, 2, `${data}: a config error (regression: it exited 1, unlike authctl)`)
    t.equal(r.stderr, `authd: cannot use the data directory ${data}: a file is in the way (it must be a directory)\n`)
    t.notMatch(r.stdout, /listening/)
  }
  t.equal(readFileSync(file, 'utf8'), 'not a directory\n', 'the file is untouched')
})

/** The schema version stamped on an LMDB store, read and written with lmdb directly (as another authd would). */
async function schemaStamp(dir: string, write?: number): Promise<unknown> {
  const root = open({ path: dir, noSubdir: false, maxDbs: 16, compression: false })
  const meta = root.openDB({ name: 'meta' })
  if (write !== undefined) await meta.put('schema_version', write)
  const stamped = meta.get('schema_version')
  await root.close()
  return stamped
}

t.test('authd start on a store from a newer authd exits 2 with that one sentence and no stack', async (t) => {
  const dir = t.testdir()
  await schemaStamp(dir, 99)
  const { code, stdout, stderr } = await authd(['start', '--data', dir, '--port', '0'], { cwd: dir, timeoutMs: 15_000 })
  t.equal(code, 2, 'exit code 2: refused whole, like a config error')
  t.equal(
    stderr,
    `authd: the store was written by a newer authd (schema 99; this version understands up to ${SCHEMA_VERSION}): upgrade authd or restore a backup\n`,
  )
  t.notMatch(stderr + stdout, /\n\s+at /, 'no stack trace')
  t.notMatch(stdout, /listening/, 'it never listened')
  t.equal(await schemaStamp(dir), 99, 'the newer store is not modified')
})

t.test('authd --help exits 0 and lists the commands', async (t) => {
  const r = await authd(['--help'], { cwd: t.testdir() })
  t.equal(r.code, 0)
  for (const cmd of ['start', 'check-config', 'version']) t.match(r.stdout, new RegExp(`\\b${cmd}\\b`))
})

