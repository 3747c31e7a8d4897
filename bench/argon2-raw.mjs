/**
 * The "argon2-raw" baseline: argon2id verifications per second at the configured parameters,
 * with at most as many running at once as authd's hash queue allows (the same function decides,
 * in a process started pinned as the daemon is). With a `widen-to` core list the process then
 * moves itself to those cores before it hashes, as the bench moves the daemon for its two-core
 * login reference.
 * Prints one JSON line.
 * args: dist-dir encoded-hash-file password seconds [widen-to]
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import os from 'node:os'
import { pathToFileURL } from 'node:url'
import { join } from 'node:path'
import argon2 from 'argon2'

const [distDir, hashFile, password, secondsText, widenTo] = process.argv.slice(2)
const { defaultHashConcurrency } = await import(pathToFileURL(join(distDir, 'daemon/services.js')).href)
const encoded = readFileSync(hashFile, 'utf8').trim()
// sized where the daemon sized its queue: on the cores this process was started on
const concurrency = defaultHashConcurrency()
if (widenTo) {
  const r = spawnSync('taskset', ['-a', '-pc', widenTo, String(process.pid)], { stdio: 'ignore' })
  if (r.status !== 0) throw new Error(`argon2-raw: taskset -a -pc ${widenTo} failed`)
}
const cores = os.availableParallelism()

async function run(ms) {
  const end = performance.now() + ms
  let n = 0
  const worker = async () => {
    while (performance.now() < end) {
      if (!(await argon2.verify(encoded, password))) throw new Error('argon2-raw: the bench password does not verify')
      n++
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return n
}

await run(300) // warm-up
const faultsBefore = process.resourceUsage().minorPageFault
const started = performance.now()
const n = await run(Number(secondsText) * 1000)
const elapsed = (performance.now() - started) / 1000
// page faults a hash: where its memory falls against the 2 MiB huge-page boundaries is chance,
// once per process (docs/performance.md, "The rows that miss")
const faultsPerHash = Math.round((process.resourceUsage().minorPageFault - faultsBefore) / n)
process.stdout.write(`${JSON.stringify({ ops: n, seconds: elapsed, perSecond: n / elapsed, concurrency, cores, faultsPerHash })}\n`)
