/**
 * The memory settings of config/authd.service, measured: with the unit's environment, the
 * 19 MiB an argon2 hash works in goes back to the system when the hash is done, whichever libuv
 * thread ran it. Without it, glibc keeps one such block per thread that ever hashed (the bench's
 * RSS grew between rounds by 40 MB, in steps of 19 MiB).
 */
import { spawnSync } from 'node:child_process'
import t from 'tap'
import { builtInDefaults } from '../../src/config/defaults.js'
import { ROOT } from '../helpers/app.js'
import { readUnit, values } from './files.js'

const glibc = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime
const skip = process.platform !== 'linux' || glibc === undefined ? 'the settings are for glibc on Linux' : false

const unitEnv = Object.fromEntries(
  values(readUnit(), 'Service', 'Environment').map((kv) => {
    const eq = kv.indexOf('=')
    return [kv.slice(0, eq), kv.slice(eq + 1)]
  }),
)

const { passwords } = builtInDefaults()

// One hash to start (the baseline), then rounds of four at once: libuv has four threads, so
// every one of them runs hashes. Prints the growth of RSS over the baseline in MB.
const child = `
import argon2 from 'argon2'
const options = { type: argon2.argon2id, memoryCost: ${passwords.memory_kib}, timeCost: ${passwords.time_cost}, parallelism: ${passwords.parallelism} }
const encoded = await argon2.hash('a long passphrase', options)
if (!(await argon2.verify(encoded, 'a long passphrase'))) throw new Error('no verify')
const base = process.memoryUsage().rss
for (let round = 0; round < 3; round++) await Promise.all([1, 2, 3, 4].map(() => argon2.verify(encoded, 'a long passphrase')))
process.stdout.write(String((process.memoryUsage().rss - base) / 1048576))
`

function growthMb(env: Record<string, string>): number {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MALLOC_') && k !== 'GLIBC_TUNABLES' && k !== 'NODE_OPTIONS'))
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', child], { cwd: ROOT, env: { ...clean, ...env } as NodeJS.ProcessEnv, encoding: 'utf8', timeout: 60_000 })
  if (r.status !== 0) throw new Error(`the hashing child failed: ${r.stderr}`)
  return Number(r.stdout)
}

t.test('the unit sets the allocator and V8 settings the bench runs with', async (t) => {
  t.equal(unitEnv.MALLOC_ARENA_MAX, '1')
  t.match(unitEnv.GLIBC_TUNABLES, /(^|:)glibc\.malloc\.mmap_threshold=1048576(:|$)/)
  t.match(unitEnv.GLIBC_TUNABLES, /(^|:)glibc\.malloc\.hugetlb=1(:|$)/)
  t.equal(unitEnv.NODE_OPTIONS, '--max-semi-space-size=6')
})

t.test("with the unit's environment, argon2's memory is given back after every hash", { skip }, async (t) => {
  const without = growthMb({})
  t.ok(without > 35, `without the settings the threads keep their hash memory (RSS grew ${without.toFixed(1)} MB): the measurement can tell`)
  const withUnit = growthMb(unitEnv)
  t.ok(withUnit < 12, `with the unit's settings RSS grew ${withUnit.toFixed(1)} MB over twelve hashes on four threads`)
})
