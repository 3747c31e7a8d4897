import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { openLmdbStore } from '../../src/store/lmdb-store.js'

// LMDB trusts its data file and can crash the whole process on a file that is not its own
t.test('refuses a data directory whose data.mdb is not an LMDB file, without opening it', async (t) => {
  const dir = t.testdir()
  writeFileSync(join(dir, 'data.mdb'), Buffer.alloc(8192, 0x41))
  await t.rejects(openLmdbStore({ path: dir }), { code: 'NOT_A_STORE', message: /data\.mdb is not an authd store/ })
})

t.test('opens a real store again after it was written and closed', async (t) => {
  const dir = t.testdir()
  const first = await openLmdbStore({ path: dir })
  await first.close()
  const again = await openLmdbStore({ path: dir })
  t.equal((await again.listUsers()).length, 0)
  await again.close()
})
