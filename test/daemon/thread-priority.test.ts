/**
 * Hashes yield to the event loop (daemon/thread-priority.ts): in a running daemon every thread
 * but the main one is 10 nicer than the main thread, so a woken event loop takes the CPU from a
 * password hash at once.
 */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { spawn } from 'node:child_process'
import { getPriority } from 'node:os'
import { HELPER_NICENESS, yieldHelperThreads } from '../../src/daemon/thread-priority.js'
import { addUser, call, spawnDaemon } from '../helpers/app.js'

/** nice value of each thread of `pid` (field 19 of /proc/<pid>/task/<tid>/stat) */
function niceness(pid: number): Map<number, number> {
  const out = new Map<number, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      // the command name may hold spaces: count fields after its closing parenthesis
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      out.set(Number(tid), Number(fields[16]))
    } catch {
      // a thread that ended meanwhile
    }
  }
  return out
}

t.test('a running daemon: main thread as started, every other thread 10 nicer', { skip: process.platform !== 'linux' && 'Linux only' }, async (t) => {
  const dir = t.testdir()
  const d = await spawnDaemon(t, dir)
  // a login runs a hash on the pool: the threads doing it are among the lowered ones
  const login = await call(d.url, 'POST', '/api/auth/login', { json: { email: 'nobody@example.com', password: 'not-a-real-password' } })
  t.equal(login.status, 401)
  const nice = niceness(d.proc.pid!)
  const main = nice.get(d.proc.pid!)
  t.equal(main, getPriority(process.pid), 'the main thread keeps the niceness it was started with')
  const others = [...nice].filter(([tid]) => tid !== d.proc.pid)
  t.ok(others.length >= 4, `${others.length} helper threads (libuv's pool has 4)`)
  for (const [tid, n] of others) t.equal(n, Math.min(19, main! + HELPER_NICENESS), `thread ${tid}`)
  await d.stop()
})

t.test('a process started nicer keeps the gap (capped at 19), and nothing is raised', { skip: process.platform !== 'linux' && 'Linux only' }, async (t) => {
  // a child that sleeps, started at nice 15: its threads go to 19, never below 15
  const child = spawn('nice', ['-n', '15', process.execPath, '-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' })
  t.teardown(() => child.kill('SIGKILL'))
  await new Promise((r) => setTimeout(r, 500))
  const pid = child.pid!
  const before = niceness(pid)
  t.equal(before.get(pid), 15)
  const lowered = yieldHelperThreads({ pid })
  const after = niceness(pid)
  t.equal(lowered, after.size - 1, 'every thread but the main one')
  t.equal(after.get(pid), 15, 'main thread untouched')
  for (const [tid, n] of after) if (tid !== pid) t.equal(n, 19, `thread ${tid}: 15 + 10, capped`)
  t.equal(yieldHelperThreads({ pid }), 0, 'a second call changes nothing')
})

t.test('no such process: nothing lowered, no error', async (t) => {
  t.equal(yieldHelperThreads({ pid: 2 ** 22 + 12345 }), 0)
})
