/**
 * The audit log through the real authctl (README, "Audit log"): every admin.* event recorded by
 * the command that makes the change, with actor authctl:<os user>; `audit list` (filters, both
 * outputs, bad flags) and `audit verify` (intact, and broken by a tampered import) with their exit
 * codes; no event holds a password, a refresh token, a second factor's secret or recovery code,
 * a private key or a store secret (nor a SHA-256 of one).
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t, { type Test } from 'tap'
import { adminDraft } from '../../src/core/audit.js'
import { verifyChain } from '../../src/core/audit.js'
import { newRefreshToken, hashToken, familyHashOf, newSessionId } from '../../src/core/sessions.js'
import { ON_PG, openTestStore, storeEnv } from '../helpers/app.js'
import type { AuditEvent, ExportRecord } from '../../src/store/store.js'
import { secretsIn } from '../helpers/audit.js'
import { ctlFor, PASSWORD } from './run.js'

const OTHER_PASSWORD = 'another long passphrase 7'
const ACTOR = `authctl:${os.userInfo().username}`

/** every refresh token addSessions made: no event may hold one */
const tokensMade: string[] = []

/** a live session of `userId` put straight into the store (as a login would) */
async function addSessions(dir: string, userId: string, n: number): Promise<string[]> {
  const store = await openTestStore(null, dir)
  const ids: string[] = []
  try {
    for (let i = 0; i < n; i++) {
      const now = Date.now()
      const token = newRefreshToken()
      tokensMade.push(token)
      const id = newSessionId()
      ids.push(id)
      await store.createSession({
        id,
        userId,
        createdAt: now,
        lastUsedAt: now,
        expiresAt: now + 86_400_000,
        ip: '203.0.113.7',
        userAgent: 'curl/8.5.0',
        refreshHash: hashToken(token),
        previousHash: null,
        rotatedAt: null,
        generation: 0,
        familyHash: familyHashOf(token),
        rotations: [],
        amr: ['pwd'],
      })
    }
  } finally {
    await store.close()
  }
  return ids
}

async function storeEvents(dir: string): Promise<AuditEvent[]> {
  const store = await openTestStore(null, dir)
  try {
    return (await store.auditEvents({ limit: 1000 })).reverse()
  } finally {
    await store.close()
  }
}

async function usersAndKeys(t: Test) {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  const add = async (email: string) => {
    const r = await ctl(['user', 'add', email, '--password-stdin', '--json'], { input: `${PASSWORD}\n` })
    if (r.code !== 0) throw new Error(r.stderr)
    return r.json().user.id as string
  }
  return { dir, ctl, add }
}

