/**
 * One authd per LMDB data directory (README, "Several instances"): a second `authd start` on a
 * directory an authd runs on is refused before it listens (its rate limits would count apart
 * from the first's, doubling every login limit), also through a link to it; the lock goes with
 * the process that held it, however it ended. Its name needs the store's secret: nobody who
 * cannot read the store can take it first.
 */
import { randomBytes } from 'node:crypto'
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
  t.notMatch(second.stdout, /listening/, 'it never listened')

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

t.test("the lock's name: one per directory, the same through a link, and not to be made without the store's secret", async (t) => {
  const base = t.testdir({ a: {}, b: {} })
  symlinkSync(join(base, 'a'), join(base, 'to-a'))
  const secret = randomBytes(32).toString('base64url')
  t.equal(lockName(join(base, 'to-a'), secret), lockName(join(base, 'a'), secret), 'a link to it: the same directory')
  t.not(lockName(join(base, 'a'), secret), lockName(join(base, 'b'), secret))
  t.not(lockName(join(base, 'a'), randomBytes(32).toString('base64url')), lockName(join(base, 'a'), secret), 'another secret: another name')
  t.match(lockName(join(base, 'a'), secret), /^\0authd-data:[0-9a-f]{40}$/, 'a size the abstract namespace takes')
})
