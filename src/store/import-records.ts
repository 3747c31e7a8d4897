/**
 * What `Store.importRecords` takes, checked before anything is written (README, "Export and
 * import"): the records of an export read whole, each checked for the shape the store keeps, and
 * the first one that does not fit refused with BAD_EXPORT naming its line (1-based:
 * the meta record is line 1). Backend-neutral: either backend reads an export through here and
 * then writes the set in one transaction.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { AppError } from '../errors.js'
import { GENESIS } from './audit-chain.js'
import { type AuditAnchor, type AuditEvent, type ExportRecord, type KeyRecord, type SessionRecord, type UserRecord } from './store.js'

export interface ImportSet {
  meta: Extract<ExportRecord, { type: 'meta' }>
  users: UserRecord[]
  sessions: SessionRecord[]
  keys: KeyRecord[]
  /** the secrets the export carried (a store keeps its own for one it did not) */
  secrets: { device_key?: string; mfa_key?: string }
  /** the mfaTokens a second step had used (none in a format 1 export) */
  mfaUsed: Array<{ id: string; expiresAt: number }>
  anchor: AuditAnchor
  /**
   * The events as the export has them (README, "Audit log": `authctl import` loads them as they
   * are and `audit verify` judges them), in its order, their seqs distinct but not necessarily
   * in order or without gaps: a file whose events were removed, moved or changed is loaded, and
   * the break shows where the chain fails.
   */
  events: AuditEvent[]
  /** where the log goes on after the import: the event of the highest seq, or the anchor if that is higher (or there is none) */
  head: AuditAnchor
}

/** ids, emails, kids and token hashes longer than this are no record of authd's (LMDB keys stop at 1978 bytes) */
const MAX_KEY_BYTES = 1000

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0
const isKey = (v: unknown): v is string => typeof v === 'string' && v !== '' && Buffer.byteLength(v, 'utf8') <= MAX_KEY_BYTES
const isString = (v: unknown): v is string => typeof v === 'string'
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString)
const orNull =
  <T>(is: (v: unknown) => v is T) =>
  (v: unknown): v is T | null =>
    v === null || is(v)
const optional =
  <T>(is: (v: unknown) => v is T) =>
  (v: unknown): v is T | undefined =>
    v === undefined || is(v)
/** a time in ms that a Date can hold (±8.64e15): anything else fails every listing that shows it */
const isTime = (v: unknown): v is number => isNumber(v) && Math.abs(v) <= 8.64e15
const isHash = (v: unknown): v is string => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v)
const isIsoTime = (v: unknown): v is string => typeof v === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(v) && !Number.isNaN(Date.parse(v))

/** What makes a key record's PEMs unusable (after "a key whose"), or undefined: both parse, are of its algorithm, and are one pair. */
function keyProblem(k: KeyRecord): string | undefined {
  let privateKey: KeyObject
  let publicKey: KeyObject
  try {
    privateKey = createPrivateKey(k.privateKeyPem)
  } catch {
    return 'privateKeyPem is no private key'
  }
  try {
    publicKey = createPublicKey(k.publicKeyPem)
  } catch {
    return 'publicKeyPem is no public key'
  }
  const type = k.alg === 'ES256' ? 'ec' : 'rsa'
  const curveOk = k.alg !== 'ES256' || privateKey.asymmetricKeyDetails?.namedCurve === 'prime256v1'
  if (privateKey.asymmetricKeyType !== type || !curveOk) return `private key is not one for ${k.alg}`
  const own = createPublicKey(privateKey).export({ format: 'der', type: 'spki' })
  if (!own.equals(publicKey.export({ format: 'der', type: 'spki' }))) return 'public key is not that of its private key'
  return undefined
}

/** the first field of `record` that `checks` refuses, or undefined */
function badField(record: Record<string, unknown>, checks: Record<string, (v: unknown) => boolean>): string | undefined {
  for (const [field, ok] of Object.entries(checks)) if (!ok(record[field])) return field
  return undefined
}

const USER: Record<string, (v: unknown) => boolean> = {
  id: isKey,
  email: isKey,
  passwordHash: isString,
  createdAt: isTime,
  updatedAt: isTime,
  disabled: (v) => typeof v === 'boolean',
  mfa: optional((v): v is object => isObject(v) && isString(v.secret) && isTime(v.enabledAt) && isNumber(v.lastStep) && isStrings(v.recoveryCodes)),
  mfaSetup: optional((v): v is object => isObject(v) && isString(v.secret) && isTime(v.createdAt)),
}

