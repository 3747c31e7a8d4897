/** Child processes for the bench: CPU pinning with taskset, and one-line JSON outputs. */
import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import os from 'node:os'

export const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0

/**
 * Which cores the server side and the load generator get. With two or more cores and taskset,
 * the server (authd, the bare server, the raw baselines) runs on the last core and the load
 * generator on the first, so they never take each other's time. The PostgreSQL server (`db`)
 * gets the core before the last when there are three or more; on two, the load generator's.
 * `pair` is the two of them, server and load generator: the two-core login reference gives
 * authd (and argon2-raw) these two cores, as on a two-core VM, one for its hash queue and one for
 * its event loop (see bench/run.mjs).
 */
export function cpuPlan() {
  const n = os.availableParallelism()
  if (n < 2 || !has('taskset')) return { pinned: false, server: null, load: null, db: null, all: null, pair: null, cores: n }
  // The database is another machine in production: it gets a core of its own where there is one,
  // and on two cores the load generator's rather than authd's (the load generator is the lighter
  // tenant at the PostgreSQL rows' rates, and authd's core then holds authd alone, as it would).
  return { pinned: true, server: n - 1, load: 0, db: n >= 3 ? n - 2 : 0, all: `0-${n - 1}`, pair: `0,${n - 1}`, cores: n }
}

/**
 * Moves every thread of a running process to `cpu` (a core, or a list like `0,1`); new threads
 * inherit it from the thread that makes them. Nothing when not pinning.
 */
export function repin(pid, cpu) {
  if (cpu === null) return
  const r = spawnSync('taskset', ['-a', '-pc', String(cpu), String(pid)], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`taskset -a -pc ${cpu} ${pid} failed: ${r.stderr.trim()}`)
}

/**
 * The database's core for a --pg-cpu choice: 'auto' (the plan's `db`), 'server', 'load', or a
 * core number; null when not pinning.
 */
export function dbCpu(cpus, choice = 'auto') {
  if (!cpus.pinned) return null
  if (choice === 'auto') return cpus.db
  if (choice === 'server' || choice === 'load') return cpus[choice]
  const n = Number(choice)
  if (!Number.isInteger(n) || n < 0 || n >= cpus.cores) throw new Error(`--pg-cpu is auto, server, load or a core from 0 to ${cpus.cores - 1}, not ${choice}`)
  return n
}

/** argv prefixed with `taskset -c <cpu>` (a core, or a list like `0-1`) when pinning */
export const pinned = (cpu, argv) => (cpu === null ? argv : ['taskset', '-c', String(cpu), ...argv])

/** Runs argv to completion; resolves with stdout, rejects with stderr on a non-zero exit. */
export function run(argv, opts = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], ...opts })
    let out = ''
    let err = ''
    child.stdout.on('data', (c) => (out += c))
    child.stderr.on('data', (c) => (err += c))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${argv.join(' ')} exited ${code}: ${err.trim() || out.trim()}`))))
  })
}

/** The last line of `text` that starts with `prefix`, parsed as JSON */
export function lastJson(text, prefix = '') {
  const lines = text.split('\n').filter((l) => l.startsWith(prefix) && l.length > prefix.length)
  if (lines.length === 0) throw new Error(`no result line in output:\n${text.slice(-2000)}`)
  return JSON.parse(lines[lines.length - 1].slice(prefix.length))
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Resident memory of a process, in MB, from /proc (total, anonymous, file-backed) */
export function rss(pid) {
  let text
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8')
  } catch {
    return null
  }
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN)
  return { totalMb: kb('VmRSS') / 1024, anonMb: kb('RssAnon') / 1024, fileMb: kb('RssFile') / 1024, hwmMb: kb('VmHWM') / 1024 }
}

/** CPU time (user + system) a process has used, in clock ticks, from /proc */
function cpuTicks(pid) {
  try {
    // the fields after the command name, which is in parentheses and may hold spaces
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return null
  }
}

/**
 * Waits until a process is at rest: less than 20 ms of CPU in 500 ms (at most `maxMs`). A load
 * generator stops sending at once, but logins it left queued are still hashed for a second or
 * so after, each with its 19 MiB: memory is measured once they are done.
 */
export async function settle(pid, maxMs = 10_000) {
  const end = performance.now() + maxMs
  let before = cpuTicks(pid)
  while (before !== null && performance.now() < end) {
    await sleep(500)
    const now = cpuTicks(pid)
    if (now === null || now - before <= 2) return
    before = now
  }
}

/** CPU time (ms, user + system) so far of each thread of `pid`, from /proc: Map tid → ms */
export function threadCpuMs(pid) {
  const out = new Map()
  let tids = []
  try {
    tids = readdirSync(`/proc/${pid}/task`)
  } catch {
    return out
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      out.set(Number(tid), ((Number(f[11]) + Number(f[12])) * 1000) / 100)
    } catch {
      // the thread ended meanwhile
    }
  }
  return out
}

/** the CPU (ms) of `pid`'s main thread and of all its other threads between two threadCpuMs */
export function threadCpuSince(pid, before, after) {
  const main = (after.get(pid) ?? 0) - (before.get(pid) ?? 0)
  let other = 0
  for (const [tid, ms] of after) if (tid !== pid) other += ms - (before.get(tid) ?? 0)
  return { main, other }
}
