/**
 * One authd per LMDB data directory (README, "Several instances"): a second `authd start` on a
 * directory an authd runs on is refused before it opens the store (its rate limits would count
 * apart from the first's, doubling every login limit), also through a link to it; the lock goes
 * with the process that held it, however it ended. authctl works beside the daemon as before.
 */
import { symlinkSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'
import { call } from '../helpers/app.js'
import { runAuthd, spawnDaemon } from '../helpers/daemon.js'
import { lockName } from '../../src/daemon/data-lock.js'

const refusal = (pid: number | undefined, dir: string): string =>
  `authd: another authd (pid ${pid}) is running on the data directory ${dir}: one authd per LMDB data directory (its rate limits live in its memory); for several, use PostgreSQL\n`

t.test('a second authd on the same data directory is refused with one sentence naming the first, exit 1; after a kill -9 of the first, one starts', { skip: process.platform !== 'linux' && 'the lock is a Linux abstract socket' }, async (t) => {
  const base = t.testdir()
  const data = join(base, 'data')
  const first = await spawnDaemon(t, data)
  t.equal((await call(first.url, 'GET', '/readyz')).status, 200)

  const second = await runAuthd(['start', '--data', data, '--port', '0'], { cwd: base })
  t.equal(second.code, 1)
  t.equal(second.stderr, refusal(first.proc.pid, resolve(data)))
  t.equal(second.stdout, '', 'nothing logged: it stopped before its store')

  const link = join(base, 'link')
  symlinkSync(data, link)
  const throughLink = await runAuthd(['start', '--data', link, '--port', '0'], { cwd: base })
  t.equal(throughLink.code, 1, 'through a link to it: the same directory')
  t.equal(throughLink.stderr, refusal(first.proc.pid, resolve(link)))

  t.equal((await call(first.url, 'GET', '/readyz')).status, 200, 'the first serves on')
  await first.crash()
  const next = await spawnDaemon(t, data)
  t.equal((await call(next.url, 'GET', '/readyz')).status, 200, 'the lock went with the killed process')
  t.equal(await next.stop(), 0)
  const after = await spawnDaemon(t, data)
  t.equal((await call(after.url, 'GET', '/readyz')).status, 200, 'and with a stopped one')
  t.equal(await after.stop(), 0)
})

t.test("the lock's name: one per directory, the same through a link, of a size the abstract namespace takes", async (t) => {
  const base = t.testdir({ a: {}, b: {} })
  symlinkSync(join(base, 'a'), join(base, 'to-a'))
  t.equal(lockName(join(base, 'to-a')), lockName(join(base, 'a')))
  t.not(lockName(join(base, 'a')), lockName(join(base, 'b')))
  t.equal(lockName(join(base, 'missing')), lockName(join(base, 'x', '..', 'missing')), 'a directory not made yet: by its resolved path')
  t.match(lockName(join(base, 'a')), /^\0authd-data:[0-9a-f]{40}$/)
})