const SESSION: Record<string, (v: unknown) => boolean> = {
  id: isKey,
  userId: isKey,
  createdAt: isTime,
  lastUsedAt: isTime,
  expiresAt: isTime,
  ip: isString,
  userAgent: isString,
  refreshHash: isKey,
  previousHash: orNull(isKey),
  rotatedAt: orNull(isTime),
  generation: isCount,
  familyHash: isKey,
  rotations: optional((v): v is unknown[] => Array.isArray(v) && v.every((r) => isObject(r) && isTime(r.at) && isString(r.sealed))),
  amr: isStrings,
}

const KEY: Record<string, (v: unknown) => boolean> = {
  kid: isKey,
  alg: (v) => v === 'ES256' || v === 'RS256',
  state: (v) => v === 'next' || v === 'active' || v === 'retiring' || v === 'retired',
  privateKeyPem: isString,
  publicKeyPem: isString,
  createdAt: isTime,
  activatedAt: orNull(isTime),
  retiringAt: orNull(isTime),
  retiredAt: orNull(isTime),
}

const EVENT: Record<string, (v: unknown) => boolean> = {
  seq: (v) => isCount(v) && v >= 1,
  time: isIsoTime,
  event: isString,
  actor: isString,
  userId: orNull(isString),
  email: orNull(isString),
  sessionId: orNull(isString),
  ip: orNull(isString),
  userAgent: orNull(isString),
  detail: isObject,
  hash: isHash,
}

/**
 * Reads `records` whole and checks them: the meta record first (format 1 or 2), users with
 * distinct ids and emails, sessions of those users with distinct ids and token hashes, keys with
 * distinct kids, each secret once, each used mfaToken once, the audit anchor before the events,
 * and the events each whole, with a
 * seq (a whole number from 1) no other event has. The events are taken as they are otherwise:
 * whether they chain is for `authctl audit verify` to say. Rejects with an AppError BAD_EXPORT
 * naming the first line that does not fit.
 */
