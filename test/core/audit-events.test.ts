/**
 * core/audit-events.ts: the audit log's event names are the README's ("Audit log" table), in its
 * order, and authctl's --help wraps them within the width it is given.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { AUDIT_EVENTS, auditEventsHelp, isAuditEventName } from '../../src/core/audit-events.js'
import { ROOT } from '../helpers/app.js'

/** the event names of the README's audit table, in its order: `a` / `b` and `x.y.add`, `.disable` spelt out */
function readmeEvents(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('\n## Audit log\n'))
  const table = section.slice(section.indexOf('| event |'), section.indexOf('\n\n', section.indexOf('| event |')))
  const names: string[] = []
  for (const row of table.split('\n').slice(2)) {
    const cell = row.split('|')[1]!
    const tokens = [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)
    const base = tokens[0]!.slice(0, tokens[0]!.lastIndexOf('.'))
    for (const token of tokens) names.push(token.startsWith('.') ? base + token : token)
  }
  return names
}

t.test('the event names are the README table’s, in its order', async (t) => {
  const readme = readmeEvents()
  t.ok(readme.includes('admin.user.mfa_reset') && readme.includes('mfa.failure'), 'the table’s short forms spelt out')
  t.same([...AUDIT_EVENTS], readme)
})

t.test('isAuditEventName: exactly the names, not a prefix, another case or a property of every object', async (t) => {
  for (const name of AUDIT_EVENTS) t.ok(isAuditEventName(name), name)
  for (const other of ['', 'login', 'admin.user', 'LOGIN.SUCCESS', 'login.success ', 'constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    t.notOk(isAuditEventName(other), JSON.stringify(other))
  }
})

/** the name lines of the help: each without its indent and trailing comma */
const nameLines = (help: string): string[] =>
  help
    .split('\n')
    .slice(2, -1)
    .map((l) => l.slice(2).replace(/,$/, ''))

t.test('the help: a title, then every name once, in order, two spaces in, comma-separated across lines', async (t) => {
  const help = auditEventsHelp()
  t.match(help, /^\nEvent names \(--event\):\n {2}login\.success, /)
  t.ok(help.endsWith('admin.import\n'), 'the last name ends it, without a comma')
  const lines = help.split('\n').slice(2, -1)
  t.ok(lines.every((l) => /^ {2}\S/.test(l)), 'each line two spaces in')
  t.ok(lines.slice(0, -1).every((l) => l.endsWith(',')), 'each line but the last ends with a comma')
  t.same(nameLines(help).join(', ').split(', '), [...AUDIT_EVENTS])
})

t.test('the help’s lines stay within the width, trailing comma included (one could run a column over), and each is filled', async (t) => {
  for (let width = 24; width <= 100; width++) {
    const help = auditEventsHelp(width)
    const lines = help.split('\n').slice(2, -1)
    const over = lines.filter((l) => l.length > width)
    t.same(over, [], `width ${width}`)
    // greedy: the next line's first name would not have fitted on this one
    const bodies = nameLines(help)
    for (let i = 0; i + 1 < bodies.length; i++) {
      const next = bodies[i + 1]!.split(', ')[0]!
      if (`  ${bodies[i]}, ${next},`.length <= width) t.fail(`width ${width}: ${next} fits on line ${i + 1}`)
    }
  }
  t.same(nameLines(auditEventsHelp(10)), [...AUDIT_EVENTS], 'narrower than a name: one name a line, none dropped')
})