t.test('every authctl change records its admin.* event, with the OS user as actor, in the write that makes it', async (t) => {
  const { dir, ctl, add } = await usersAndKeys(t)
  const ann = await add('ann@example.com')
  const bob = await add('bob@example.com')
  await addSessions(dir, ann, 2)
  const [bobSession] = await addSessions(dir, bob, 2)
  // ann's second factor is on (a reset records wasEnabled: true), bob's is not; the store has
  // the secrets a daemon's first start makes
  const TOTP_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP'
  const SETUP_SECRET = 'KRSXG5CTMVRXEZLUKRSXG5CTMVRXEZLU'
  const RECOVERY = ['k3xq7-m2pd4', 'p9wz2-h4tn8'].map((c) => hashToken(c))
  {
    const store = await openTestStore(null, dir)
    await store.updateUser(ann, (u) => ({ ...u, mfa: { secret: TOTP_SECRET, enabledAt: Date.now(), lastStep: 1, recoveryCodes: RECOVERY }, mfaSetup: { secret: SETUP_SECRET, createdAt: Date.now() } }))
    await store.ensureDeviceKey(() => randomBytes(32).toString('base64url'))
    await store.ensureMfaKey(() => randomBytes(32).toString('base64url'))
    await store.close()
  }

  const run = async (args: string[], input?: string) => {
    const r = await ctl(args, input === undefined ? {} : { input })
    t.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
  }
  await run(['user', 'disable', 'ann@example.com'])
  await run(['user', 'enable', 'ann@example.com'])
  await run(['user', 'passwd', 'ann@example.com', '--password-stdin'], `${OTHER_PASSWORD}\n`)
  await run(['user', 'mfa', 'reset', 'ann@example.com', '--yes'])
  await run(['user', 'mfa', 'reset', 'bob@example.com', '--yes'])
  await run(['sessions', 'revoke', bobSession!])
  await run(['sessions', 'revoke', '--user', 'bob@example.com'])
  await addSessions(dir, ann, 1)
  await run(['sessions', 'revoke', '--all', '--yes'])
  await run(['keys', 'rotate', '--now'])
  const kid = (await ctl(['keys', 'list', '--json'])).json().keys[0].kid as string
  await run(['keys', 'rotate'])
  await run(['keys', 'revoke', kid, '--yes'])
  await run(['limits', 'clear', 'Ann@Example.com'])
  await run(['limits', 'clear', '2001:db8::1'])
  await run(['user', 'rm', 'bob@example.com', '--yes'])

  const events = await storeEvents(dir)
  const rows = events.map((e) => [e.event, e.userId, e.email, e.sessionId, e.detail])
  t.same(rows, [
    ['admin.user.add', ann, 'ann@example.com', null, {}],
    ['admin.user.add', bob, 'bob@example.com', null, {}],
    ['admin.user.disable', ann, 'ann@example.com', null, {}],
    ['admin.user.enable', ann, 'ann@example.com', null, {}],
    ['admin.user.passwd', ann, 'ann@example.com', null, {}],
    ['admin.user.mfa_reset', ann, 'ann@example.com', null, { wasEnabled: true }],
    // bob had no factor and no set-up: his reset changed nothing, and records nothing
    ['admin.sessions.revoke', bob, 'bob@example.com', bobSession, { scope: 'session' }],
    ['admin.sessions.revoke', bob, 'bob@example.com', null, { scope: 'user' }],
    ['admin.sessions.revoke', null, null, null, { scope: 'all' }],
    ['admin.keys.rotate', null, null, null, { kid, alg: 'ES256' }],
    ['admin.keys.rotate', null, null, null, { kid: events[10]?.detail.kid, alg: 'ES256' }],
    // the active key goes with a new one that signs at once: that rotation is recorded too
    ['admin.keys.rotate', null, null, null, { kid: events[11]?.detail.kid, alg: 'ES256' }],
    ['admin.keys.revoke', null, null, null, { kid, alg: 'ES256' }],
    ['admin.limits.clear', null, 'ann@example.com', null, {}],
    ['admin.limits.clear', null, null, null, { ip: '2001:db8::/64' }],
    ['admin.user.rm', bob, 'bob@example.com', null, {}],
  ])
  t.ok(events.every((e) => e.actor === ACTOR && e.ip === null && e.userAgent === null), `actor ${ACTOR}, no address`)
  const store = await openTestStore(null, dir)
  t.teardown(() => store.close())
  // every secret the store holds or held: the passwords, the refresh tokens (and their family
  // parts), the second factor's secrets and recovery codes, the keys' private halves, the
  // device-cookie and mfaToken keys; each also as its SHA-256
  const exported: ExportRecord[] = []
  for await (const rec of store.exportRecords()) exported.push(rec)
  const secrets = [
    PASSWORD,
    OTHER_PASSWORD,
    ...tokensMade,
    ...tokensMade.map((tok) => tok.split('.')[0]!),
    TOTP_SECRET,
    SETUP_SECRET,
    'k3xq7-m2pd4',
    ...RECOVERY,
    ...exported.flatMap((rec) => (rec.type === 'key' ? [rec.key.privateKeyPem] : rec.type === 'secret' ? [rec.value] : [])),
  ]
  t.ok(exported.some((rec) => rec.type === 'secret') && exported.some((rec) => rec.type === 'key'), 'the keys and secrets are among them')
  t.same(secretsIn(events, secrets), [], `none of ${secrets.length} secrets in any event`)
  // disable and passwd ended the sessions in their own write: nothing else was recorded between
  t.equal(await store.countSessions(ann), 0)
  t.same(await store.auditChain(verifyChain), { ok: true, events: 16 })

  // an operation that changes nothing records nothing: no sessions left to revoke
  t.equal((await ctl(['sessions', 'revoke', '--user', 'ann@example.com'])).code, 0)
  t.equal((await storeEvents(dir)).length, 16)
})

