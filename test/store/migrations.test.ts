import { open } from 'lmdb'
import t from 'tap'
import { migrate, SCHEMA_VERSION, type Migration, type MigrationTarget } from '../../src/store/migrations.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { KeyRecord, UserRecord } from '../../src/store/store.js'
import { generateKey } from '../../src/core/keys.js'

// The store's on-disk layout, written here with lmdb directly (as an older authd would have left
// it) so that these tests do not depend on the code under test to build their fixtures.
const LMDB_OPTIONS = { noSubdir: false, maxDbs: 16, compression: false } as const

const fixtureUser: UserRecord = {
  id: 'u_fixture0000000000000001',
  email: 'old@example.com',
  passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$ZmFrZWhhc2hmYWtlaGFzaGZha2VoYXNoZmFrZWg',
  createdAt: 1_700_000_000_000,
  updatedAt: 1_700_000_000_000,
  disabled: false,
}

/** Writes a store as authd wrote it before the schema was versioned (no schema_version) or stamped `version`. */
async function writeFixture(dir: string, version: number | undefined): Promise<KeyRecord> {
  const root = open({ path: dir, ...LMDB_OPTIONS })
  const key = generateKey('ES256', 1_700_000_000_000)
  await root.transaction(() => {
    root.openDB({ name: 'users' }).put(fixtureUser.id, fixtureUser)
    root.openDB({ name: 'emails' }).put(fixtureUser.email, fixtureUser.id)
    root.openDB({ name: 'keys' }).put(key.kid, key)
    const meta = root.openDB({ name: 'meta' })
    meta.put('keys_version', 1)
    if (version !== undefined) meta.put('schema_version', version)
  })
  await root.close()
  return key
}

/** The version stamped on disk, read with lmdb directly (Store.schemaVersion() defaults when unstamped). */
async function stampedVersion(dir: string): Promise<unknown> {
  const root = open({ path: dir, ...LMDB_OPTIONS })
  const v = root.openDB({ name: 'meta' }).get('schema_version')
  await root.close()
  return v
}

t.test('a store written before schema versioning is migrated to the current schema on open, data intact', async (t) => {
  const dir = t.testdir()
  const key = await writeFixture(dir, undefined)
  t.equal(await stampedVersion(dir), undefined, 'the fixture carries no schema version')

  const store = await openLmdbStore({ path: dir })
  t.same(await store.getUserByEmail('old@example.com'), fixtureUser, 'users written by the old schema read back')
  t.same((await store.listKeys()).map((k) => k.kid), [key.kid], 'keys written by the old schema read back')
  t.equal(await store.schemaVersion(), SCHEMA_VERSION)
  await store.close()
  t.equal(await stampedVersion(dir), SCHEMA_VERSION, 'the store is stamped with the current version')
})

t.test('a brand-new store is stamped with the current version', async (t) => {
  const dir = t.testdir()
  const store = await openLmdbStore({ path: dir })
  await store.close()
  t.equal(await stampedVersion(dir), SCHEMA_VERSION)
})

t.test('a store at the current version opens unchanged', async (t) => {
  const dir = t.testdir()
  await writeFixture(dir, SCHEMA_VERSION)
  const store = await openLmdbStore({ path: dir })
  t.same(await store.getUser(fixtureUser.id), fixtureUser)
  await store.close()
  t.equal(await stampedVersion(dir), SCHEMA_VERSION)
})

t.test('a store written by a newer authd is refused with a clear message and left untouched', async (t) => {
  const dir = t.testdir()
  await writeFixture(dir, 99)
  await t.rejects(openLmdbStore({ path: dir }), {
    code: 'SCHEMA_TOO_NEW',
    message: `the store was written by a newer authd (schema 99; this version understands up to ${SCHEMA_VERSION}): upgrade authd or restore a backup`,
  })
  t.equal(await stampedVersion(dir), 99)
})

/** Writes users and their email index as a store at `version` (before ASCII domains, before the tally) had them. */
async function writeUsers(dir: string, version: number, list: UserRecord[]): Promise<void> {
  const root = open({ path: dir, ...LMDB_OPTIONS })
  await root.transaction(() => {
    for (const u of list) {
      root.openDB({ name: 'users' }).put(u.id, u)
      root.openDB({ name: 'emails' }).put(u.email, u.id)
    }
    root.openDB({ name: 'meta' }).put('schema_version', version)
  })
  await root.close()
}

