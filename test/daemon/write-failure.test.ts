/**
 * A write the disk refuses under the running daemon (LMDB's commit failing: a full disk, an I/O
 * error) is answered as a failing database is: 503 `Service unavailable` with `Retry-After: 1`,
 * never a 500 (docs/api.md, "Errors"). The log says why, once per 10 s; nothing of the refused
 * write is in the store, and once there is room again the same requests succeed without a
 * restart. The full disk is a small tmpfs, which only root can mount.
 */
import t, { type Test } from 'tap'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { call, lmdbOnly, type Reply } from '../helpers/app.js'
import { spawnDaemon } from '../helpers/daemon.js'
import { fillUp, noSmallTmpfs, smallTmpfs } from '../helpers/full-disk.js'

const PASSWORD = 'vermilion-otter-42'
const ENV = {
  AUTHD_RATE_LIMIT_REGISTER_PER_IP: '1000/1m',
  AUTHD_RATE_LIMIT_LOGIN_PER_IP: '1000/1m',
}

/** why the test cannot run here, or false */
function cannotRun(): string | false {
  return lmdbOnly('a full disk under an LMDB data directory (a PostgreSQL store fails in its server)') || noSmallTmpfs()
}

const unavailable = (t: Test, r: Reply, what: string): void => {
  t.equal(r.status, 503, `${what}: 503 (${r.text})`)
  t.equal(r.headers['retry-after'], '1', `${what}: Retry-After: 1`)
  t.same(r.body, { success: false, message: 'Service unavailable' }, `${what}: the registry's answer, nothing of the cause`)
}

t.test('a write the disk refuses is a 503 with Retry-After, logged with its cause, and service resumes when there is room', { skip: cannotRun() }, async (t) => {
  // the daemon holds the store's files open: it ends before the tmpfs is unmounted
  let daemonStopped: () => Promise<unknown> = async () => undefined
  const mnt = smallTmpfs(t, '1m', () => daemonStopped())
  if (mnt === undefined) return
  const data = join(mnt, 'data')
  // it runs from the test's directory: a working directory in the tmpfs would keep it busy
  const authd = await spawnDaemon(t, data, { env: ENV, cwd: t.testdir() })
  daemonStopped = () => authd.stop()

  const ann = await call(authd.url, 'POST', '/api/auth/register', { json: { email: 'ann@example.com', password: PASSWORD } })
  t.equal(ann.status, 201, ann.text)

  // the rest of the tmpfs taken: the next commit cannot grow the store's file
  const filler = fillUp(t, mnt)

  // a burst of writes: each one refused, none a 500
  const bobs = await Promise.all(
    Array.from({ length: 6 }, (_, i) => call(authd.url, 'POST', '/api/auth/register', { json: { email: `bob${i}@example.com`, password: PASSWORD } })),
  )
  for (const [i, r] of bobs.entries()) unavailable(t, r, `register ${i}`)
  const login = await call(authd.url, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  unavailable(t, login, 'a login (its session is a write)')
  // what needs no write still answers
  const me = await call(authd.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${ann.body.data.accessToken}` } })
  t.equal(me.status, 200, `/me reads only: ${me.text}`)
  t.equal((await call(authd.url, 'GET', '/healthz')).status, 200, '/healthz')

  // the log keeps order: once the /healthz request's line is out, every line before it is
  const deadline = Date.now() + 10_000
  while (!/"route":"\/healthz"/.test(authd.output()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
  const lines = authd
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
  const failed = lines.filter((l) => l.msg === 'store write failed')
  t.equal(failed.length, 1, 'one line for the burst, not one a request')
  t.equal(failed[0]?.level, 'error', 'at error level')
  t.equal(failed[0]?.why, 'the store could not be written: No space left on device', 'the cause, as the disk gave it')
  t.equal(typeof failed[0]?.reqId, 'string', 'with the request id of the first refused')
  t.equal(lines.filter((l) => l.msg === 'unexpected error').length, 0, 'not logged as unexpected')
  t.notMatch(authd.output(), /Node\.js v|unhandled|uncaught/, 'no unhandled rejection')
  // besides the log's lines, only lmdb's C library's words on each failed write, each on its own
  // line (out of reach from JavaScript): no stack of lmdb's printed with them, one per write
  // (stderr alone: in the interleaved output a log line on stdout can land inside liblmdb's line,
  // written without its line end, before authd ends it)
  const others = authd
    .stderr()
    .split('\n')
    .filter((l) => l !== '')
  t.ok(others.length > 0, 'a failed write says so on stderr')
  for (const l of others) t.match(l, /^Write error: No space left on device position \d+, size \d+$/, 'nothing but liblmdb\'s line')

  // room again: the same requests succeed, without a restart, and nothing of the refused ones is there
  rmSync(filler)
  const again = await call(authd.url, 'POST', '/api/auth/register', { json: { email: 'bob0@example.com', password: PASSWORD } })
  t.equal(again.status, 201, `register after the disk has room: ${again.text}`)
  const loginAgain = await call(authd.url, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })
  t.equal(loginAgain.status, 200, `login after the disk has room: ${loginAgain.text}`)
  const bob1 = await call(authd.url, 'POST', '/api/auth/login', { json: { email: 'bob1@example.com', password: PASSWORD } })
  t.equal(bob1.status, 401, 'a refused registration left no user behind')
  t.equal(await authd.stop(), 0, 'authd stops cleanly after the refused writes')
})
