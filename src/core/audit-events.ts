/**
 * The audit log's event names (README, "Audit log"), alone in a module of no imports: authctl's
 * --help lists them without loading anything else.
 */

/** Every event the log records, in the README's order. */
export const AUDIT_EVENTS = [
  'login.success',
  'login.failure',
  'rate_limit.block',
  'login.mfa_required',
  'mfa.success',
  'mfa.failure',
  'register',
  'logout',
  'password.change',
  'mfa.enable',
  'mfa.disable',
  'mfa.recovery_codes',
  'session.revoke',
  'refresh.reuse',
  'session.evict',
  'admin.user.add',
  'admin.user.disable',
  'admin.user.enable',
  'admin.user.passwd',
  'admin.user.rm',
  'admin.user.mfa_reset',
  'admin.sessions.revoke',
  'admin.keys.rotate',
  'admin.keys.revoke',
  'admin.limits.clear',
  'admin.import',
] as const

export type AuditEventName = (typeof AUDIT_EVENTS)[number]

const NAMES: ReadonlySet<string> = new Set(AUDIT_EVENTS)
export const isAuditEventName = (name: string): name is AuditEventName => NAMES.has(name)

/** the names wrapped for a help text, two spaces in, at most `width` columns */
export function auditEventsHelp(width = 78): string {
  const lines: string[] = []
  let line = ''
  for (const name of AUDIT_EVENTS) {
    // indent, the line so far, ", ", the name, and the comma that may follow it
    if (line !== '' && 2 + line.length + 2 + name.length + 1 > width) {
      lines.push(`  ${line},`)
      line = name
    } else line = line === '' ? name : `${line}, ${name}`
  }
  lines.push(`  ${line}`)
  return `\nEvent names (--event):\n${lines.join('\n')}\n`
}
