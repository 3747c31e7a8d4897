/**
 * Rate-limit refusals are logged without flooding the log (core/refusal-log.ts): the first of a
 * client address under a limit at once, the rest of the period as one `repeated` line.
 */
import t from 'tap'
import { createRefusalLog } from '../../src/core/refusal-log.js'

type Line = { fields: Record<string, unknown>; msg: string }

function recorder(): { lines: Line[]; write: (fields: object, msg: string) => void } {
  const lines: Line[] = []
  return { lines, write: (fields, msg) => lines.push({ fields: fields as Record<string, unknown>, msg }) }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

t.test('the first refusal of an address is written at once, the rest counted into one line', async (t) => {
  const rec = recorder()
  const log = createRefusalLog({ write: rec.write, periodMs: 60_000 })
  t.teardown(() => log.close())
  for (let i = 0; i < 500; i++) log.refused({ event: 'login', limit: 'login.per_ip', ip: '10.0.0.1' }, 'login refused by rate limit')
  log.refused({ event: 'login', limit: 'login.per_ip', ip: '10.0.0.2' }, 'login refused by rate limit')
  log.refused({ event: 'login', limit: 'login.per_email', ip: '10.0.0.1' }, 'login refused by rate limit')
  // the first address and limit again, after others: counted with its first, no new line
  log.refused({ event: 'login', limit: 'login.per_ip', ip: '10.0.0.1' }, 'login refused by rate limit')
  t.same(
    rec.lines.map((l) => [l.fields.ip, l.fields.limit, l.msg]),
    [
      ['10.0.0.1', 'login.per_ip', 'login refused by rate limit'],
      ['10.0.0.2', 'login.per_ip', 'login refused by rate limit'],
      ['10.0.0.1', 'login.per_email', 'login refused by rate limit'],
    ],
    'one line per address and limit so far',
  )
  t.same(rec.lines[0]!.fields, { event: 'login', outcome: 'rate_limited', limit: 'login.per_ip', ip: '10.0.0.1' })
  log.close()
  t.equal(rec.lines.length, 4, 'closing writes the one address that repeated')
  t.same(rec.lines[3], {
    fields: { event: 'login', limit: 'login.per_ip', ip: '10.0.0.1', outcome: 'rate_limited', repeated: 500 },
    msg: 'login refused by rate limit (repeated)',
  })
})

t.test('at the end of each period the counts are written, and a quiet address starts afresh', async (t) => {
  const rec = recorder()
  const log = createRefusalLog({ write: rec.write, periodMs: 50 })
  t.teardown(() => log.close())
  const refuse = (): void => log.refused({ event: 'register', limit: 'register.per_ip', ip: '10.0.0.9' }, 'registration refused by rate limit')
  refuse()
  refuse()
  refuse()
  await sleep(120)
  t.same(
    rec.lines.map((l) => l.fields.repeated),
    [undefined, 2],
    'the period ended: 2 more refusals written as one line',
  )
  await sleep(120)
  refuse()
  t.equal(rec.lines.length, 3, 'after a quiet period the next refusal is written at once')
  t.equal(rec.lines[2]!.fields.repeated, undefined)
})

t.test('beyond maxKeys addresses, refusals are written as they come: none is dropped silently', async (t) => {
  const rec = recorder()
  const log = createRefusalLog({ write: rec.write, periodMs: 60_000, maxKeys: 3 })
  t.teardown(() => log.close())
  for (let i = 0; i < 6; i++) log.refused({ event: 'login', limit: 'login.per_ip', ip: `10.0.1.${i}` }, 'login refused by rate limit')
  for (let i = 0; i < 6; i++) log.refused({ event: 'login', limit: 'login.per_ip', ip: `10.0.1.${i}` }, 'login refused by rate limit')
  // 3 remembered: their second refusal is counted; the other 3 are written both times
  t.equal(rec.lines.length, 6 + 3)
  log.close()
  t.same(
    rec.lines.slice(9).map((l) => [l.fields.ip, l.fields.repeated]),
    [
      ['10.0.1.0', 1],
      ['10.0.1.1', 1],
      ['10.0.1.2', 1],
    ],
  )
})

t.test('refusals of two events under one limit from one address are two lines, each counting its own repeats', async (t) => {
  const rec = recorder()
  const log = createRefusalLog({ write: rec.write, periodMs: 60_000 })
  t.teardown(() => log.close())
  const limited = { limit: 'login.per_ip_email', ip: '10.0.0.7' }
  log.refused({ event: 'password_change', ...limited }, 'password change refused by rate limit')
  for (let i = 0; i < 5; i++) log.refused({ event: 'login', ...limited }, 'login refused by rate limit')
  log.refused({ event: 'password_change', ...limited }, 'password change refused by rate limit')
  t.same(
    rec.lines.map((l) => [l.fields.event, l.msg]),
    [
      ['password_change', 'password change refused by rate limit'],
      ['login', 'login refused by rate limit'],
    ],
    'a login flood after a refused password change has its own line',
  )
  log.close()
  t.same(
    rec.lines.slice(2).map((l) => [l.fields.event, l.fields.repeated]),
    [
      ['password_change', 1],
      ['login', 4],
    ],
  )
})
