/**
 * The real daemon as a child process: `node bin/authd.js start --port 0` on a temp data
 * directory, loopback only, its output appended to a log file the hygiene case reads later.
 */
import { spawn } from 'node:child_process'
import { createWriteStream, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { get } from './http.mjs'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const AUTHD = join(ROOT, 'bin', 'authd.js')

/** Every log file written during this process, for the hygiene case. */
export const logFiles = new Set()

const live = new Set()
/** kill -9 every daemon still running (between cases, and if the run is cut short). */
export function killAllDaemons() {
  for (const p of live) p.kill('SIGKILL')
}
process.on('exit', killAllDaemons)

/** The environment a daemon sees: nothing AUTHD_* from ours, only what the case sets. */
function daemonEnv(env) {
  const out = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', AUTHD_LOG_LEVEL: 'info' }
  return { ...out, ...env }
}

/**
 * Starts authd and resolves once /readyz answers 200. `readyMs` is the time from spawn to that
 * first 200 (process start, store open, keys, dummy hash, listen).
 */
export async function startDaemon({ dataDir, env = {}, logFile, startTimeoutMs = 20_000 }) {
  const started = performance.now()
  const proc = spawn(process.execPath, [AUTHD, 'start', '--data', dataDir, '--host', '127.0.0.1', '--port', '0'], {
    cwd: dataDir,
    env: daemonEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  live.add(proc)
  logFiles.add(logFile)
  const log = createWriteStream(logFile, { flags: 'a' })
  proc.stdout.pipe(log, { end: false })
  proc.stderr.pipe(log, { end: false })
  let exitInfo = null
  const exited = new Promise((resolve) =>
    proc.once('exit', (code, signal) => {
      exitInfo = { code, signal }
      live.delete(proc)
      // let the pipes drain into the file before closing it
      setImmediate(() => log.end())
      resolve(exitInfo)
    }),
  )

  let head = ''
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`authd did not start within ${startTimeoutMs} ms:\n${head}`)), startTimeoutMs)
    const onData = (chunk) => {
      if (head.length < 64 * 1024) head += chunk.toString('utf8')
      const m = /"event":"listening"[^\n]*?"port":(\d+)/.exec(head)
      if (m !== null) done(null, Number(m[1]))
    }
    const onExit = () => done(new Error(`authd exited before listening:\n${head}`))
    function done(err, value) {
      clearTimeout(timer)
      proc.stdout.off('data', onData)
      proc.stderr.off('data', onData)
      proc.off('exit', onExit)
      if (err) reject(err)
      else resolve(value)
    }
    proc.stdout.on('data', onData)
    proc.stderr.on('data', onData)
    proc.once('exit', onExit)
  }).catch(async (err) => {
    if (exitInfo === null) proc.kill('SIGKILL')
    await exited
    throw err
  })

  const url = `http://127.0.0.1:${port}`
  // bounded poll: every 10 ms until ready or the start timeout
  let readyMs = null
  while (performance.now() - started < startTimeoutMs && exitInfo === null) {
    const r = await get(url, '/readyz', { timeoutMs: 1000 }).catch(() => null)
    if (r !== null && r.status === 200) {
      readyMs = performance.now() - started
      break
    }
    await sleep(10)
  }
  if (readyMs === null) {
    if (exitInfo === null) proc.kill('SIGKILL')
    await exited
    throw new Error(`authd never became ready:\n${head}`)
  }

  return {
    proc,
    pid: proc.pid,
    port,
    url,
    readyMs,
    logFile,
    exited,
    alive: () => exitInfo === null,
    exitInfo: () => exitInfo,
    /** resident set size in bytes, from /proc */
    rss() {
      const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8')
      const m = /VmRSS:\s+(\d+) kB/.exec(status)
      return m === null ? NaN : Number(m[1]) * 1024
    },
    /** kill -9 */
    async crash() {
      if (exitInfo === null) proc.kill('SIGKILL')
      return exited
    },
    /** SIGTERM, then SIGKILL after `graceMs` */
    async stop(graceMs = 12_000) {
      if (exitInfo !== null) return exitInfo
      proc.kill('SIGTERM')
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs)
      const info = await exited
      clearTimeout(timer)
      return info
    },
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Log lines of a file as parsed JSON (lines that are not JSON are returned as { raw }). */
export function readLogLines(file) {
  const text = readFileSync(file, 'utf8')
  const out = []
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    try {
      out.push(JSON.parse(line))
    } catch {
      out.push({ raw: line })
    }
  }
  return out
}

/**
 * Forces a full garbage collection in a daemon started with
 * NODE_OPTIONS=--heapsnapshot-signal=SIGUSR2 (a heap snapshot collects garbage first), waits for
 * the snapshot to be written, and deletes it. What the heap holds afterwards is live data.
 */
export async function collectGarbage(daemon, dataDir, timeoutMs = 60_000) {
  const snapshots = () => readdirSync(dataDir).filter((f) => f.endsWith('.heapsnapshot'))
  const before = new Set(snapshots())
  process.kill(daemon.pid, 'SIGUSR2')
  const started = performance.now()
  let file
  let size = -1
  while (performance.now() - started < timeoutMs) {
    await sleep(250)
    file ??= snapshots().find((f) => !before.has(f))
    if (file === undefined) continue
    const now = statSync(join(dataDir, file)).size
    // written when it stops growing and the daemon answers again
    if (now === size && now > 0 && (await get(daemon.url, '/healthz', { timeoutMs: 5000 }).catch(() => null))?.status === 200) break
    size = now
  }
  if (file === undefined) throw new Error('no heap snapshot appeared: was the daemon started with --heapsnapshot-signal?')
  rmSync(join(dataDir, file), { force: true })
}