export async function readImport(records: AsyncIterable<ExportRecord>): Promise<ImportSet> {
  let line = 0
  const bad = (why: string): AppError => new AppError('BAD_EXPORT', { params: { line, why } })
  let meta: ImportSet['meta'] | undefined
  const users: UserRecord[] = []
  const sessions: SessionRecord[] = []
  const keys: KeyRecord[] = []
  const secrets: ImportSet['secrets'] = {}
  const mfaUsed: ImportSet['mfaUsed'] = []
  const usedTokens = new Set<string>()
  let anchor: AuditAnchor | undefined
  const events: AuditEvent[] = []
  const seqs = new Set<number>()
  let highest: AuditEvent | undefined
  const userIds = new Set<string>()
  const emails = new Set<string>()
  const sessionIds = new Set<string>()
  const tokenHashes = new Map<string, string>()
  const kids = new Set<string>()
  // the line of each session, to name it when its user turns out to be missing
  const sessionLines: number[] = []

  for await (const raw of records) {
    line++
    const r = raw as unknown
    if (!isObject(r) || typeof r.type !== 'string') throw bad('not a record (an object with a "type")')
    if (meta === undefined && r.type !== 'meta') throw bad('the export must begin with its meta record')
    switch (r.type) {
      case 'meta':
        if (meta !== undefined) throw bad('a second meta record')
        if (r.format !== 1 && r.format !== 2) throw bad(`an export format this authd does not know (${JSON.stringify(r.format)})`)
        if (r.backend !== 'lmdb' && r.backend !== 'postgres') throw bad(`an unknown backend (${JSON.stringify(r.backend)})`)
        if (!isCount(r.schema) || !isString(r.exportedAt)) throw bad('a meta record without its schema or exportedAt')
        meta = r as ImportSet['meta']
        break
      case 'user': {
        const u = r.user
        if (!isObject(u)) throw bad('a user record without its user')
        const field = badField(u, USER)
        if (field !== undefined) throw bad(`a user whose ${field} is missing or invalid`)
        if (userIds.has(u.id as string)) throw bad(`a second user with the id ${u.id as string}`)
        if (emails.has(u.email as string)) throw bad(`a second user with the email ${u.email as string}`)
        userIds.add(u.id as string)
        emails.add(u.email as string)
        users.push(u as unknown as UserRecord)
        break
      }
      case 'session': {
        const s = r.session
        if (!isObject(s)) throw bad('a session record without its session')
        const field = badField(s, SESSION)
        if (field !== undefined) throw bad(`a session whose ${field} is missing or invalid`)
        const session = s as unknown as SessionRecord
        if (sessionIds.has(session.id)) throw bad(`a second session with the id ${session.id}`)
        for (const h of [session.refreshHash, ...earlierTokenHashes(session), session.familyHash]) {
          const owner = tokenHashes.get(h)
          if (owner !== undefined && owner !== session.id) throw bad(`a session sharing a refresh-token hash with the session ${owner}`)
          tokenHashes.set(h, session.id)
        }
        sessionIds.add(session.id)
        sessions.push(session)
        sessionLines.push(line)
        break
      }
      case 'key': {
        const k = r.key
        if (!isObject(k)) throw bad('a key record without its key')
        const field = badField(k, KEY)
        if (field !== undefined) throw bad(`a key whose ${field} is missing or invalid`)
        const unusable = keyProblem(k as unknown as KeyRecord)
        if (unusable !== undefined) throw bad(`a key whose ${unusable}`)
        if (kids.has(k.kid as string)) throw bad(`a second key with the kid ${k.kid as string}`)
        kids.add(k.kid as string)
        keys.push(k as unknown as KeyRecord)
        break
      }
      case 'secret':
        if (r.name !== 'device_key' && r.name !== 'mfa_key') throw bad(`an unknown secret (${JSON.stringify(r.name)})`)
        if (!isString(r.value) || r.value === '') throw bad(`the secret ${r.name} without its value`)
        if (secrets[r.name] !== undefined) throw bad(`the secret ${r.name} a second time`)
        secrets[r.name] = r.value
        break
      case 'mfa_used': {
        if (!isKey(r.id) || !isCount(r.expiresAt)) throw bad('a used mfaToken without its id or expiresAt')
        const token = `${r.expiresAt} ${r.id}`
        if (usedTokens.has(token)) throw bad(`the used mfaToken ${r.id} a second time`)
        usedTokens.add(token)
        mfaUsed.push({ id: r.id, expiresAt: r.expiresAt })
        break
      }
      case 'audit_anchor': {
        const a = r.anchor
        if (anchor !== undefined || events.length > 0) throw bad('the audit anchor must come once, before the audit events')
        if (!isObject(a) || !isCount(a.seq) || !isHash(a.hash)) throw bad('an audit anchor without its seq or hash')
        anchor = { seq: a.seq, hash: a.hash }
        break
      }
      case 'audit': {
        const e = r.event
        if (!isObject(e)) throw bad('an audit record without its event')
        const field = badField(e, EVENT)
        if (field !== undefined) throw bad(`an audit event whose ${field} is missing or invalid`)
        const event = e as unknown as AuditEvent
        // one event per seq: a store keeps them by it
        if (seqs.has(event.seq)) throw bad(`a second audit event with the seq ${event.seq}`)
        seqs.add(event.seq)
        if (highest === undefined || event.seq > highest.seq) highest = event
        events.push(event)
        break
      }
      default:
        throw bad(`an unknown record type (${JSON.stringify(r.type)})`)
    }
  }
  if (meta === undefined) {
    line = 1
    throw bad('the export is empty (no meta record)')
  }
  sessions.forEach((s, i) => {
    if (!userIds.has(s.userId)) {
      line = sessionLines[i]!
      throw bad(`a session of the user ${s.userId}, who is not in the export`)
    }
  })
  const from = anchor ?? GENESIS
  const head = highest !== undefined && highest.seq > from.seq ? { seq: highest.seq, hash: highest.hash } : from
  return { meta, users, sessions, keys, secrets, mfaUsed, anchor: from, events, head }
}

/**
 * The hashes of a session's earlier refresh tokens a store indexes besides the live one: the one
 * its last rotation replaced (generation `generation - 1`), if any. Older ones find the session
 * through its family.
 */
export function earlierTokenHashes(s: SessionRecord): string[] {
  return s.previousHash === null || s.generation === 0 ? [] : [s.previousHash]
}
