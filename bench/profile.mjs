#!/usr/bin/env node
/**
 * Where the time goes: runs `authd start` under `node --cpu-prof`, pinned like the bench, puts
 * one kind of load on it, and prints the self time by area (authd's modules, each dependency,
 * node internals, GC) and the top functions. The .cpuprofile is kept for Chrome DevTools.
 *
 *   node bench/profile.mjs me|me-distinct|login|login-429 [--seconds 8] [--out DIR]
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { summarise } from './lib/cpuprofile.mjs'
import { chooseGenerator, load } from './lib/load.mjs'
import { cpuPlan, run } from './lib/proc.mjs'
import { LOGIN_USERS, loginEmail, PASSWORD, prepare, startDaemon, unitEnvironment } from './lib/setup.mjs'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seconds: { type: 'string', default: '8' },
    out: { type: 'string', default: join(os.tmpdir(), 'authd-profiles') },
    'no-build': { type: 'boolean', default: false },
  },
})
const kind = positionals[0] ?? 'me'
const KINDS = ['me', 'me-distinct', 'login', 'login-429']
if (!KINDS.includes(kind)) {
  process.stderr.write(`usage: node bench/profile.mjs ${KINDS.join('|')} [--seconds N]\n`)
  process.exit(2)
}
const log = (s) => process.stderr.write(`[profile] ${s}\n`)
if (!opts['no-build']) await run([process.execPath, join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT })
const generator = chooseGenerator(log)
const cpus = cpuPlan()
if (cpus.pinned) spawnSync('taskset', ['-pc', String(cpus.load), String(process.pid)], { stdio: 'ignore' })

const work = mkdtempSync(join(os.tmpdir(), 'authd-profile-'))
process.on('exit', () => rmSync(work, { recursive: true, force: true }))
const env = { ...unitEnvironment(ROOT), AUTHD_SERVER_TRUST_PROXY: '127.0.0.1/32', AUTHD_LOG_LEVEL: 'info' }
const data = await prepare({ root: ROOT, dir: join(work, 'data'), work, env, users: 1000, tokens: kind === 'me-distinct' ? 12_288 : 100 })
const profDir = join(work, 'prof')
const daemon = await startDaemon({
  root: ROOT,
  dir: join(work, 'data'),
  env,
  nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
  cpu: cpus.server,
  logFile: join(work, 'authd.log'),
})
const seconds = Number(opts.seconds)
const spec = {
  me: { path: '/api/auth/me', headers: { Authorization: `Bearer ${data.oneToken}` } },
  'me-distinct': { kind: 'tokens', tokensFile: data.tokensFile },
  login: { path: '/api/auth/login', kind: 'login', password: PASSWORD, users: LOGIN_USERS, connections: 16 },
  'login-429': { path: '/api/auth/login', method: 'POST', body: JSON.stringify({ email: loginEmail(0), password: PASSWORD }) },
}[kind]
// a short warm-up, so start-up and JIT do not dominate the profile
await load(generator, { url: daemon.url, cpu: cpus.load, seconds: 2, connections: 32, ...spec })
const before = threadCpu(daemon.pid)
const r = await load(generator, { url: daemon.url, cpu: cpus.load, seconds, connections: 32, ...spec })
const after = threadCpu(daemon.pid)
await daemon.stop()
// CPU of the main thread (the event loop, what the profile sees) and of all the others (libuv's
// pool running argon2 and file writes, lmdb's writer, V8's compiler and GC helpers)
const mainMs = (after.get(daemon.pid) ?? 0) - (before.get(daemon.pid) ?? 0)
let otherMs = 0
for (const [tid, ms] of after) if (tid !== daemon.pid) otherMs += ms - (before.get(tid) ?? 0)
const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'))
mkdirSync(opts.out, { recursive: true })
const kept = join(opts.out, `${kind}.cpuprofile`)
spawnSync('cp', [join(profDir, file), kept])
// the measured run only: it ended just before the daemon was stopped
const s = summarise(kept, 25, seconds - 0.5)
process.stdout.write(
  `${kind}: ${r.rps.toFixed(0)} requests/s under load (${seconds} s after a 2 s warm-up; the profile below covers the measured run)\n` +
    `CPU per request: main thread ${((mainMs * 1000) / r.requests).toFixed(0)} µs, other threads ${((otherMs * 1000) / r.requests).toFixed(0)} µs\n` +
    `main-thread profile: busy ${s.busyMs.toFixed(0)} ms, idle ${s.idleMs.toFixed(0)} ms\n\nself time by area:\n${s.areas.slice(0, 20).join('\n')}\n\n` +
    `top functions (self time):\n${s.functions.join('\n')}\n\nprofile: ${kept}\n`,
)

/** CPU time (ms) so far of each thread of `pid`, from /proc */
function threadCpu(pid) {
  const out = new Map()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
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
