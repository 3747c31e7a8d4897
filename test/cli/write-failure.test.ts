/**
 * A write the disk refuses (LMDB's commit failing: a full disk, an I/O error) ends like every
 * other authctl error: one sentence naming the cause on stderr, exit 1, and nothing of the write
 * in the store. It used to end in lmdb's unhandled rejection, a stack trace and node's version.
 * The full disk is a small tmpfs, which only root can mount.
 */
import t from 'tap'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { lmdbOnly } from '../helpers/app.js'
import { fillUp, noSmallTmpfs, smallTmpfs } from '../helpers/full-disk.js'
import { ctlFor, PASSWORD } from './run.js'

/** why the test cannot run here, or false */
function cannotRun(): string | false {
  return lmdbOnly('a full disk under an LMDB data directory (a PostgreSQL store fails in its server)') || noSmallTmpfs()
}

t.test('a write refused for a full disk ends in one sentence naming the cause, exit 1, and writes nothing', { skip: cannotRun() }, async (t) => {
  const mnt = smallTmpfs(t, '400k')
  if (mnt === undefined) return
  const data = join(mnt, 'data')
  // run from the test's directory: a working directory in the tmpfs would keep it busy
  const ctl = ctlFor(data, { cwd: t.testdir() })
  const ann = await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })
  t.equal(ann.code, 0, ann.stderr)

  // the rest of the tmpfs taken: the next commit cannot grow the store's file
  const filler = fillUp(t, mnt)

  const bob = await ctl(['user', 'add', 'bob@example.com', '--password-stdin', '--json'], { input: `${PASSWORD}\n` })
  t.equal(bob.code, 1, 'exit 1: the operation failed')
  t.equal(bob.stdout, '', 'no document')
  // lmdb's C library says its own words first (out of reach from JavaScript), on a line of its
  // own; lmdb's printout of the cause with its stack is dropped. Then authctl's sentence
  const lines = bob.stderr.trimEnd().split('\n')
  t.equal(lines.length, 2, bob.stderr)
  t.match(lines[0], /^Write error: No space left on device position \d+, size \d+$/, "liblmdb's line, ended")
  t.equal(lines[1], 'authctl: The store could not be written: No space left on device.')
  t.notMatch(bob.stderr, /Commit failed|rejectCommit|Node\.js v|unhandled|run with --debug|^\s+at /m, 'no unhandled rejection, no stack')

  // with room again: the store holds what it held, and takes the write
  rmSync(filler)
  const list = await ctl(['user', 'list', '--json'])
  t.equal(list.code, 0, list.stderr)
  t.same(list.json().users.map((u: { email: string }) => u.email), ['ann@example.com'], 'nothing of the failed write')
  const verify = await ctl(['audit', 'verify'])
  t.equal(verify.code, 0, `the audit chain is intact: ${verify.stdout}${verify.stderr}`)
  const again = await ctl(['user', 'add', 'bob@example.com', '--password-stdin'], { input: `${PASSWORD}\n` })
  t.equal(again.code, 0, again.stderr)
})