t.test('audit list: newest first, two lines per event in 80 columns; --json; the filters', async (t) => {
  const { dir, ctl, add } = await usersAndKeys(t)
  const ann = await add('ann@example.com')
  await add('bob@example.com')
  await ctl(['user', 'disable', 'bob@example.com'])
  await ctl(['user', 'rm', 'bob@example.com', '--yes'])

  const text = await ctl(['audit', 'list'])
  t.equal(text.code, 0, text.stderr)
  const lines = text.stdout.trimEnd().split('\n')
  t.ok(lines.every((l) => [...l].length <= 80), 'fits 80 columns')
  t.match(lines[0], /^ +SEQ {2}TIME \(UTC\) {11}EVENT {18}USER$/)
  t.match(lines[1], /^ +4 {2}\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}admin\.user\.rm {10}bob@example\.com$/)
  t.equal(lines[2], `         ${ACTOR}`)
  t.equal(lines.length, 1 + 4 * 2)

  const json = await ctl(['audit', 'list', '--json'])
  const doc = json.json() as { events: AuditEvent[] }
  t.same(Object.keys(doc), ['events'])
  t.same(doc.events.map((e) => e.seq), [4, 3, 2, 1])
  t.same(Object.keys(doc.events[0]!), ['seq', 'time', 'event', 'actor', 'userId', 'email', 'sessionId', 'ip', 'userAgent', 'detail', 'hash'])
  t.match(doc.events[0]!.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

  const seqs = async (...args: string[]): Promise<number[]> => {
    const r = await ctl(['audit', 'list', '--json', ...args])
    t.equal(r.code, 0, r.stderr)
    return (r.json() as { events: AuditEvent[] }).events.map((e) => e.seq)
  }
  t.same(await seqs('--user', 'ANN@example.com'), [1], 'a user by email')
  t.same(await seqs('--user', ann), [1], 'a user by id')
  t.same(await seqs('--user', 'bob@example.com'), [4, 3, 2], 'a deleted user by the email its events carry')
  t.same(await seqs('--event', 'admin.user.add'), [2, 1])
  t.same(await seqs('--limit', '2'), [4, 3])
  t.same(await seqs('--since', '1h'), [4, 3, 2, 1])
  t.same(await seqs('--since', '2999-01-01T00:00:00Z'), [])
  t.equal((await ctl(['audit', 'list', '--since', '2999-01-01'])).stdout, 'No audit events match.\n')

  for (const [args, sentence] of [
    [['--since', 'yesterday'], /--since takes a duration/],
    [['--limit', '0'], /--limit takes a whole number from 1 to 10000/],
    [['--event', 'login'], /"login" is not an audit event name/],
  ] as const) {
    const r = await ctl(['audit', 'list', ...args])
    t.equal(r.code, 2, args.join(' '))
    t.equal(r.stdout, '')
    t.match(r.stderr, new RegExp(`^authctl: ${sentence.source}.*\\.\\n$`))
  }
  const help = await ctl(['audit', 'list', '--help'])
  t.match(help.stdout, /Event names \(--event\):\n {2}login\.success, login\.failure/)
})

t.test('audit verify: exit 0 and the count when intact; exit 1 and the event when an imported log was tampered with', async (t) => {
  const { dir, ctl, add } = await usersAndKeys(t)
  for (const email of ['a@example.com', 'b@example.com', 'c@example.com', 'd@example.com']) await add(email)
  let r = await ctl(['audit', 'verify'])
  t.same([r.code, r.stdout, r.stderr], [0, 'Audit log intact: 4 events.\n', ''])
  r = await ctl(['audit', 'verify', '--json'])
  t.same([r.code, r.json()], [0, { ok: true, events: 4 }])

  // the store's export with event 3 changed, loaded into a new store as it is
  const store = await openTestStore(null, dir)
  const records: ExportRecord[] = []
  for await (const rec of store.exportRecords()) records.push(rec)
  await store.close()
  const tampered = records.map((rec) => (rec.type === 'audit' && rec.event.seq === 3 ? { ...rec, event: { ...rec.event, email: 'x@example.com' } } : rec))
  const copy = join(t.testdir(), 'copy')
  // authctl runs in it (on PostgreSQL nothing else creates it)
  mkdirSync(copy, { recursive: true, mode: 0o700 })
  const into = await openTestStore(null, copy)
  await into.importRecords((async function* () {
    yield* tampered
  })())
  await into.close()

  const other = ctlFor(copy)
  r = await other(['audit', 'verify'])
  t.equal(r.code, 1)
  t.equal(r.stdout, 'Audit log broken at event 3.\n')
  t.equal(r.stderr, 'authctl: Event 3 of the audit log was changed, removed or moved after it was written.\n')
  r = await other(['audit', 'verify', '--json'])
  t.same([r.code, r.json()], [1, { ok: false, brokenAt: 3 }])
})

