/**
 * The PostgreSQL store's audit append (README, "Audit log"): the events a write records, sealed
 * by the database under the audit head's row lock in the write's own transaction (the function
 * authd_audit_append of store/pg/schema.ts), so seq counts without gaps across instances and an
 * event commits with the change it records.
 */
import { canonicalJson, sealEvent } from '../audit-chain.js'
import type { Audit } from '../store.js'
import type { Sql } from './db.js'

/**
 * authd_audit_append's arguments for `audit` (store/pg/schema.ts): each event's canonical JSON
 * (audit-chain.ts) in the pieces before and after its seq's digits, and its stored body (as
 * JSON.stringify(sealEvent(…)) writes it) after the seq and before the hash. The database puts in
 * the seq and the hashes, under the head's lock: one statement for the whole append.
 */
export function auditArgs(audit: Audit): unknown[] {
  const heads: string[] = []
  const tails: string[] = []
  const mids: string[] = []
  for (const draft of audit) {
    const sealed = sealEvent(draft, 0, '')
    const { seq: _seq, hash: _hash, ...rest } = sealed
    // canonicalJson of the body: keys sorted by code unit; seq is top level, so what sorts before it is the head
    const parts = Object.keys(rest)
      .filter((k) => (rest as Record<string, unknown>)[k] !== undefined)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((k) => [k, `${JSON.stringify(k)}:${canonicalJson((rest as Record<string, unknown>)[k])}`] as const)
    const before = parts.filter(([k]) => k < 'seq').map(([, p]) => p)
    const after = parts.filter(([k]) => k > 'seq').map(([, p]) => p)
    heads.push(`{${before.map((p) => `${p},`).join('')}"seq":`)
    tails.push(`${after.map((p) => `,${p}`).join('')}}`)
    const body = JSON.stringify(rest)
    mids.push(body === '{}' ? '' : `,${body.slice(1, -1)}`)
  }
  return [audit.map((d) => d.at), audit.map((d) => d.event), audit.map((d) => d.userId), heads, tails, mids]
}

/** appends `audit` to the log (one statement): seq and chain hash from the head row, locked until the commit */
export async function appendAuditTx(sql: Sql, audit: Audit): Promise<void> {
  if (audit.length === 0) return
  await sql.query(`SELECT authd_audit_append($1, $2, $3, $4, $5, $6)`, auditArgs(audit))
}
