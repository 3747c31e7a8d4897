/**
 * A data.mdb cut short (a copy that ran out of space, an interrupted restore) used to kill authd
 * and authctl with SIGBUS, and one emptied was taken as a new store, its users silently gone.
 * Both are refused before LMDB maps the file, with a sentence (src/store/lmdb-file-check.ts).
 * The cut stores are opened by the real authctl in a child process: a crash would be its exit by
 * a signal, not this test's.
 */
import t from 'tap'
import { copyFileSync, mkdirSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { lmdbFileProblem } from '../../src/store/lmdb-file-check.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { call, lmdbOnly } from '../helpers/app.js'
import { runCtl, type CtlResult } from '../cli/run.js'
import { spawnDaemon } from '../helpers/daemon.js'
import { user } from '../helpers/records.js'

const PAGE = 4096
const USERS = 600

/** authctl user list --json on the store in `dir`, in a process of its own */
const userList = (dir: string): Promise<CtlResult> => runCtl(['--data', dir, 'user', 'list', '--json'])

const damaged = (file: string): RegExp =>
  new RegExp(`^authctl: ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is damaged: [^\\n]+\\. Restore a backup of the store, or move the data directory aside to start a new, empty one\\.\\n$`)

t.test('a store cut short anywhere is refused with a sentence, never a crash', { skip: lmdbOnly('an LMDB data file') }, async (t) => {
  const base = t.testdir()
  const whole = join(base, 'whole')
  const store = await openLmdbStore({ path: whole })
  // enough users for trees of more than one level
  for (let i = 0; i < USERS; i++) await store.createUser(user(`user-${String(i).padStart(5, '0')}`, `user${i}@example.com`))
  await store.close()
  t.equal(lmdbFileProblem(join(whole, 'data.mdb')), undefined, 'the whole store looks whole')
  const intact = await userList(whole)
  t.equal(intact.code, 0, intact.stderr)
  t.equal(intact.json().users.length, USERS)

  const size = statSync(join(whole, 'data.mdb')).size
  const pages = size / PAGE
  // 24 page boundaries spread over the file, and cuts inside the first pages
  const cuts = [100, PAGE, PAGE + 1904, ...Array.from({ length: 24 }, (_, i) => (2 + Math.floor((i * (pages - 2)) / 24)) * PAGE)].filter((n) => n < size)
  let refused = 0
  for (const n of cuts) {
    const dir = join(base, `cut-${n}`)
    mkdirSync(dir, { mode: 0o700 })
    copyFileSync(join(whole, 'data.mdb'), join(dir, 'data.mdb'))
    copyFileSync(join(whole, 'lock.mdb'), join(dir, 'lock.mdb'))
    truncateSync(join(dir, 'data.mdb'), n)
    const r = await userList(dir)
    t.equal(r.signal, null, `cut at ${n} bytes: no crash`)
    if (r.code === 0) continue
    t.equal(r.code, 1, `cut at ${n} bytes: exit 1`)
    t.match(r.stderr, damaged(join(dir, 'data.mdb')), `cut at ${n} bytes: the sentence`)
    refused++
  }
  t.ok(refused >= cuts.length - 2, `refused ${refused} of ${cuts.length} cuts (a cut that keeps every page the list reads may open)`)
})

t.test('an emptied data.mdb beside a used lock.mdb is refused; two empty files are a new store', { skip: lmdbOnly('an LMDB data file') }, async (t) => {
  const dir = join(t.testdir(), 'data')
  const store = await openLmdbStore({ path: dir })
  await store.createUser(user('user-1', 'ann@example.com'))
  await store.close()
  truncateSync(join(dir, 'data.mdb'), 0)
  await t.rejects(openLmdbStore({ path: dir }), {
    code: 'STORE_DAMAGED',
    message: `${join(dir, 'data.mdb')} is damaged: it is empty, and its lock.mdb shows a store was open here before. Restore a backup of the store, or move the data directory aside to start a new, empty one`,
  })
  const r = await userList(dir)
  t.equal(r.code, 1)
  t.match(r.stderr, damaged(join(dir, 'data.mdb')), 'authctl says so too')

  // what authd leaves when it stops between making the two files and LMDB's first open of them
  const fresh = join(t.testdir(), 'fresh')
  mkdirSync(fresh, { mode: 0o700 })
  writeFileSync(join(fresh, 'data.mdb'), '')
  writeFileSync(join(fresh, 'lock.mdb'), '')
  const opened = await openLmdbStore({ path: fresh })
  t.same(await opened.listUsers(), [], 'a new, empty store')
  await opened.close()
})

t.test('a file in another layout is left to LMDB, not judged', async (t) => {
  const file = join(t.testdir(), 'data.mdb')
  // LMDB 0.9's: a 16-byte page header, data version 1
  const page = Buffer.alloc(2 * PAGE)
  page.writeUInt32LE(0xbeefc0de, 16)
  page.writeUInt32LE(1, 20)
  writeFileSync(file, page.subarray(0, 300))
  t.equal(lmdbFileProblem(file), undefined)
})

t.test('a store a daemon is writing meanwhile is never taken as damaged', { skip: lmdbOnly('an LMDB data file') }, async (t) => {
  const dir = t.testdir()
  const authd = await spawnDaemon(t, dir, { env: { AUTHD_RATE_LIMIT_REGISTER_PER_IP: '100000/1m' } })
  let writing = true
  let written = 0
  // registrations, two at a time, until the lists are done (bounded in count)
  const writer = async (k: number): Promise<void> => {
    for (let i = 0; i < 300 && writing; i++) {
      const r = await call(authd.url, 'POST', '/api/auth/register', { json: { email: `w${k}-${i}@example.com`, password: 'vermilion-otter-42' } })
      if (r.status === 201) written++
    }
  }
  const writers = Promise.all([writer(0), writer(1)])
  const codes: Array<number | null> = []
  for (let i = 0; i < 10; i++) {
    const r = await userList(dir)
    codes.push(r.code)
    if (r.code !== 0) t.fail(`authctl ${i}: ${r.stderr}`)
  }
  writing = false
  await writers
  t.same(codes, Array(10).fill(0), 'every open while the daemon committed succeeded')
  t.ok(written > 0, `the daemon committed meanwhile (${written} registrations)`)
})
