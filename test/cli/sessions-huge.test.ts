/**
 * `authctl sessions list` on a store of 20 000 sessions: the whole list comes out, in order, in
 * both forms, printed while it is read. The old command built every record, every row and the
 * whole document in memory before printing (100 000 sessions: 7 s and 520 MB); here it must run
 * in a heap of 20 MB, which the old one could not (it needed over 24 MB for these 20 000).
 */
import t from 'tap'
import { ON_PG, openTestStore } from '../helpers/app.js'
import type { SessionRecord } from '../../src/store/store.js'
import { ctlFor } from './run.js'

const N = 20_000
const USERS = 40
const NOW = Date.now()

t.test('sessions list streams a huge store: all of it, newest first, in bounded memory', async (t) => {
  const dir = t.testdir()
  const store = await openTestStore(t, dir)
  for (let u = 0; u < USERS; u++) {
    await store.createUser({ id: `user${u}`, email: `u${u}@example.com`, passwordHash: 'x', createdAt: NOW, updatedAt: NOW, disabled: false })
  }
  const session = (i: number): SessionRecord => ({
    id: `s${String(i).padStart(6, '0')}`,
    userId: `user${i % USERS}`,
    createdAt: NOW - i * 1000,
    lastUsedAt: NOW - i,
    expiresAt: NOW + 86_400_000,
    ip: '203.0.113.7',
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
    refreshHash: `hash${i}`,
    previousHash: null,
    rotatedAt: null,
    generation: 0,
    familyHash: `family${i}`,
    rotations: [],
    amr: ['pwd'],
  })
  // LMDB commits many writes at once; PostgreSQL's pool holds a few connections, and a write
  // waiting longer than its deadline for one is refused (the database does not answer in time)
  const batch = ON_PG ? 50 : 2000
  for (let i = 0; i < N; i += batch) await Promise.all(Array.from({ length: batch }, (_, k) => store.createSession(session(i + k))))
  // and one long expired: never listed
  await store.createSession({ ...session(N), createdAt: NOW - 90 * 86_400_000, lastUsedAt: NOW - 90 * 86_400_000, expiresAt: NOW - 60 * 86_400_000 })
  await store.close()

  const ctl = ctlFor(dir, { nodeArgs: ['--max-old-space-size=20'], timeoutMs: 120_000 })
  const json = await ctl(['sessions', 'list', '--json'])
  t.equal(json.code, 0, json.stderr)
  const sessions = json.json().sessions as Array<{ id: string; email: string; createdAt: string }>
  t.equal(sessions.length, N, 'every live session, and only those')
  t.equal(new Set(sessions.map((s) => s.id)).size, N, 'each once')
  t.ok(sessions.every((s, i) => s.id === `s${String(i).padStart(6, '0')}`), 'newest first')
  t.same(sessions[1], {
    id: 's000001',
    userId: 'user1',
    email: 'u1@example.com',
    createdAt: new Date(NOW - 1000).toISOString(),
    lastUsedAt: new Date(NOW - 1).toISOString(),
    expiresAt: new Date(NOW + 86_400_000).toISOString(),
    absoluteExpiresAt: new Date(NOW + 86_400_000).toISOString(),
    ip: '203.0.113.7',
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
  })

  const table = await ctl(['sessions', 'list'])
  t.equal(table.code, 0, table.stderr)
  const lines = table.stdout.trimEnd().split('\n')
  t.equal(lines.length, N + 1, 'a header and a row per session')
  t.match(lines[0], /^SESSION +USER +CREATED +LAST USED +EXPIRES +IP +USER AGENT$/)
  t.match(lines[N], /^s019999 +u39@example\.com +\S+Z +\S+Z +\S+Z +203\.0\.113\.7 +Mozilla/)

  const one = await ctl(['sessions', 'list', '--user', 'u7@example.com', '--json'])
  t.equal(one.code, 0, one.stderr)
  const own = one.json().sessions as Array<{ userId: string }>
  t.equal(own.length, N / USERS)
  t.ok(own.every((s) => s.userId === 'user7'))
})