const HASH_T2 = fixtureUser.passwordHash
const HASH_T3 = '$argon2id$v=19$m=19456,t=3,p=1$c2FsdHNhbHRzYWx0c2FsdA$ZmFrZWhhc2hmYWtlaGFzaGZha2VoYXNoZmFrZWg'
const user = (n: number, email: string, passwordHash = HASH_T2): UserRecord => ({ ...fixtureUser, id: `u_fixture${String(n).padStart(16, '0')}`, email, passwordHash, createdAt: 1_700_000_000_000 + n })

t.test('users stored with a U-label domain by an older authd are re-keyed to the ASCII form and still sign in by either form', async (t) => {
  const dir = t.testdir()
  const ann = user(1, 'ann@b\u00fccher.example')
  const bob = user(2, 'bob@example.com')
  const cat = user(3, 'cat@\u4f8b\u3048.jp')
  await writeUsers(dir, 1, [ann, bob, cat])
  const store = await openLmdbStore({ path: dir })
  t.teardown(() => store.close())
  t.same(await store.getUserByEmail('ann@xn--bcher-kva.example'), { ...ann, email: 'ann@xn--bcher-kva.example' }, 'found under the ASCII form, the record says it too')
  t.equal(await store.getUserByEmail('ann@b\u00fccher.example'), undefined, 'the old index entry is gone')
  t.equal((await store.getUserByEmail('cat@xn--r8jz45g.jp'))?.id, cat.id)
  t.same(await store.getUserByEmail('bob@example.com'), bob, 'an ASCII email is untouched')
  t.equal((await store.listUsers()).length, 3)
})

t.test('look-alikes that meet on one ASCII form: the one already under it keeps it, else the older; the other keeps its old email', async (t) => {
  const dir = t.testdir()
  const aLabel = user(5, 'ann@xn--bcher-kva.example') // registered later, but already ASCII
  const uLabel = user(1, 'ann@b\u00fccher.example')
  const plain = user(2, 'zoe@example.com')
  const zeroWidth = user(3, 'zoe@exa\u200bmple.com') // ToASCII drops the zero-width space
  const older = user(4, 'max@m\u00fcnchen.example')
  const newer = user(6, 'max@m\u00fcn\u00adchen.example') // a soft hyphen, dropped too
  await writeUsers(dir, 1, [aLabel, uLabel, plain, zeroWidth, newer, older])
  const store = await openLmdbStore({ path: dir })
  t.teardown(() => store.close())
  t.equal((await store.getUserByEmail('ann@xn--bcher-kva.example'))?.id, aLabel.id)
  t.same(await store.getUser(uLabel.id), uLabel, 'the U-label twin keeps its old email')
  t.equal((await store.getUserByEmail(uLabel.email))?.id, uLabel.id, 'and its index entry')
  t.equal((await store.getUserByEmail('zoe@example.com'))?.id, plain.id)
  t.same(await store.getUser(zeroWidth.id), zeroWidth)
  t.equal((await store.getUserByEmail('max@xn--mnchen-3ya.example'))?.id, older.id, 'the older of two re-keyed look-alikes takes the ASCII form')
  t.same(await store.getUser(newer.id), newer)
  t.equal((await store.listUsers()).length, 6)
})

