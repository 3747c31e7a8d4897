/**
 * meRead decodes a session or a user only when its stored bytes changed: these show that a change
 * made through another handle (as authctl does from another process) is read on the next request,
 * that a deleted record reads as gone, and that what callers get cannot change what others read.
 *
 * "The next request": lmdb keeps a handle's read snapshot until a timer renews it, within a
 * millisecond of the last read, so a commit by another handle shows from the next turn of the
 * event loop after that, which is when the daemon's next request runs (README, "Administer with
 * authctl" asks for one second). Reading again at the very same instant as the commit may still
 * see the old snapshot, whatever the cache does: `nextRequest()` stands for the time between two
 * requests.
 */
import { getHeapSnapshot } from 'node:v8'
import t from 'tap'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import type { MeRecord, Store } from '../../src/store/store.js'
import { nextRequest, session, user } from '../helpers/records.js'

// every record read, as /me reads them after any write anywhere
const me = async (store: Store, sid: string): Promise<MeRecord | undefined> => (await store.meRead([sid], NaN, new Set())).records.get(sid)

t.test('reads a change made through another handle on the next request', async (t) => {
  const dir = t.testdir()
  const daemon = await openLmdbStore({ path: dir })
  t.teardown(() => daemon.close())
  const admin = await openLmdbStore({ path: dir })
  t.teardown(() => admin.close())
  t.ok(await admin.createUser(user('u1', 'ann@example.com')))
  await admin.createSession(session('s1', 'u1'))
  await nextRequest()
  for (let i = 0; i < 3; i++) {
    const r = await me(daemon, 's1')
    t.equal(r?.user?.disabled, false)
    t.equal(r?.userId, 'u1')
  }
  await admin.updateUser('u1', (u) => ({ ...u, disabled: true }))
  await nextRequest()
  t.equal((await me(daemon, 's1'))?.user?.disabled, true, 'disabled at once')
  await admin.updateUser('u1', (u) => ({ ...u, disabled: false }))
  await nextRequest()
  t.equal((await me(daemon, 's1'))?.user?.disabled, false, 'enabled again at once')
  await admin.updateUser('u1', (u) => ({ ...u, mfa: { secret: 'S', enabledAt: 1, lastStep: 0, recoveryCodes: [] } }))
  await nextRequest()
  t.equal((await me(daemon, 's1'))?.user?.mfaEnabled, true, 'a second factor turned on')
  await admin.updateSession('s1', (s) => ({ ...s, lastUsedAt: 7 }))
  await nextRequest()
  t.equal((await me(daemon, 's1'))?.lastUsedAt, 7, 'a session used elsewhere')
  t.ok(await admin.revokeSession('s1'))
  await nextRequest()
  t.equal(await me(daemon, 's1'), undefined, 'a revoked session is gone at once')
  await admin.createSession(session('s1', 'u2'))
  await nextRequest()
  t.same(await me(daemon, 's1'), { userId: 'u2', createdAt: 1, expiresAt: 10, lastUsedAt: 1, user: undefined }, 'and a new record under the same key is read as it is')
  await admin.createSession(session('s2', 'u1'))
  t.ok(await admin.deleteUser('u1'))
  await nextRequest()
  t.equal(await me(daemon, 's2'), undefined, 'a deleted user takes its sessions')
})

t.test('what a caller gets cannot change what the next one reads', async (t) => {
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  t.ok(await store.createUser(user('u1', 'ann@example.com')))
  await store.createSession(session('s1', 'u1'))
  const a = (await me(store, 's1'))!
  t.throws(() => {
    ;(a.user as { disabled: boolean }).disabled = true
  }, TypeError)
  a.userId = 'changed'
  const b = (await me(store, 's1'))!
  t.not(a, b)
  t.same(b, { userId: 'u1', createdAt: 1, expiresAt: 10, lastUsedAt: 1, user: { id: 'u1', email: 'ann@example.com', disabled: false, mfaEnabled: false } }, 'what is stored')
  const u = (await store.getUser('u1'))!
  u.disabled = true
  t.equal((await store.getUser('u1'))?.disabled, false, 'getUser gives a record of its own')
})

/**
 * The text of every string a heap snapshot holds as the parent of a sliced string (V8 keeps a
 * substring of 13 characters or more as a slice that holds its whole parent alive).
 */
async function slicedParents(): Promise<string[]> {
  let json = ''
  for await (const chunk of getHeapSnapshot()) json += String(chunk)
  const snap = JSON.parse(json) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } }
    nodes: number[]
    edges: number[]
    strings: string[]
  }
  const { meta } = snap.snapshot
  const nf = meta.node_fields.length
  const ef = meta.edge_fields.length
  const [iType, iName, iEdges] = ['type', 'name', 'edge_count'].map((f) => meta.node_fields.indexOf(f)) as [number, number, number]
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f)) as [number, number, number]
  const out: string[] = []
  let e = 0
  for (let n = 0; n < snap.nodes.length; n += nf) {
    const sliced = meta.node_types[0][snap.nodes[n + iType]!] === 'sliced string'
    for (let k = 0; k < snap.nodes[n + iEdges]!; k++, e += ef) {
      if (!sliced || snap.strings[snap.edges[e + eName]!] !== 'parent' || meta.edge_types[0][snap.edges[e + eType]!] !== 'internal') continue
      out.push(snap.strings[snap.nodes[snap.edges[e + eTo]! + iName]!]!)
    }
  }
  return out
}

t.test('what is kept of a record holds none of the text it was decoded from', async (t) => {
  // msgpack's decoder cuts a record's short strings out of one string of the record's bytes: a
  // kept userId or email would keep the whole record's text alive (about 330 bytes a session)
  const store = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => store.close())
  // ids of the length authd makes (22 characters: long enough to be kept as slices)
  const uid = 'uUuUuUuUuUuUuUuUuUuUu1'
  const sids = Array.from({ length: 20 }, (_, i) => `sSsSsSsSsSsSsSsSsSsS${String(i).padStart(2, '0')}`)
  t.ok(await store.createUser(user(uid, 'a-rather-long-address@example.com')))
  for (const sid of sids) await store.createSession(session(sid, uid))
  await nextRequest()
  const read = await store.meRead(sids, NaN, new Set())
  t.equal(read.records.size, sids.length)
  for (const sid of sids) t.equal(read.records.get(sid)?.user?.email, 'a-rather-long-address@example.com')
  const parents = await slicedParents()
  t.same(parents.filter((p) => p.includes('refreshHash')), [], 'no kept session holds its record text')
  t.same(parents.filter((p) => p.includes('passwordHash')), [], 'no kept user holds its record text')
  // the records are still kept (a second read decodes nothing), and hold what was read
  t.equal((await store.meRead(sids, NaN, new Set())).records.get(sids[0]!)?.userId, uid)
})
