/**
 * authctl backup's copy (Store.backup, LMDB): the temporary directory it copies into beside the
 * backup file is owner-only from the copy's first byte, is removed when the copy is cut short by
 * SIGINT or SIGTERM (Ctrl-C, a cron job's timeout), and one left by a copy that was killed
 * outright (kill -9) is removed by the next backup into that directory once it is a day old.
 */
import { existsSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { runNode } from '../helpers/daemon.js'
import { ROOT } from '../helpers/app.js'

const IMPORT = new URL('../helpers/tap-typescript/import.mjs', import.meta.url).href
const STORE = pathToFileURL(join(ROOT, 'src/store/lmdb-store.ts')).href

const CASES = [
  { signal: 'SIGINT', heldBack: false },
  { signal: 'SIGTERM', heldBack: false },
  // a listener of the program's own keeps the raised signal from ending it: the backup's own
  // exit ends it, and the copy failing on its removed directory meanwhile is not reported (the
  // copy made to wait for a thread, behind four hashes, so that it starts after the removal)
  { signal: 'SIGINT', heldBack: true },
] as const
for (const { signal, heldBack } of CASES) {
  t.test(`a backup cut short by ${signal}${heldBack ? ' (held back by a listener of the program)' : ''} leaves no temporary copy behind, and the signal ends the program`, async (t) => {
    const dir = t.testdir({ backups: {} })
    const data = join(dir, 'data')
    const store = await openLmdbStore({ path: data })
    await store.close()
    const child = join(dir, 'child.ts')
    writeFileSync(
      child,
      `import { pbkdf2 } from 'node:crypto'
import { openLmdbStore } from ${JSON.stringify(STORE)}
const store = await openLmdbStore({ path: ${JSON.stringify(data)} })
${heldBack ? "for (let i = 0; i < 4; i++) pbkdf2('x', 'y', 8000, 32, 'sha256', () => {})\n" : ''}process.umask(0o022)
const copying = store.backup(${JSON.stringify(join(dir, 'backups', 'b.mdb'))})
// while the copy runs: the umask that liblmdb's file is created under
process.stdout.write(JSON.stringify({ umask: process.umask(0o022) }) + '\\n')
process.umask(0o077)
${heldBack ? `process.on(${JSON.stringify(signal)}, () => {})\n` : ''}process.emit(${JSON.stringify(signal)}, ${JSON.stringify(signal)})
await copying
process.stdout.write('finished\\n')
`,
    )
    // a program of its own, as authctl is: none of the test runner's hooks (its NODE_OPTIONS
    // load a signal-exit handler that raises the signal again itself)
    const run = await runNode([`--import=${IMPORT}`, child], { cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME } })
    // by the signal itself, or, where the raise was held back, by the status a shell gives it
    const status = signal === 'SIGINT' ? 130 : 143
    if (heldBack) t.same([run.code, run.signal, run.stderr], [status, null, ''], 'ended with the status a shell gives the signal, nothing on stderr')
    else t.ok((run.code === null && run.signal === signal) || (run.code === status && run.signal === null), `ended as the signal ends a program (${run.code}, ${run.signal}): ${run.stderr}`)
    t.same(JSON.parse(run.stdout.split('\n')[0]!), { umask: 0o077 }, 'the copy is made owner-only (umask 077)')
    t.notMatch(run.stdout, /finished/)
    t.same(readdirSync(join(dir, 'backups')), [], 'no temporary directory, no backup file')
  })
}

t.test('a backup puts the umask back, and removes the temporary directories of killed backups a day old, not younger ones', async (t) => {
  const dir = t.testdir({ backups: {} })
  const store = await openLmdbStore({ path: join(dir, 'data') })
  t.teardown(() => store.close())
  const backups = join(dir, 'backups')
  const old = join(backups, '.authd-backup-Old123')
  const young = join(backups, '.authd-backup-New456')
  for (const d of [old, young]) {
    mkdirSync(d)
    writeFileSync(join(d, 'data.mdb'), 'a partial copy')
  }
  const dayAgo = (Date.now() - 25 * 3600_000) / 1000
  utimesSync(old, dayAgo, dayAgo)
  const before = process.umask(0o022)
  try {
    await store.backup(join(backups, 'b.mdb'))
    t.equal(process.umask(0o022), 0o022, 'the umask as it was')
  } finally {
    process.umask(before)
  }
  t.notOk(existsSync(old), 'a day old: removed')
  t.ok(existsSync(young), 'younger (a backup that may still run): kept')
  t.equal(statSync(join(backups, 'b.mdb')).mode & 0o777, 0o600)
  t.same(readdirSync(backups).sort(), ['.authd-backup-New456', 'b.mdb'])
})