t.test('the count of password hashes per parameter set is built from the users of an older store, then kept by every write', async (t) => {
  const dir = t.testdir()
  await writeUsers(dir, 1, [user(1, 'a@example.com'), user(2, 'b@example.com', HASH_T3), user(3, 'c@example.com', HASH_T3), user(4, 'd@b\u00fccher.example')])
  const store = await openLmdbStore({ path: dir })
  t.teardown(() => store.close())
  const T2 = '$argon2id$v=19$m=19456,t=2,p=1'
  const T3 = '$argon2id$v=19$m=19456,t=3,p=1'
  t.same(await store.hashTally(), { [T2]: 2, [T3]: 2 })
  await store.createUser(user(7, 'e@example.com', HASH_T3))
  t.same(await store.hashTally(), { [T2]: 2, [T3]: 3 }, 'created')
  await store.updateUser(user(2, '').id, (u) => ({ ...u, passwordHash: HASH_T2 }))
  t.same(await store.hashTally(), { [T2]: 3, [T3]: 2 }, 're-hashed')
  await store.updateUser(user(1, '').id, (u) => ({ ...u, disabled: true }))
  t.same(await store.hashTally(), { [T2]: 3, [T3]: 2 }, 'another change leaves it')
  await store.deleteUser(user(3, '').id)
  await store.deleteUser(user(7, '').id)
  t.same(await store.hashTally(), { [T2]: 3 }, 'deleted: a set with no hash left is gone')
  t.equal(await store.createUser(user(8, 'a@example.com', HASH_T3)), false)
  t.same(await store.hashTally(), { [T2]: 3 }, 'a refused creation counts nothing')
})

/** An in-memory target, to watch the runner's order and its transactions. */
function memoryTarget(initial: number | undefined, opts: { empty?: boolean } = {}) {
  let version = initial
  const log: string[] = []
  let inTx = false
  const target: MigrationTarget = {
    version: () => version ?? 0,
    setVersion: (v) => {
      if (!inTx) throw new Error('setVersion outside a transaction')
      log.push(`set ${v}`)
      version = v
    },
    transaction: async (fn) => {
      inTx = true
      try {
        return fn()
      } finally {
        inTx = false
      }
    },
    isEmpty: () => opts.empty === true,
    users: () => [],
    putUser: () => {},
    emailOwner: () => undefined,
    putEmail: () => {},
    removeEmail: () => {},
    putHashTally: () => {},
  }
  const step =
    (n: number): Migration =>
    (tgt) => {
      if (!inTx) throw new Error('migration outside a transaction')
      log.push(`migrate ${n}→${n + 1} (at ${tgt.version()})`)
    }
  return { target, log, step, current: () => version }
}

t.test('migrations run in order, each in its own transaction with its version stamp', async (t) => {
  const m = memoryTarget(1)
  await migrate(m.target, [m.step(0), m.step(1), m.step(2), m.step(3)])
  t.same(m.log, ['migrate 1→2 (at 1)', 'set 2', 'migrate 2→3 (at 2)', 'set 3', 'migrate 3→4 (at 3)', 'set 4'])
  t.equal(m.current(), 4)
})

t.test('an unversioned store starts at migration 0', async (t) => {
  const m = memoryTarget(undefined)
  await migrate(m.target, [m.step(0), m.step(1)])
  t.same(m.log, ['migrate 0→1 (at 0)', 'set 1', 'migrate 1→2 (at 1)', 'set 2'])
})

t.test('a brand-new store is stamped with the latest version without running migrations', async (t) => {
  const m = memoryTarget(undefined, { empty: true })
  await migrate(m.target, [m.step(0), m.step(1), m.step(2)])
  t.same(m.log, ['set 3'])
})

t.test('a migration that throws leaves the store at the last completed version', async (t) => {
  const m = memoryTarget(0)
  const boom: Migration = () => {
    throw new Error('conversion failed')
  }
  await t.rejects(migrate(m.target, [m.step(0), boom, m.step(2)]), { message: 'conversion failed' })
  t.equal(m.current(), 1)
  t.same(m.log, ['migrate 0→1 (at 0)', 'set 1'])
})

t.test('a step another process already applied is skipped', async (t) => {
  const m = memoryTarget(0)
  // another process migrates 0 → 1 between our read and our transaction
  const racing: MigrationTarget = {
    ...m.target,
    transaction: (fn) => {
      if (m.current() === 0) {
        m.log.push('other process: set 1')
        return m.target.transaction(() => {
          m.target.setVersion(1)
          return fn()
        })
      }
      return m.target.transaction(fn)
    },
  }
  await migrate(racing, [m.step(0), m.step(1)])
  t.same(m.log, ['other process: set 1', 'set 1', 'migrate 1→2 (at 1)', 'set 2'])
})

t.test('the schema this build writes is the number of migrations it knows', async (t) => {
  const m = memoryTarget(0)
  await migrate(m.target)
  t.equal(m.current(), SCHEMA_VERSION)
  t.ok(SCHEMA_VERSION >= 1)
})
