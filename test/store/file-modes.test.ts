/**
 * Every file authd or authctl creates in the data directory is 0600 whatever the umask: the store
 * holds password hashes and private keys. The real programs run under umask 022 (children inherit
 * it), and every file found in the directory afterwards is stat'ed. What the store does to the
 * modes of files and directories it opens in process is in lmdb-store.test.ts.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { call } from '../helpers/app.js'
import { spawnDaemon } from '../helpers/daemon.js'
import { ownerOnly } from '../helpers/file-modes.js'
import { ctlFor, PASSWORD } from '../cli/run.js'

process.umask(0o022)

t.test('store files created by authd under umask 022 are 0600', async (t) => {
  const dir = join(t.testdir(), 'data')
  mkdirSync(dir) // the programs run in it
  const daemon = await spawnDaemon(t, dir)
  t.equal((await call(daemon.url, 'POST', '/api/auth/register', { json: { email: 'ann@example.com', password: PASSWORD } })).status, 201)
  ownerOnly(t, dir, ['data.mdb', 'lock.mdb'])
  t.equal(await daemon.stop(), 0)
  ownerOnly(t, dir, ['data.mdb', 'lock.mdb'])
})

t.test('store files and backups created by authctl under umask 022 are 0600', async (t) => {
  const dir = join(t.testdir(), 'data')
  mkdirSync(dir)
  const ctl = ctlFor(dir)
  const add = await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })
  t.equal(add.code, 0, add.stderr)
  const backup = await ctl(['backup', join(dir, 'backup.mdb')])
  t.equal(backup.code, 0, backup.stderr)
  ownerOnly(t, dir, ['data.mdb', 'lock.mdb', 'backup.mdb'])
})
