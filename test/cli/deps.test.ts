/**
 * What authctl's commands run on (src/cli/deps.ts; README, "Administer with authctl"): the config
 * from --config, --data and the AUTHD_* variables, read once; notices on stderr; and the store the
 * config names, refused when the data directory does not exist (a typo must not create an empty
 * store) unless the command creates it, which it then names on stderr, and refused with authd's
 * sentence when a file is in the way. In process, on LMDB in temp directories (the config here
 * never names the test backend: what is under test is the LMDB data-directory checks).
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { createBaseDeps, openStoreDeps, type CliIo, type GlobalOptions } from '../../src/cli/deps.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { user } from '../helpers/records.js'

function io(cwd: string, env: Record<string, string> = {}): CliIo & { err: () => string } {
  let err = ''
  return { argv: [], env, cwd, stdout: () => true, stderr: (s) => void (err += s), err: () => err }
}

async function open(t: Test, cli: CliIo, globals: GlobalOptions, create: boolean) {
  const deps = await openStoreDeps(createBaseDeps(cli, globals), { create })
  t.teardown(() => deps.close().catch(() => {}))
  return deps
}

t.test('the config comes from --data, --config and the environment, relative to cwd, and is read once', async (t) => {
  const cwd = t.testdir({ 'auth.toml': '[log]\nlevel = "warn"\n\n[store]\npath = "from-file"\n' })
  const cli = io(cwd, { AUTHD_LOG_LEVEL: 'debug' })
  const base = createBaseDeps(cli, { data: 'rel' })
  t.equal(base.cwd, cwd)
  const first = base.config()
  t.equal(base.config(), first, 'one load, however many ask')
  const config = await first
  t.equal(config.store.path, join(cwd, 'rel'), '--data, resolved against cwd')
  t.equal(config.log.level, 'debug', 'AUTHD_* variables')
  cli.env.AUTHD_LOG_LEVEL = 'error'
  t.equal((await base.config()).log.level, 'debug', 'not read again')

  const byFile = await createBaseDeps(io(cwd), { config: 'auth.toml' }).config()
  t.equal(byFile.store.path, join(cwd, 'from-file'), '--config names the file')
  t.equal(byFile.log.level, 'warn')
  const both = await createBaseDeps(io(cwd), { config: 'auth.toml', data: 'flag' }).config()
  t.equal(both.store.path, join(cwd, 'flag'), '--data wins over the file')
})

t.test('a config that cannot be read rejects with its sentence, as a config error', async (t) => {
  const cwd = t.testdir({ 'bad.toml': '[server]\nport = 70000\n' })
  await t.rejects(createBaseDeps(io(cwd), { config: 'none.toml' }).config(), { name: 'AppError', code: 'CONFIG_INVALID', message: /cannot read config file/ })
  await t.rejects(createBaseDeps(io(cwd), { config: 'bad.toml' }).config(), { code: 'CONFIG_INVALID', message: /server\.port/ })
})

t.test('a notice is one line on stderr, named for authctl', async (t) => {
  const cli = io(t.testdir())
  createBaseDeps(cli, {}).notice('created a new store in /srv/x')
  t.equal(cli.err(), 'authctl: created a new store in /srv/x\n')
})

t.test('a data directory that does not exist is refused, and not created, unless the command creates the store', async (t) => {
  const cwd = t.testdir()
  const missing = join(cwd, 'typo')
  const cli = io(cwd)
  await t.rejects(openStoreDeps(createBaseDeps(cli, { data: 'typo' }), { create: false }), {
    name: 'AppError',
    code: 'NO_DATA_DIR',
    message: `No authd data directory at ${missing}: pass --data or set store.path (authd creates it on first start).`,
  })
  t.notOk(existsSync(missing), 'nothing created')
  t.equal(cli.err(), '', 'nothing said')
})

t.test('a command that creates the store makes it and names it on stderr; a store already there is opened without a word', async (t) => {
  const cwd = t.testdir()
  const made = io(cwd)
  const deps = await open(t, made, { data: 'data' }, true)
  t.equal(made.err(), `authctl: created a new store in ${join(cwd, 'data')}\n`)
  t.ok(existsSync(join(cwd, 'data', 'data.mdb')), 'an LMDB store')
  t.equal(deps.store.location, join(cwd, 'data'))
  await deps.close()

  for (const create of [false, true]) {
    const again = io(cwd)
    const reopened = await open(t, again, { data: 'data' }, create)
    t.equal(again.err(), '', `create ${create}: an existing store is not announced`)
    await reopened.close()
  }
})

t.test('an existing empty directory is a new store: opened, and named on stderr', async (t) => {
  const cwd = t.testdir({ empty: {} })
  const cli = io(cwd)
  const deps = await open(t, cli, { data: 'empty' }, false)
  t.equal(cli.err(), `authctl: created a new store in ${join(cwd, 'empty')}\n`)
  t.same(await deps.admin.listUsers(), [])
})

t.test('an existing directory of other files, with no store in it, is refused without create, and left as it was', async (t) => {
  const cwd = t.testdir({ etc: { 'notes.txt': 'not a store\n' } })
  const cli = io(cwd)
  await t.rejects(openStoreDeps(createBaseDeps(cli, { data: 'etc' }), { create: false }), {
    code: 'NO_STORE_IN_DIR',
    message: `No authd store in ${join(cwd, 'etc')}: the directory holds other files but no data.mdb. Pass --data or set store.path.`,
  })
  t.same(readdirSync(join(cwd, 'etc')), ['notes.txt'], 'no store made there')
  t.equal(cli.err(), '')
  // user add and import (create) may start a store beside other files, as authd's first start does
  const made = io(cwd)
  const deps = await open(t, made, { data: 'etc' }, true)
  t.equal(made.err(), `authctl: created a new store in ${join(cwd, 'etc')}\n`)
  await deps.close()
})

t.test('a file where the data directory, or one above it, should be is refused with authd’s sentence, created or not', async (t) => {
  const cwd = t.testdir({ 'a-file': 'not a directory\n' })
  for (const data of ['a-file', join('a-file', 'below')]) {
    for (const create of [false, true]) {
      const cli = io(cwd)
      await t.rejects(openStoreDeps(createBaseDeps(cli, { data }), { create }), {
        code: 'DATA_DIR_NOT_DIRECTORY',
        message: `cannot use the data directory ${join(cwd, data)}: a file is in the way (it must be a directory)`,
      }, `${data}, create ${create}`)
      t.equal(cli.err(), '')
    }
  }
})

t.test('the admin operations run on the store opened, with the base deps and a confirmation beside them', async (t) => {
  const dir = t.testdir()
  const seeded = await openLmdbStore({ path: dir })
  await seeded.createUser(user('u-ann', 'ann@example.com'))
  await seeded.close()
  const cli = io(dir)
  const deps = await open(t, cli, { data: dir }, false)
  t.same((await deps.admin.listUsers()).map((u) => u.email), ['ann@example.com'])
  t.equal(deps.cwd, dir)
  t.type(deps.confirm, 'function')
  t.type(deps.newPassword, 'function')
  deps.notice('hello')
  t.equal(cli.err(), 'authctl: hello\n', 'the base notice')
  await deps.close()
  await t.rejects(deps.store.listUsers(), 'close() closes the store')
})

t.test('a PostgreSQL store is opened whatever is at store.path, and never announced as created', async (t) => {
  const cwd = t.testdir({ 'a-file': 'x' })
  const real = await openLmdbStore({ path: join(cwd, 'lmdb') })
  t.teardown(() => real.close())
  const asked: unknown[] = []
  const { createBaseDeps: base, openStoreDeps: openDeps } = await t.mockImport<typeof import('../../src/cli/deps.js')>('../../src/cli/deps.js', {
    '../../src/store/open.js': {
      openStore: async (config: unknown) => {
        asked.push(config)
        return { store: real, limiter: null }
      },
    },
  })
  const cli = io(cwd, { AUTHD_STORE_BACKEND: 'postgres', AUTHD_STORE_URL: 'postgres://authd@db.invalid/authd' })
  for (const data of ['nowhere', 'a-file']) {
    const deps = await openDeps(base(cli, { data }), { create: false })
    t.equal(deps.store, real, `${data}: the store openStore gave`)
  }
  t.match(asked, [{ backend: 'postgres', url: 'postgres://authd@db.invalid/authd' }, { backend: 'postgres' }])
  t.equal(cli.err(), '', 'nothing said')
})
