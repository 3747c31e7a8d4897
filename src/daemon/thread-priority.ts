/**
 * The event loop before the hashes. Password hashes run on libuv's thread pool, next to the main
 * thread that answers every request; when they share a core, a woken event loop waits for the
 * scheduler to give it the CPU, and under a login flood a /me or a 429 could wait milliseconds
 * behind a hash. On Linux the nice value belongs to each thread, so every thread of the process
 * but the main one (libuv's pool: argon2, store commits, log writes; V8's helpers) is made 10
 * nicer than the main thread: a woken event loop then takes the CPU from a hash at once. Hashing
 * loses nothing when the machine has CPU to spare; it only yields to requests when it has not.
 */
import { getPriority, setPriority } from 'node:os'
import { readdirSync } from 'node:fs'

export const HELPER_NICENESS = 10

/** Lowers the priority of the process's other threads; returns how many were lowered. */
export function yieldHelperThreads(opts: { pid?: number; taskDir?: string } = {}): number {
  if (process.platform !== 'linux') return 0
  const pid = opts.pid ?? process.pid
  let tids: string[]
  try {
    tids = readdirSync(opts.taskDir ?? `/proc/${pid}/task`)
  } catch {
    return 0
  }
  const nice = Math.min(19, getPriority(pid) + HELPER_NICENESS)
  let lowered = 0
  for (const tid of tids) {
    const id = Number(tid)
    if (!Number.isInteger(id) || id === pid) continue
    try {
      // setpriority(2) with a thread id sets that thread's nice value (Linux/NPTL)
      if (getPriority(id) < nice) {
        setPriority(id, nice)
        lowered++
      }
    } catch {
      // a thread that ended meanwhile
    }
  }
  return lowered
}