/**
 * The audit log's events as the store keeps them, reached past authd: LMDB's `audit` database
 * opened with the lmdb package, or PostgreSQL's authd_audit table. What an intruder with the
 * store's files or the database's credentials could change.
 */
interface RawAudit {
  get(seq: number): Promise<AuditEvent>
  /** `event` stored under `seq` (its own seq field as given) */
  put(seq: number, event: AuditEvent): Promise<void>
  remove(seq: number): Promise<void>
  close(): Promise<void>
}

async function rawAudit(dir: string): Promise<RawAudit> {
  if (!ON_PG) {
    const { open } = await import('lmdb')
    const env = open({ path: dir, noSubdir: false, maxDbs: 16, compression: false })
    const db = env.openDB<AuditEvent, number>({ name: 'audit' })
    return {
      get: async (seq) => db.get(seq)!,
      put: async (seq, event) => void (await db.put(seq, event)),
      remove: async (seq) => void (await db.remove(seq)),
      close: () => env.close(),
    }
  }
  const client = new pg.Client({ connectionString: (await storeEnv(dir)).AUTHD_STORE_URL })
  await client.connect()
  return {
    get: async (seq) => (await client.query(`SELECT body FROM authd_audit WHERE seq = $1`, [seq])).rows[0].body as AuditEvent,
    put: async (seq, event) =>
      void (await client.query(
        `INSERT INTO authd_audit (seq, at, event, user_id, body) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (seq) DO UPDATE SET at = EXCLUDED.at, event = EXCLUDED.event, user_id = EXCLUDED.user_id, body = EXCLUDED.body`,
        [seq, Date.parse(event.time), event.event, event.userId, JSON.stringify(event)],
      )),
    remove: async (seq) => void (await client.query(`DELETE FROM authd_audit WHERE seq = $1`, [seq])),
    close: () => client.end(),
  }
}

/** six events of authctl, put in the store as a command would */
async function sixEvents(dir: string): Promise<void> {
  const store = await openTestStore(null, dir)
  try {
    for (let i = 1; i <= 6; i++) await store.appendAudit([adminDraft('admin.user.add', { at: Date.now(), userId: `user-${i}`, email: `user${i}@example.com` })])
  } finally {
    await store.close()
  }
}

t.test('audit verify on a log tampered with in the store itself: the event changed, removed or swapped; intact once put back', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  await sixEvents(dir)
  const verify = async (): Promise<[number | null, string, string]> => {
    const r = await ctl(['audit', 'verify'])
    return [r.code, r.stdout, r.stderr]
  }
  t.same(await verify(), [0, 'Audit log intact: 6 events.\n', ''], 'untouched')
  const broken = (seq: number): [number, string, string] => [1, `Audit log broken at event ${seq}.\n`, `authctl: Event ${seq} of the audit log was changed, removed or moved after it was written.\n`]

  const raw = await rawAudit(dir)
  t.teardown(() => raw.close())
  const kept = new Map<number, AuditEvent>()
  for (let seq = 1; seq <= 6; seq++) kept.set(seq, await raw.get(seq))
  const restore = async (): Promise<void> => {
    for (const [seq, e] of kept) await raw.put(seq, e)
  }

  await raw.put(3, { ...kept.get(3)!, email: 'someone.else@example.com' })
  t.same(await verify(), broken(3), 'one field of event 3 changed')
  await restore()
  await raw.put(5, { ...kept.get(5)!, detail: { note: 'added' } })
  t.same(await verify(), broken(5), 'a detail added to event 5')
  await restore()
  t.same(await verify(), [0, 'Audit log intact: 6 events.\n', ''], 'put back: intact')

  await raw.remove(4)
  t.same(await verify(), broken(4), 'event 4 removed')
  await restore()
  await raw.remove(1)
  t.same(await verify(), broken(1), 'the first event removed')
  await restore()

  await raw.put(2, kept.get(5)!)
  await raw.put(5, kept.get(2)!)
  t.same(await verify(), broken(2), 'events 2 and 5 swapped')
  await restore()
  await raw.put(3, { ...kept.get(4)!, seq: 3 })
  await raw.put(4, { ...kept.get(3)!, seq: 4 })
  t.same(await verify(), broken(3), 'the contents of 3 and 4 swapped, their seqs kept')
  await restore()
  t.same(await verify(), [0, 'Audit log intact: 6 events.\n', ''], 'put back: intact')
  const json = await ctl(['audit', 'verify', '--json'])
  t.same([json.code, json.json()], [0, { ok: true, events: 6 }])
})

