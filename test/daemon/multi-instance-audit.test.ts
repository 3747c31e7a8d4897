/**
 * The audit log with several authd processes on one PostgreSQL database (README, "Audit log"):
 * three real daemons (built dist/) write events at once, and the log stays one chain, its seq
 * counting 1, 2, 3… without a gap or a duplicate across the instances; `authctl audit verify`
 * finds it intact.
 */
import t, { type Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { call } from '../helpers/app.js'
import { spawnDaemon, type Daemon } from '../helpers/daemon.js'
import { pgDatabase } from '../helpers/pg.js'
import { runCtl, PASSWORD } from '../cli/run.js'

function pgEnv(url: string): Record<string, string> {
  return { AUTHD_STORE_BACKEND: 'postgres', AUTHD_STORE_URL: url }
}

/** every request comes from 127.0.0.1 and some emails get several wrong passwords: no limit turns one away */
const OPEN = '1000000/1m'
const ROOMY = {
  AUTHD_RATE_LIMIT_LOGIN_PER_IP: OPEN,
  AUTHD_RATE_LIMIT_LOGIN_PER_EMAIL: OPEN,
  AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: OPEN,
  AUTHD_RATE_LIMIT_REGISTER_PER_IP: OPEN,
}

async function three(t: Test, url: string): Promise<Daemon[]> {
  const dirs = [0, 1, 2].map(() => mkdtempSync(join(tmpdir(), 'authd-multi-audit-')))
  t.teardown(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))
  return Promise.all(dirs.map((d) => spawnDaemon(t, d, { env: { ...pgEnv(url), ...ROOMY } })))
}

const USERS = 24
const MIXED = 72

t.test('three instances writing events at once: one chain, seq 1..N without gaps or duplicates', async (t) => {
  const db = await pgDatabase(t)
  if (db === null) return
  const daemons = await three(t, db.url)
  const on = (i: number): string => daemons[i % 3]!.url
  const ctl = (args: string[]) => runCtl(args, { env: pgEnv(db.url) })
  const statuses = { register: new Map<number, number>(), login: new Map<number, number>(), wrong: new Map<number, number>(), unknown: new Map<number, number>() }
  const count = (m: Map<number, number>, s: number): void => void m.set(s, (m.get(s) ?? 0) + 1)

  // registers, all at once, spread over the three
  const emails = Array.from({ length: USERS }, (_, i) => `audit-multi-${i}@example.com`)
  await Promise.all(
    emails.map(async (email, i) => count(statuses.register, (await call(on(i), 'POST', '/api/auth/register', { json: { email, password: PASSWORD } })).status)),
  )
  // then logins, wrong passwords and unknown emails, all at once: each user's three on the three instances
  await Promise.all(
    Array.from({ length: MIXED }, async (_, i) => {
      const email = emails[i % USERS]!
      const kind = i % 3 === 0 ? 'login' : i % 3 === 1 ? 'wrong' : 'unknown'
      const body =
        kind === 'login' ? { email, password: PASSWORD } : kind === 'wrong' ? { email, password: `wrong-${i}` } : { email: `nobody-${i}@example.com`, password: PASSWORD }
      count(statuses[kind], (await call(on(i + Math.floor(i / USERS)), 'POST', '/api/auth/login', { json: body })).status)
    }),
  )
  t.same([...statuses.register.keys()], [201], `every register answered 201 (${USERS})`)
  t.same([...statuses.login.keys()], [200], 'every login answered 200')
  t.same([...statuses.wrong.keys()], [401], 'every wrong password answered 401')
  t.same([...statuses.unknown.keys()], [401], 'every unknown email answered 401')

  // one event per acknowledged change or refusal, nothing else
  const expected = USERS + MIXED
  const list = await ctl(['audit', 'list', '--json', '--limit', String(expected + 10)])
  t.equal(list.code, 0, list.stderr)
  const events = list.json().events as Array<{ seq: number; event: string; email: string | null; detail: { reason?: string } }>
  t.equal(events.length, expected, `${expected} events`)
  const seqs = events.map((e) => e.seq)
  t.equal(new Set(seqs).size, seqs.length, 'no seq twice')
  t.same(
    seqs,
    Array.from({ length: expected }, (_, i) => expected - i),
    `seq ${expected}..1, newest first, without a gap`,
  )
  const named = (name: string): number => events.filter((e) => e.event === name).length
  t.equal(named('register'), USERS, 'a register event per 201')
  t.equal(named('login.success'), MIXED / 3, 'a login.success event per 200')
  t.equal(events.filter((e) => e.event === 'login.failure' && e.detail.reason === 'bad_password').length, MIXED / 3, 'a bad_password failure per wrong password')
  t.equal(events.filter((e) => e.event === 'login.failure' && e.detail.reason === 'unknown_user').length, MIXED / 3, 'an unknown_user failure per unknown email')

  const verify = await ctl(['audit', 'verify'])
  t.equal(verify.code, 0, verify.stderr)
  t.equal(verify.stdout.trim(), `Audit log intact: ${expected} events.`)
  const json = await ctl(['audit', 'verify', '--json'])
  t.same(json.json(), { ok: true, events: expected })
})
