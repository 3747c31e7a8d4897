/**
 * A hash's page faults, measured: under the unit's environment each argon2 hash works in a
 * mapping of its own (19 MiB at the default parameters), which Linux backs with huge pages where
 * it covers whole 2 MiB-aligned stretches and with 4 KiB pages elsewhere. The hasher makes a
 * 2 MiB-aligned mapping before its first hash (src/core/passwords.ts, anchorHashMemory), so that
 * the hash's mapping, placed just below, covers 9 such stretches wherever the process's other
 * mappings ended. Without it, about half of the daemon's starts got 8, and ~510 faults more a
 * hash.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import t from 'tap'
import { builtInDefaults } from '../../src/config/defaults.js'
import { ROOT } from '../helpers/app.js'
import { readUnit, values } from './files.js'

const glibc = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime
const thp = ((): string => {
  try {
    return readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8')
  } catch {
    return ''
  }
})()
const skip =
  process.platform !== 'linux' || glibc === undefined
    ? 'huge pages through glibc are a Linux matter'
    : !/\[(always|madvise)\]/.test(thp)
      ? 'transparent huge pages are off on this machine'
      : false

const unitEnv = Object.fromEntries(
  values(readUnit(), 'Service', 'Environment').map((kv) => {
    const eq = kv.indexOf('=')
    return [kv.slice(0, eq), kv.slice(eq + 1)]
  }),
)
const { passwords } = builtInDefaults()

// The child first leaves the lowest mapping ending 1.5 MiB past a 2 MiB boundary (an aligned
// 2 MiB mapping, then 2.5 MiB below it): where a 19 MiB hash placed just below gets 8 huge
// pages. Then it hashes once (which places the mappings) and prints the median of the page
// faults of the next nine hashes (one that found no free huge page does not count), either with
// argon2 called directly or through the hasher.
const child = (through: 'argon2' | 'hasher'): string => `
import argon2 from 'argon2'
import { createPasswordHasher } from './dist/core/passwords.js'
const keep = [Buffer.allocUnsafeSlow(2 * 1024 * 1024 - 32), Buffer.allocUnsafeSlow(2.5 * 1024 * 1024 - 32)]
const params = { memoryKib: ${passwords.memory_kib}, timeCost: ${passwords.time_cost}, parallelism: ${passwords.parallelism} }
const hasher = await createPasswordHasher({ ...params, concurrency: 1, maxQueue: 4 })
const options = { type: argon2.argon2id, memoryCost: params.memoryKib, timeCost: params.timeCost, parallelism: params.parallelism }
const hash = ${through === 'hasher' ? '(p) => hasher.hash(p)' : '(p) => argon2.hash(p, options)'}
const verify = ${through === 'hasher' ? '(e, p) => hasher.verify(e, p)' : '(e, p) => argon2.verify(e, p)'}
const encoded = await hash('a long passphrase')
const faults = []
for (let i = 0; i < 9; i++) {
  const before = process.resourceUsage().minorPageFault
  if (!(await verify(encoded, 'a long passphrase'))) throw new Error('no verify')
  faults.push(process.resourceUsage().minorPageFault - before)
}
process.stdout.write(String(faults.sort((a, b) => a - b)[4]) + ' ' + keep.length)
`

function faultsPerHash(through: 'argon2' | 'hasher'): number {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MALLOC_') && k !== 'GLIBC_TUNABLES' && k !== 'NODE_OPTIONS'))
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', child(through)], { cwd: ROOT, env: { ...clean, ...unitEnv } as NodeJS.ProcessEnv, encoding: 'utf8', timeout: 60_000 })
  if (r.status !== 0) throw new Error(`the hashing child failed: ${r.stderr}`)
  return Number(r.stdout.split(' ')[0])
}

t.test("a hash's memory is placed where huge pages cover all but its last 1 MiB", { skip }, async (t) => {
  // the other mappings of a process start at random addresses: now and then one leaves a hole
  // that the unanchored hash lands in well, so the control is taken up to three times
  let direct = 0
  for (let i = 0; i < 3 && direct <= 600; i++) direct = Math.max(direct, faultsPerHash('argon2'))
  if (direct <= 600) {
    // Linux 6.7 to 6.12 align every large mapping themselves: nothing is left to the hasher
    t.skip(`this kernel placed the unanchored hash well already (${direct} page faults a hash)`, () => {})
    return
  }
  t.ok(direct > 600, `argon2 alone below the shifted mapping: ${direct} page faults a hash (8 huge pages): the measurement can tell`)
  for (let i = 0; i < 3; i++) {
    const anchored = faultsPerHash('hasher')
    t.ok(anchored < 400, `through the hasher: ${anchored} page faults a hash (9 huge pages and the rest in 4 KiB)`)
  }
})
