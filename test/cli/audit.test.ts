/**
 * The audit log through the real authctl (README, "Audit log"): every admin.* event recorded by
 * the command that makes the change, with actor authctl:<os user>; `audit list` (filters, both
 * outputs, bad flags) and `audit verify` (intact, and broken by a tampered import) with their exit
 * codes; no event holds a password, a refresh token, a second factor's secret or recovery code,
 * a private key or a store secret (nor a SHA-256 of one).
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { verifyChain } from '../../src/core/audit.js'
import { newRefreshToken, hashToken, familyHashOf, newSessionId } from '../../src/core/sessions.js'
import { openTestStore } from '../helpers/app.js'
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
    ['admin.user.mfa_reset', bob, 'bob@example.com', null, { wasEnabled: false }],
    ['admin.sessions.revoke', bob, 'bob@example.com', bobSession, { scope: 'session' }],
    ['admin.sessions.revoke', bob, 'bob@example.com', null, { scope: 'user' }],
    ['admin.sessions.revoke', null, null, null, { scope: 'all' }],
    ['admin.keys.rotate', null, null, null, { kid, alg: 'ES256' }],
    ['admin.keys.rotate', null, null, null, { kid: events[11]?.detail.kid, alg: 'ES256' }],
    // the active key goes with a new one that signs at once: that rotation is recorded too
    ['admin.keys.rotate', null, null, null, { kid: events[12]?.detail.kid, alg: 'ES256' }],
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
  t.same(await store.auditChain(verifyChain), { ok: true, events: 17 })

  // an operation that changes nothing records nothing: no sessions left to revoke
  t.equal((await ctl(['sessions', 'revoke', '--user', 'ann@example.com'])).code, 0)
  t.equal((await storeEvents(dir)).length, 17)
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
