/**
 * The load generator: wrk (native, from Debian) pinned to its own core, or autocannon when wrk
 * is missing and cannot be installed. Both report the same shape: requests, seconds, requests per
 * second, latency percentiles in ms, and errors (socket errors and non-2xx answers).
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { has, lastJson, pinned, run } from './proc.mjs'

const WRK_DIR = fileURLToPath(new URL('../wrk/', import.meta.url))
const AUTOCANNON_RUNNER = fileURLToPath(new URL('./autocannon-run.mjs', import.meta.url))

/** wrk if present; else apt-get it when root; else autocannon */
export function chooseGenerator(log) {
  if (has('wrk')) return 'wrk'
  if (process.getuid?.() === 0 && has('apt-get')) {
    log('wrk is missing: installing it with apt-get')
    const r = spawnSync('sh', ['-c', 'apt-get install -y wrk || (apt-get update && apt-get install -y wrk)'], { stdio: 'ignore', timeout: 120_000 })
    if (r.status === 0 && has('wrk')) return 'wrk'
  }
  log('wrk is not available: falling back to autocannon')
  return 'autocannon'
}

/**
 * One load run.
 * spec: { url, path, kind: 'static' | 'tokens' | 'login' | 'refresh', method, headers, body,
 *         tokensFile (tokens, refresh), cookieName (refresh), password, users (login),
 *         connections, seconds, cpu }
 */
export async function load(generator, spec) {
  return generator === 'wrk' ? wrk(spec) : autocannon(spec)
}

async function wrk(spec) {
  const argv = ['wrk', '-t1', `-c${spec.connections}`, `-d${spec.seconds}s`, '--timeout', '5s']
  for (const [k, v] of Object.entries(spec.headers ?? {})) argv.push('-H', `${k}: ${v}`)
  const url = spec.url + (spec.path ?? '/')
  if (spec.kind === 'tokens') argv.push('-s', WRK_DIR + 'tokens.lua', url, '--', spec.tokensFile)
  else if (spec.kind === 'refresh') argv.push('-s', WRK_DIR + 'refresh.lua', url, '--', spec.tokensFile, spec.cookieName)
  else if (spec.kind === 'login') argv.push('-s', WRK_DIR + 'login.lua', url, '--', spec.password, String(spec.users))
  else argv.push('-s', WRK_DIR + 'static.lua', url, '--', spec.method ?? 'GET', spec.body ?? '')
  const r = lastJson(await run(pinned(spec.cpu, argv)), 'BENCH ')
  const seconds = r.duration_us / 1e6
  return {
    requests: r.requests,
    seconds,
    rps: r.requests / seconds,
    p50Ms: r.p50_us / 1000,
    p99Ms: r.p99_us / 1000,
    maxMs: r.max_us / 1000,
    errors: r.connect_errors + r.read_errors + r.write_errors + r.timeouts,
    non2xx: r.non2xx,
  }
}

async function autocannon(spec) {
  const out = await run(pinned(spec.cpu, [process.execPath, AUTOCANNON_RUNNER, JSON.stringify(spec)]))
  return lastJson(out, 'BENCH ')
}