t.test('audit verify after an export edited and imported: the events load as they are, and the break is named', async (t) => {
  const base = t.testdir()
  const src = join(base, 'src')
  mkdirSync(src, { mode: 0o700 })
  await sixEvents(src)
  const file = join(base, 'authd.export')
  t.equal((await ctlFor(src)(['export', file])).code, 0)
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n')
  const eventAt = (seq: number): number => lines.findIndex((l) => l.startsWith('{"type":"audit",') && (JSON.parse(l) as { event: AuditEvent }).event.seq === seq)
  const event = (seq: number): AuditEvent => (JSON.parse(lines[eventAt(seq)]!) as { event: AuditEvent }).event

  /** the export with `edit` applied to its lines (the end line counts them again), imported into a new store, verified there */
  const importEdited = async (name: string, edit: (lines: string[]) => string[]): Promise<[number | null, string]> => {
    const body = edit(lines.slice(0, -1))
    const edited = join(base, `${name}.export`)
    writeFileSync(edited, [...body, JSON.stringify({ type: 'end', records: body.length })].join('\n') + '\n', { mode: 0o600 })
    const dst = join(base, name)
    mkdirSync(dst, { mode: 0o700 })
    const ctl = ctlFor(dst)
    const imported = await ctl(['import', edited, '--json'])
    t.equal(imported.code, 0, `${name}: imported (${imported.stderr.trim()})`)
    const r = await ctl(['audit', 'verify'])
    return [r.code, r.stdout]
  }
  const line = (e: AuditEvent): string => JSON.stringify({ type: 'audit', event: e })
  const replace = (at: Record<number, AuditEvent | null>) => (ls: string[]) =>
    ls.flatMap((l, i) => {
      const seq = Object.keys(at).map(Number).find((s) => eventAt(s) === i)
      if (seq === undefined) return [l]
      const e = at[seq]
      return e === null ? [] : [line(e)]
    })

  // the import's own admin.import is event 7 (the seqs go on after the highest), chained on
  t.same(await importEdited('untouched', (ls) => ls), [0, 'Audit log intact: 7 events.\n'])
  t.same(await importEdited('changed', replace({ 3: { ...event(3), actor: 'authctl:someone-else' } })), [1, 'Audit log broken at event 3.\n'], 'one field of event 3 changed')
  t.same(await importEdited('removed', replace({ 4: null })), [1, 'Audit log broken at event 4.\n'], 'the line of event 4 removed: a gap at 4')
  t.same(await importEdited('swapped-contents', replace({ 2: { ...event(5), seq: 2 }, 5: { ...event(2), seq: 5 } })), [1, 'Audit log broken at event 2.\n'], 'the contents of events 2 and 5 swapped, their seqs kept')
  t.same(await importEdited('swapped-lines', replace({ 2: event(5), 5: event(2) })), [0, 'Audit log intact: 7 events.\n'], 'the lines of events 2 and 5 swapped whole: each event goes under its own seq')
  t.same(await importEdited('last-removed', replace({ 6: null })), [0, 'Audit log intact: 6 events.\n'], 'the newest event removed: no chain can tell (README: keep the count and the newest event elsewhere)')
})
