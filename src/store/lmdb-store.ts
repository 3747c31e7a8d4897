/**
 * The LMDB implementation of the Store: the only module that imports lmdb. LMDB is safe for
 * several processes, so authctl opens the same directory while the daemon runs; every write
 * happens in one write transaction, which LMDB serialises across processes. Reads answer with
 * values already resolved: an embedded store answers in microseconds.
 */
import { chmodSync, closeSync, linkSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readSync, rmSync, statfsSync, statSync } from 'node:fs'
import { constants as osConstants } from 'node:os'
import { dirname, join } from 'node:path'
import { open, type Database, type RootDatabase, type Transaction } from 'lmdb'
import { AppError } from '../errors.js'
import { GENESIS, sealEvent } from './audit-chain.js'
import { lmdbFileProblem } from './lmdb-file-check.js'
import { earlierTokenHashes, readImport } from './import-records.js'
import { migrate, SCHEMA_VERSION } from './migrations.js'
import {
  EXPORT_FORMAT,
  chargeFirst,
  hashParamsKey,
  liveUnder,
  settleKeys,
  type Audit,
  type AuditAnchor,
  type AuditDraft,
  type AuditEvent,
  type ExportRecord,
  type KeyRecord,
  type LimitClear,
  type MeRecord,
  type MfaStepDecision,
  type RefreshDecision,
  type SessionAudit,
  type SessionEntry,
  type SessionHolder,
  type SessionLimit,
  type SessionRecord,
  type Store,
  type StoreCharge,
  type UserRecord,
} from './store.js'

/** refresh-token hashes indexed per session; older tokens are found through their family */
const REFRESH_HISTORY = 32
// LMDB refuses keys over 1978 bytes (and throws synchronously); emails are checked well below
const MAX_KEY_BYTES = 1000
/** limit-clear requests kept: a daemon polls every few hundred ms, so only the newest matter */
const LIMIT_CLEARS_KEPT = 64
/** records per page of the walks that yield between pages (export, the audit chain) */
const PAGE = 512
/** audit events removed per write transaction by sweepAudit */
const AUDIT_SWEEP_CHUNK = 1024
/**
 * How far out of seq order event times may be: two processes stamp their events before they
 * queue for the write lock, so a later seq can carry a slightly earlier time. A newest-first walk
 * with `since` goes this much further back before it stops.
 */
const AUDIT_CLOCK_SLACK_MS = 60_000

type Key = string | (string | number)[]
const hasSeals = (s: SessionRecord): boolean => (s.rotations?.length ?? 0) > 0
type IndexTimes = [createdAt: number, lastUsedAt: number, expiresAt: number, sealed: 0 | 1]
/**
 * At most this many sessions end in one login's write: only a user far beyond the max (one
 * lowered since) has more to lose, and deleting them all at once held the event loop for
 * seconds (100 000: 3.6 s); the sweep trims the rest in chunks.
 */
const EVICT_PER_WRITE = 256

/** projections remembered per database by projectedOnChange */
const DECODED_KEPT = 4096

/**
 * `p` with each of its strings replaced by a copy that shares nothing with the text it was cut
 * from. The msgpack decoder makes a record's short strings as slices of one string of the
 * record's bytes, and V8 keeps a slice's whole parent alive: a kept projection holding its
 * session's userId held the session's whole record text (about 330 bytes; 13 288 of them,
 * 4.2 MB, after a round of the bench: docs/performance.md). Run once per decode, not per read.
 */
function detachedStrings<P extends object>(p: P): P {
  const fields = p as Record<string, unknown>
  for (const k of Object.keys(fields)) {
    const v = fields[k]
    if (typeof v === 'string') fields[k] = Buffer.from(v, 'utf8').toString('utf8')
  }
  return p
}

/**
 * Reads of one database for meRead that decode a record, and project it to what /me needs, only
 * when its stored bytes differ from those of the last decode of that key. The bytes are read on
 * every call, so a write by any process (authctl disabling a user, revoking a session) shows on
 * the very next read; only the msgpack decoding, which carries every field name in every record
 * and was most of the cost of a /me, is saved (a write anywhere moves the store's version, and
 * /me then reads again every session it holds). The bytes are read into lmdb's shared read
 * buffer and compared there: nothing is allocated unless they changed. The projections are
 * frozen (callers share them) and hold no slice of the decoded record (detachedStrings).
 */
function projectedOnChange<V, P extends object>(db: Database<V, Key>, project: (value: V) => P): (key: string) => Readonly<P> | undefined {
  const kept = new Map<string, { bytes: Buffer; value: Readonly<P> }>()
  // the database's own msgpack decoder (lmdb sets it up at open; the typings leave it out)
  const decoder = (db as unknown as { decoder?: { decode(bytes: Uint8Array): V } }).decoder
  // lmdb's getBinaryFast returns its shared buffer with `length` set to the value's size; the
  // buffer is overwritten by the next read, so it is copied before being kept
  const fast = db as unknown as { getBinaryFast(key: Key): Buffer | undefined }
  return (key) => {
    const bytes = fast.getBinaryFast(key)
    if (bytes === undefined) {
      kept.delete(key)
      return undefined
    }
    const n = bytes.length
    const hit = kept.get(key)
    if (hit !== undefined && hit.bytes.length === n && hit.bytes.compare(bytes, 0, n) === 0) return hit.value
    // a copy of its own size: Buffer.from would cut a small one from a shared 8 KB slab, and the
    // kept entry would hold the whole slab
    const own = Buffer.allocUnsafeSlow(n)
    own.set(bytes.subarray(0, n))
    // decoded from these very bytes; a plain read is the same snapshot (renewed once per turn)
    const value = Object.freeze(detachedStrings(project(decoder !== undefined ? decoder.decode(own) : db.get(key)!)))
    if (hit === undefined && kept.size >= DECODED_KEPT) kept.delete(kept.keys().next().value!)
    kept.set(key, { bytes: own, value })
    return value
  }
}

// lmdb's copy rejects with a plain Error of the C library's strerror text: the ones a backup
// meets given back their errno code, so authctl can say them as it says node's
const STRERROR_CODES: Readonly<Record<string, string>> = {
  'No space left on device': 'ENOSPC',
  'Disk quota exceeded': 'EDQUOT',
  'Permission denied': 'EACCES',
  'Read-only file system': 'EROFS',
}
function withErrnoCode(err: unknown): unknown {
  if (err instanceof Error && (err as NodeJS.ErrnoException).code === undefined) {
    const code = STRERROR_CODES[err.message]
    if (code !== undefined) (err as NodeJS.ErrnoException).code = code
  }
  return err
}

// LMDB's meta page carries this magic number near its start. LMDB takes a data file on trust
// and can crash the process on one that is not its own, so look before opening.
const LMDB_MAGIC = Buffer.from([0xde, 0xc0, 0xef, 0xbe])

function refuseForeignFile(file: string): void {
  // a directory or a FIFO named data.mdb is no store (a FIFO would block the read below)
  const kind = statSync(file, { throwIfNoEntry: false })
  if (kind !== undefined && !kind.isFile()) throw new AppError('NOT_A_STORE', { params: { file } })
  let head: Buffer
  try {
    const fd = openSync(file, 'r')
    try {
      head = Buffer.alloc(64)
      head = head.subarray(0, readSync(fd, head, 0, 64, 0))
    } finally {
      closeSync(fd)
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
    throw err
  }
  if (head.length > 0 && head.indexOf(LMDB_MAGIC) === -1) {
    throw new AppError('NOT_A_STORE', { params: { file } })
  }
  // A process making this very store meanwhile (LMDB writes the lock file, then the data file's
  // first pages) can be seen half way: what looks damaged is looked at again a moment later.
  let why = head.length === 0 ? emptiedStore(file) : lmdbFileProblem(file)
  for (let i = 0; why !== undefined && i < 3; i++) {
    Atomics.wait(PAUSE, 0, 0, 50)
    why = statSync(file).size === 0 ? emptiedStore(file) : lmdbFileProblem(file)
  }
  if (why !== undefined) throw new AppError('STORE_DAMAGED', { params: { file, why } })
}
/** for a synchronous pause of a few milliseconds */
const PAUSE = new Int32Array(new SharedArrayBuffer(4))

/**
 * An empty data.mdb is a new store, unless LMDB has opened one here before: its lock.mdb, made
 * empty beside data.mdb before LMDB first opens it, is then initialised. Without this a store cut
 * to nothing would be started afresh, its users, sessions and keys silently gone.
 */
function emptiedStore(file: string): string | undefined {
  const lock = statSync(join(dirname(file), 'lock.mdb'), { throwIfNoEntry: false })
  return lock !== undefined && lock.isFile() && lock.size > 0 ? 'it is empty, and its lock.mdb shows a store was open here before' : undefined
}

/**
 * The store's files hold password hashes and private keys: owner-only whatever the umask. LMDB
 * creates them with 0644 under the usual umask 022 and keeps the mode of an existing file, so
 * they are made here first, 0600, and an existing one (made under another umask, or copied in)
 * is set to 0600.
 */
const STORE_FILES = ['data.mdb', 'lock.mdb']

function ownerOnlyFiles(dir: string): void {
  for (const name of STORE_FILES) {
    const file = join(dir, name)
    // a directory or a FIFO of that name is no store's file (data.mdb is looked at first)
    const kind = statSync(file, { throwIfNoEntry: false })
    if (kind !== undefined && !kind.isFile()) throw new AppError('NOT_A_STORE', { params: { file } })
    closeSync(openSync(file, 'a', 0o600))
    if ((statSync(file).mode & 0o777) !== 0o600) chmodSync(file, 0o600)
  }
}

/**
 * Whether the data directory's mode is the store's to set: an empty directory (just made, or
 * made for it) or one holding a store, and never a shared one (the sticky bit, as /tmp has). A
 * directory that holds other things (a home directory, /srv) keeps its mode: only the store's
 * files in it are made 0600.
 */
function ownDirectory(dir: string, mode: number): boolean {
  if ((mode & 0o1000) !== 0) return false
  const entries = readdirSync(dir)
  return entries.length === 0 || entries.includes('data.mdb')
}

export interface LmdbStoreOptions {
  path: string
  /** open read-only is not offered: authctl writes too */
}

/** Why the data directory could not be made or opened, as the end of a sentence (undefined: no known reason) */
function directoryProblem(err: unknown): string | undefined {
  switch ((err as NodeJS.ErrnoException | null)?.code) {
    case 'EEXIST':
    case 'ENOTDIR':
      return 'a file is in the way (it must be a directory)'
    case 'EACCES':
    case 'EPERM':
      return 'permission denied (run as the user that owns it)'
    case 'EROFS':
      return 'the file system is read-only'
    case 'ENOSPC':
      return 'no space left on the device'
    // mkdir -p makes what is missing: what is missing and cannot be made is behind a link
    case 'ENOENT':
      return 'a symbolic link on its path points to nothing (a volume not mounted?)'
    case 'ELOOP':
      return 'the symbolic links on its path go round in a loop'
    default:
      return undefined
  }
}

export async function openLmdbStore(opts: LmdbStoreOptions): Promise<Store> {
  quietCommitErrors()
  let root: RootDatabase
  try {
    mkdirSync(opts.path, { recursive: true, mode: 0o700 })
    // mkdir's mode is masked by umask and ignored for an existing directory: make sure, for a
    // directory that is the store's (README, "Configure")
    const mode = statSync(opts.path).mode
    if ((mode & 0o777) !== 0o700 && ownDirectory(opts.path, mode)) chmodSync(opts.path, 0o700)
    refuseForeignFile(join(opts.path, 'data.mdb'))
    ownerOnlyFiles(opts.path)
    root = open({ path: opts.path, noSubdir: false, maxDbs: 16, compression: false })
  } catch (err) {
    // a plain sentence instead of node's "EEXIST: file already exists, mkdir '…'"
    const why = directoryProblem(err)
    if (why === undefined) throw err
    // a file in the way is a wrong --data / store.path (a config error), the rest a fault of the system
    const inTheWay = ['EEXIST', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')
    throw new AppError(inTheWay ? 'DATA_DIR_NOT_DIRECTORY' : 'DATA_DIR', { params: { path: opts.path, why } })
  }
  const db = <V, K extends Key | number = Key>(name: string): Database<V, K> => root.openDB<V, K>({ name })
  const users = db<UserRecord>('users')
  const emails = db<string>('emails')
  const sessions = db<SessionRecord>('sessions')
  // [userId, sessionId] → [createdAt, lastUsedAt, expiresAt, sealed] of the session, kept in step
  // with its record
  const userSessions = db<IndexTimes>('user_sessions')
  const refresh = db<string>('refresh')
  const sessionTokens = db<string>('session_tokens')
  const keys = db<KeyRecord>('keys')
  const meta = db<unknown>('meta')
  // [expiresAt, id] of each mfaToken used by a second step, until it expires
  const mfaUsed = db<number>('mfa_used')
  // the audit log: seq → event; meta holds `audit_head` (the last event's seq and hash) and
  // `audit_anchor` (what the first kept event chains to, once retention removed some)
  const audit = db<AuditEvent, number>('audit')
  // ['u', userId, seq], ['e', event, seq] and ['ue', userId, event, seq] → the event's time (ms):
  // a filtered page of auditEvents walks only the events it answers with
  const auditIndex = db<number>('audit_index')

  const tooLong = (key: string): boolean => Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES
  const counter = (name: string): number => (meta.get(name) as number | undefined) ?? 0

  // inside a write transaction: the events sealed and appended after the head of the chain
  const appendTx = (drafts: Audit): void => {
    if (drafts.length === 0) return
    let head = (meta.get('audit_head') as AuditAnchor | undefined) ?? (meta.get('audit_anchor') as AuditAnchor | undefined) ?? GENESIS
    for (const draft of drafts) {
      const event = sealEvent(plainDraft(draft), head.seq + 1, head.hash)
      audit.put(event.seq, event)
      for (const key of auditIndexKeys(event)) auditIndex.put(key, Date.parse(event.time))
      head = { seq: event.seq, hash: event.hash }
    }
    meta.put('audit_head', head)
  }

  // set once a commit has failed: lmdb then never settles the flush its close waits for
  let commitFailed = false
  /**
   * Every write transaction goes through here. One whose commit fails (a full disk, an I/O
   * error: LMDB writes none of it) rejects with lmdb's "Commit failed (see commitError for
   * details)", its cause in a promise of its own (`commitError`), and lmdb rejects its event-turn
   * batch's promise, which nobody holds, with it too (kriszyp/lmdb-js#368). Left unhandled,
   * either ends the process before the caller's own handling runs (authctl printed a stack
   * trace): both are handled here, and the caller gets STORE_WRITE_FAILED naming the cause.
   */
  const transaction = <T>(fn: () => T): Promise<T> =>
    root.transaction(fn).catch(async (err: unknown) => {
      const cause = (err as { commitError?: Promise<unknown> } | null)?.commitError
      if (cause === undefined) throw err
      commitFailed = true
      // the batch's promise is the one `committed` stands for until the next write
      root.committed.then(ignore, ignore)
      const why = await cause.then(() => err, (e: unknown) => e)
      throw new AppError('STORE_WRITE_FAILED', { params: { why: commitFailure(why, opts.path) } })
    })

  /** what a write calls when it changed something: the version moves (once) and `audit` is appended */
  type Changed = (audit?: Audit) => void
  // Every write goes through here. The version /me relies on (meta `changes`) moves in the same
  // transaction as the change, so no reader can see the one without the other; a write that
  // changes nothing leaves it, and appends no event.
  const write = <T>(fn: (changed: Changed) => T): Promise<T> =>
    transaction(() => {
      let moved = false
      return fn((events) => {
        if (!moved) {
          meta.put('changes', counter('changes') + 1)
          moved = true
        }
        if (events !== undefined) appendTx(events)
      })
    })

  await migrate({
    version: () => (meta.get('schema_version') as number | undefined) ?? 0,
    setVersion: (v) => meta.put('schema_version', v),
    transaction: (fn) =>
      write((changed) => {
        changed()
        return fn()
      }),
    isEmpty: () => users.getKeysCount() === 0 && keys.getKeysCount() === 0 && meta.get('schema_version') === undefined,
    users: () => users.getRange().map(({ value }) => value),
    putUser: (u) => users.put(u.id, u),
    emailOwner: (email) => emails.get(email),
    putEmail: (email, id) => emails.put(email, id),
    removeEmail: (email) => emails.remove(email),
    putHashTally: (tally) => meta.put('hash_tally', tally),
  })

  // inside a write transaction: one more (by 1) or one fewer (by -1) stored hash like `encoded`
  const tallyHash = (encoded: string, by: 1 | -1): void => {
    const tally = { ...((meta.get('hash_tally') as Record<string, number> | undefined) ?? {}) }
    const key = hashParamsKey(encoded)
    const n = (tally[key] ?? 0) + by
    if (n > 0) tally[key] = n
    else delete tally[key]
    meta.put('hash_tally', tally)
  }

  // inside a write transaction: index a session's token family. Its entry sits with the token
  // entries, under generation -1, so deleteSessionTx's range removes it with them
  const putFamily = (s: SessionRecord): void => {
    refresh.put(s.familyHash, s.id)
    sessionTokens.put([s.id, -1], s.familyHash)
  }
  // inside a write transaction: write a session's record and its entry in the per-user index
  const putSessionTx = (s: SessionRecord): void => {
    sessions.put(s.id, s)
    userSessions.put([s.userId, s.id], [s.createdAt, s.lastUsedAt, s.expiresAt, hasSeals(s) ? 1 : 0])
  }
  // inside a write transaction: a new session with its token entries
  const addSessionTx = (s: SessionRecord): void => {
    putSessionTx(s)
    refresh.put(s.refreshHash, s.id)
    sessionTokens.put([s.id, s.generation], s.refreshHash)
    putFamily(s)
  }
  // an index entry as a SessionEntry
  const entryOf = (key: Key, value: IndexTimes): SessionEntry => {
    const [userId, id] = key as [string, string]
    return { id, userId, createdAt: value[0], lastUsedAt: value[1], expiresAt: value[2], sealed: value[3] === 1 }
  }
  const userRange = (userId: string): { start: Key; end: Key } => ({ start: [userId], end: [userId, '\uffff'] })
  // inside a write transaction: the user's live sessions beyond `limit.max - 1`, oldest last use
  // first, deleted. Only the small index entries are read, not the sessions themselves, and only
  // when the user has room for none: the live are among the indexed, whose count lmdb gives in
  // one call, so a user under the bound costs a login no entry read or decoded.
  const evictTx = (userId: string, limit: SessionLimit): SessionEntry[] => {
    if (userSessions.getKeysCount(userRange(userId)) <= limit.max - 1) return []
    const live: SessionEntry[] = []
    for (const { key, value } of userSessions.getRange(userRange(userId))) {
      const e = entryOf(key, value)
      if (liveUnder(e, limit)) live.push(e)
    }
    const excess = live.length - (limit.max - 1)
    if (excess <= 0) return []
    live.sort((a, b) => a.lastUsedAt - b.lastUsedAt || (a.id < b.id ? -1 : 1))
    const evicted = live.slice(0, Math.min(excess, EVICT_PER_WRITE))
    for (const e of evicted) {
      const s = sessions.get(e.id)
      if (s !== undefined) deleteSessionTx(s)
    }
    return evicted
  }
  // inside a write transaction: remove a session with its indexes
  const deleteSessionTx = (s: SessionRecord): void => {
    sessions.remove(s.id)
    userSessions.remove([s.userId, s.id])
    for (const { key, value } of sessionTokens.getRange({ start: [s.id], end: [s.id, Number.MAX_SAFE_INTEGER] })) {
      refresh.remove(value)
      sessionTokens.remove(key)
    }
  }
  // inside a write transaction: every session of a user deleted (and stale index entries); how many
  const deleteUserSessionsTx = (userId: string, keep?: string): number => {
    let n = 0
    for (const { key } of userSessions.getRange(userRange(userId))) {
      const sid = (key as string[])[1]!
      if (sid === keep) continue
      const s = sessions.get(sid)
      if (s !== undefined) {
        deleteSessionTx(s)
        n++
      } else userSessions.remove(key)
    }
    return n
  }
  // inside a write transaction: the user's record replaced by `change(current)`, with its email
  // index and the hash tally kept in step
  /** the user after `change`, and whether it changed (`change` gave back the record it was given: nothing written) */
  const updateUserTx = (id: string, change: (user: UserRecord) => UserRecord): { user: UserRecord; changed: boolean } | undefined => {
    const current = tooLong(id) ? undefined : users.get(id)
    if (current === undefined) return undefined
    const next = change(current)
    if (next === current) return { user: current, changed: false }
    if (next.email !== current.email) {
      if (tooLong(next.email)) throw new AppError('KEY_TOO_LONG', { params: { what: 'email' } })
      if (emails.get(next.email) !== undefined) throw new AppError('STORE_EMAIL_TAKEN')
      emails.remove(current.email)
      emails.put(next.email, id)
    }
    if (next.passwordHash !== current.passwordHash) {
      tallyHash(current.passwordHash, -1)
      tallyHash(next.passwordHash, 1)
    }
    users.put(id, next)
    return { user: next, changed: true }
  }
  const bumpKeysVersion = (): void => {
    meta.put('keys_version', counter('keys_version') + 1)
  }
  // revocations are acknowledged only once durable: a power cut must not bring a token back
  const durable = async <T>(p: Promise<T>): Promise<T> => {
    const v = await p
    await root.flushed
    return v
  }
  // the stored key made by `create` once, in the transaction that finds none (two processes
  // starting at once never make two); it is no part of any record /me reads
  const ensureSecret = async (name: 'device_key' | 'mfa_key', create: () => string): Promise<string> => {
    const stored = meta.get(name) as string | undefined
    if (stored !== undefined) return stored
    return transaction(() => {
      const again = meta.get(name) as string | undefined
      if (again !== undefined) return again
      const key = create()
      meta.put(name, key)
      return key
    })
  }

  // /me's reads: what it needs of a session and of its user, decoded only when they changed
  const meSession = projectedOnChange(sessions, (s) => ({ userId: s.userId, createdAt: s.createdAt, expiresAt: s.expiresAt, lastUsedAt: s.lastUsedAt }))
  const meUser = projectedOnChange(users, (u) => ({ id: u.id, email: u.email, disabled: u.disabled, mfaEnabled: u.mfa !== undefined }))
  const meRecord = (sid: string): MeRecord | undefined => {
    const s = tooLong(sid) ? undefined : meSession(sid)
    if (s === undefined) return undefined
    return { userId: s.userId, createdAt: s.createdAt, expiresAt: s.expiresAt, lastUsedAt: s.lastUsedAt, user: meUser(s.userId) }
  }

  const auditAnchor = (txn?: Transaction): AuditAnchor => (meta.get('audit_anchor', { transaction: txn }) as AuditAnchor | undefined) ?? GENESIS

  // The walks that await between pages (export, the audit chain) read one snapshot throughout:
  // a write committed meanwhile is not half in them.
  async function* snapshotRange<V, K extends Key | number>(from: Database<V, K>, txn: Transaction): AsyncGenerator<{ key: K; value: V }> {
    let after: K | undefined
    for (;;) {
      const page = [...from.getRange({ transaction: txn, limit: PAGE, ...(after === undefined ? {} : { start: after, exclusiveStart: true }) })]
      for (const entry of page) yield entry
      if (page.length < PAGE) return
      after = page[page.length - 1]!.key
    }
  }

  /** whether session `id` of user `userId` is stored (inside a write: a user's own request's caller) */
  const callerHeld = (id: string, userId: string): boolean => !tooLong(id) && sessions.get(id)?.userId === userId

  /** createSession, and createSessionFor with `holder`: the user checked in the same write */
  const createSessionTx = async (holder: SessionHolder | undefined, s: SessionRecord, limit: SessionLimit | undefined, events: SessionAudit | undefined): Promise<SessionEntry[] | undefined> => {
    const evicted = await write((changed) => {
      if (holder !== undefined) {
        const u = users.get(s.userId)
        if (u === undefined || u.disabled || u.passwordHash !== holder.passwordHash) return undefined
      }
      const ended = limit === undefined ? [] : evictTx(s.userId, limit)
      addSessionTx(s)
      const evictions = events?.evicted
      changed([...(events?.events ?? []), ...(evictions === undefined ? [] : ended.map((e) => evictions(e)))])
      return ended
    })
    // an eviction is a revocation: acknowledged once durable
    if (evicted !== undefined && evicted.length > 0) await root.flushed
    return evicted
  }

  const store: Store = {
    backend: 'lmdb',
    location: opts.path,

    getUser: async (id) => (tooLong(id) ? undefined : users.get(id)),
    async getUserByEmail(email) {
      if (tooLong(email)) return undefined
      const id = emails.get(email)
      return id === undefined ? undefined : users.get(id)
    },
    listUsers: async () => [...users.getRange().map(({ value }) => value)],
    hashTally: async () => (meta.get('hash_tally') as Record<string, number> | undefined) ?? {},
    createUser: (user, events, session) =>
      write((changed) => {
        if (emails.get(user.email) !== undefined) return false
        if (tooLong(user.email) || tooLong(user.id)) throw new AppError('KEY_TOO_LONG', { params: { what: 'email or id' } })
        emails.put(user.email, user.id)
        users.put(user.id, user)
        tallyHash(user.passwordHash, 1)
        if (session !== undefined) addSessionTx(session)
        changed(events)
        return true
      }),
    updateUser: (id, change, events, caller) =>
      durable(
        write((changed) => {
          if (caller !== undefined && !callerHeld(caller, id)) return undefined
          const r = updateUserTx(id, change)
          // its events only when something changed (an admin enabling an enabled user: none)
          if (r?.changed === true) changed(events)
          return r?.user
        }),
      ),
    updateUserEndingSessions: (id, change, keep, events, caller) =>
      durable(
        write((changed) => {
          if (caller !== undefined && !callerHeld(caller, id)) return undefined
          const r = updateUserTx(id, change)
          if (r === undefined) return undefined
          const ended = deleteUserSessionsTx(id, keep)
          if (r.changed || ended > 0) changed(events)
          return { user: r.user, ended }
        }),
      ),
    deleteUser: (id, events) =>
      durable(
        write((changed) => {
          const user = tooLong(id) ? undefined : users.get(id)
          if (user === undefined) return false
          deleteUserSessionsTx(id)
          emails.remove(user.email)
          users.remove(id)
          tallyHash(user.passwordHash, -1)
          changed(events)
          return true
        }),
      ),

    getSession: async (id) => (tooLong(id) ? undefined : sessions.get(id)),
    getSessions: async (ids) => ids.map((id) => (tooLong(id) ? undefined : sessions.get(id))),
    async listSessions(userId) {
      if (userId === undefined) return [...sessions.getRange().map(({ value }) => value)]
      if (tooLong(userId)) return []
      const out: SessionRecord[] = []
      for (const { key } of userSessions.getRange(userRange(userId))) {
        const s = sessions.get((key as string[])[1])
        if (s !== undefined) out.push(s)
      }
      return out
    },
    countSessions: async (userId) => (tooLong(userId) ? 0 : userSessions.getKeysCount(userRange(userId))),
    async sessionEntries({ userId, after, limit }) {
      if (userId !== undefined && tooLong(userId)) return []
      const range: { start?: Key; end?: Key } = userId === undefined ? {} : userRange(userId)
      // resume at the cursor's key, skipping the cursor itself if it is still there
      if (after !== undefined) range.start = [after.userId, after.id]
      const out: SessionEntry[] = []
      for (const { key, value } of userSessions.getRange(range)) {
        const [u, id] = key as [string, string]
        if (after !== undefined && u === after.userId && id === after.id) continue
        out.push(entryOf(key, value))
        if (out.length >= limit) break
      }
      return out
    },
    createSession: async (s, limit, events) => (await createSessionTx(undefined, s, limit, events))!,
    createSessionFor: (holder, s, limit, events) => createSessionTx(holder, s, limit, events),
    async refreshSession<T>(tokenHash: string, decide: (s: SessionRecord | undefined, u: UserRecord | undefined) => RefreshDecision<T>, familyHash?: string, charge?: StoreCharge<T>) {
      const refused = await chargeFirst(charge)
      if (refused !== undefined) return refused.refused
      let revoked = false
      const result = await write((changed) => {
        const sid = (tooLong(tokenHash) ? undefined : refresh.get(tokenHash)) ?? (familyHash === undefined || tooLong(familyHash) ? undefined : refresh.get(familyHash))
        const current = sid === undefined ? undefined : sessions.get(sid)
        const d = decide(current, current === undefined ? undefined : users.get(current.userId))
        if (d.action === 'rotate') {
          const next = d.session
          putSessionTx(next)
          refresh.put(next.refreshHash, next.id)
          sessionTokens.put([next.id, next.generation], next.refreshHash)
          const old = next.generation - REFRESH_HISTORY
          if (old >= 0) {
            const h = sessionTokens.get([next.id, old])
            if (h !== undefined) refresh.remove(h)
            sessionTokens.remove([next.id, old])
          }
          changed(d.audit)
        } else if (d.action === 'revoke' && current !== undefined) {
          deleteSessionTx(current)
          revoked = true
          changed(d.audit)
        } else if (d.audit !== undefined) {
          // what was decided is recorded even when it changed nothing (a failed refresh)
          appendTx(d.audit)
        }
        return d.result
      })
      if (revoked) await root.flushed
      return result
    },
    updateSession: (id, change, events) =>
      write((changed) => {
        const current = tooLong(id) ? undefined : sessions.get(id)
        if (current === undefined) return undefined
        const next = change(current)
        if (next === undefined) return current
        putSessionTx(next)
        changed(events)
        return next
      }),
    sweepSessions: (ids, change) =>
      write((changed) => {
        let n = 0
        for (const id of ids) {
          const current = tooLong(id) ? undefined : sessions.get(id)
          if (current === undefined) continue
          const next = change(current)
          if (next === 'delete') {
            deleteSessionTx(current)
            changed()
            n++
          } else if (next !== undefined) {
            putSessionTx(next)
            changed()
          }
        }
        return n
      }),
    revokeSession: (id, events, caller) =>
      durable(
        write((changed) => {
          if (caller !== undefined && !callerHeld(caller.sessionId, caller.userId)) return undefined
          const s = tooLong(id) ? undefined : sessions.get(id)
          if (s === undefined) return false
          deleteSessionTx(s)
          changed(events)
          return true
        }),
      ),
    revokeUserSessions: (userId, events) =>
      durable(
        write((changed) => {
          const n = tooLong(userId) ? 0 : deleteUserSessionsTx(userId)
          if (n > 0) changed(events)
          return n
        }),
      ),
    revokeAllSessions: (events) =>
      durable(
        write((changed) => {
          let n = 0
          for (const { value } of sessions.getRange()) {
            deleteSessionTx(value)
            n++
          }
          if (n > 0) changed(events)
          return n
        }),
      ),
    async findSessionIdByRefreshHash(h, family) {
      return (tooLong(h) ? undefined : refresh.get(h)) ?? (family === undefined || tooLong(family) ? undefined : refresh.get(family))
    },

    listKeys: async () => [...keys.getRange().map(({ value }) => value)],
    getKey: async (kid) => (tooLong(kid) ? undefined : keys.get(kid)),
    putKey: (key, events) =>
      durable(
        write((changed) => {
          keys.put(key.kid, key)
          bumpKeysVersion()
          changed(events)
        }),
      ),
    rotateKey: (key, now, events) =>
      durable(
        write((changed) => {
          const stored = [...keys.getRange().map(({ value }) => value)]
          const settled = settleKeys(stored, now)
          const signing = settled.some((k) => k.state === 'active')
          const scheduled = key.state === 'next' && key.activatedAt !== null && key.activatedAt > now && signing
          settled.forEach((k, i) => {
            if (k.state === 'next') keys.remove(k.kid)
            else if (k.state === 'active' && !scheduled) keys.put(k.kid, { ...k, state: 'retiring', retiringAt: now })
            else if (k !== stored[i]) keys.put(k.kid, k)
          })
          const added: KeyRecord = scheduled ? key : { ...key, state: 'active', activatedAt: now }
          keys.put(added.kid, added)
          bumpKeysVersion()
          changed(events)
          return added
        }),
      ),
    ensureActiveKey: (create) =>
      write((changed) => {
        for (const { value } of keys.getRange()) if (value.state === 'active') return value
        const key = create()
        keys.put(key.kid, key)
        bumpKeysVersion()
        changed()
        return key
      }),
    deleteKey: (kid, events) =>
      durable(
        write((changed) => {
          if (tooLong(kid) || keys.get(kid) === undefined) return false
          keys.remove(kid)
          bumpKeysVersion()
          changed(events)
          return true
        }),
      ),
    keysVersion: async () => counter('keys_version'),

    async meRead(sids, known, cached) {
      const version = counter('changes')
      const records = new Map<string, MeRecord | undefined>()
      const same = version === known
      for (const sid of sids) if (!(same && cached.has(sid))) records.set(sid, meRecord(sid))
      return { version, keysVersion: counter('keys_version'), records }
    },

    ensureDeviceKey: (create) => ensureSecret('device_key', create),
    ensureMfaKey: (create) => ensureSecret('mfa_key', create),
    mfaTokenUsed: async (id, expiresAt) => !tooLong(id) && mfaUsed.get([expiresAt, id]) !== undefined,
    finishMfaStep: <T>(token: { id: string; expiresAt: number }, userId: string, now: number, decide: (user: UserRecord | undefined, used: boolean) => MfaStepDecision<T>) =>
      durable(
        write((changed) => {
          // the records of tokens expired by now: nobody can present those any more
          for (const { key } of mfaUsed.getRange({ end: [now] })) mfaUsed.remove(key)
          const used = !tooLong(token.id) && mfaUsed.get([token.expiresAt, token.id]) !== undefined
          const d = decide(tooLong(userId) ? undefined : users.get(userId), used)
          if (d.action === 'use') {
            users.put(userId, d.user)
            mfaUsed.put([token.expiresAt, token.id], 1)
            changed(d.audit)
          } else if (d.audit !== undefined) {
            // a failed second step is recorded though it changed nothing
            appendTx(d.audit)
          }
          return d.result
        }),
      ),
    // not the version /me relies on: a limit clear changes no record /me reads
    addLimitClear: (target, at, events) =>
      transaction(() => {
        const kept = (meta.get('limit_clears') as LimitClear[] | undefined) ?? []
        const seq = (kept.at(-1)?.seq ?? 0) + 1
        meta.put('limit_clears', [...kept.slice(-(LIMIT_CLEARS_KEPT - 1)), { seq, target, at }])
        meta.put('limit_clear_seq', seq)
        if (events !== undefined) appendTx(events)
        return seq
      }),
    async limitClearsAfter(after) {
      // a number read unless there is something new
      if (counter('limit_clear_seq') <= after) return []
      return ((meta.get('limit_clears') as LimitClear[] | undefined) ?? []).filter((c) => c.seq > after)
    },

    appendAudit: async (events) => {
      if (events.length > 0) await transaction(() => appendTx(events))
    },
    async auditEvents({ limit, before, userId, event, since }) {
      const out: AuditEvent[] = []
      if (!(limit > 0)) return out
      if ((userId !== undefined && tooLong(userId)) || (event !== undefined && tooLong(event))) return out
      // newest first; a walk with `since` stops once it is past `since` by more than the slack
      const floor = since === undefined ? undefined : since - AUDIT_CLOCK_SLACK_MS
      const top = before === undefined ? Number.MAX_SAFE_INTEGER : before
      if (userId === undefined && event === undefined) {
        for (const { value } of audit.getRange({ start: top, reverse: true, exclusiveStart: true })) {
          const at = Date.parse(value.time)
          if (floor !== undefined && at < floor) break
          if (since !== undefined && at < since) continue
          out.push(value)
          if (out.length >= limit) break
        }
        return out
      }
      const prefix: (string | number)[] = userId !== undefined && event !== undefined ? ['ue', userId, event] : userId !== undefined ? ['u', userId] : ['e', event!]
      for (const { key, value: at } of auditIndex.getRange({ start: [...prefix, top], end: prefix, reverse: true, exclusiveStart: true })) {
        if (floor !== undefined && at < floor) break
        if (since !== undefined && at < since) continue
        const found = audit.get((key as (string | number)[]).at(-1) as number)
        if (found !== undefined) out.push(found)
        if (out.length >= limit) break
      }
      return out
    },
    async auditChain(walk) {
      // the anchor read in the snapshot the events are: a sweep just before the walk is in
      // neither or in both
      const txn = root.useReadTransaction()
      try {
        const anchor = auditAnchor(txn)
        // every kept event, by seq: an imported one the anchor should have removed shows as a break
        async function* events(): AsyncGenerator<AuditEvent> {
          for await (const { value } of snapshotRange(audit, txn)) yield value
        }
        return await walk(anchor, events())
      } finally {
        txn.done()
      }
    },
    async sweepAudit(before) {
      let total = 0
      for (;;) {
        // a chunk per transaction: a long backlog never holds the write lock for long
        const removed = await transaction(() => {
          let n = 0
          let last: AuditEvent | undefined
          for (const { key, value } of audit.getRange({ limit: AUDIT_SWEEP_CHUNK })) {
            // the oldest first, and only a run of them: what remains still chains to the anchor
            if (!(Date.parse(value.time) < before)) break
            audit.remove(key)
            for (const k of auditIndexKeys(value)) auditIndex.remove(k)
            last = value
            n++
          }
          if (last !== undefined) meta.put('audit_anchor', { seq: last.seq, hash: last.hash })
          return n
        })
        total += removed
        if (removed < AUDIT_SWEEP_CHUNK) return total
      }
    },

    schemaVersion: async () => (meta.get('schema_version') as number | undefined) ?? SCHEMA_VERSION,
    ping: async () => {},

    async *exportRecords(): AsyncGenerator<ExportRecord> {
      const txn = root.useReadTransaction()
      try {
        const schema = (meta.get('schema_version', { transaction: txn }) as number | undefined) ?? SCHEMA_VERSION
        yield { type: 'meta', format: EXPORT_FORMAT, schema, backend: 'lmdb', exportedAt: new Date().toISOString() }
        for await (const { value } of snapshotRange(users, txn)) yield { type: 'user', user: value }
        for await (const { value } of snapshotRange(sessions, txn)) yield { type: 'session', session: value }
        for await (const { value } of snapshotRange(keys, txn)) yield { type: 'key', key: value }
        for (const name of ['device_key', 'mfa_key'] as const) {
          const value = meta.get(name, { transaction: txn }) as string | undefined
          if (value !== undefined) yield { type: 'secret', name, value }
        }
        // the used mfaTokens: one used just before the export is not used again after the import
        for await (const { key } of snapshotRange(mfaUsed, txn)) {
          const [expiresAt, id] = key as [number, string]
          yield { type: 'mfa_used', id, expiresAt }
        }
        yield { type: 'audit_anchor', anchor: auditAnchor(txn) }
        for await (const { value } of snapshotRange(audit, txn)) yield { type: 'audit', event: value }
      } finally {
        txn.done()
      }
    },
    async importRecords(records, importEvents) {
      const notEmpty = (): AppError => new AppError('NOT_EMPTY', { params: { store: `the store at ${opts.path}` } })
      // refused before the export is read, and again inside the transaction (a user added meanwhile)
      if (users.getKeysCount() > 0) throw notEmpty()
      const set = await readImport(records)
      return write((changed) => {
        if (users.getKeysCount() > 0) throw notEmpty()
        const replacedAuditEvents = audit.getKeysCount()
        // A store without users may still hold what a daemon made on its first start (a key,
        // the secrets, audit events of failed logins): the export's replace them, so the keys,
        // the sessions and the audit log are the export's alone.
        for (const d of [emails, sessions, userSessions, refresh, sessionTokens, keys, mfaUsed, audit, auditIndex] as Database<unknown, Key | number>[]) {
          for (const key of [...d.getKeys()]) d.remove(key)
        }
        meta.remove('hash_tally')
        for (const u of set.users) {
          users.put(u.id, u)
          emails.put(u.email, u.id)
          tallyHash(u.passwordHash, 1)
        }
        for (const s of set.sessions) {
          addSessionTx(s)
          // the tokens replaced within the grace are found by their own hash too, as after a rotation
          earlierTokenHashes(s).forEach((h, i) => {
            refresh.put(h, s.id)
            sessionTokens.put([s.id, s.generation - 1 - i], h)
          })
        }
        for (const k of set.keys) keys.put(k.kid, k)
        bumpKeysVersion()
        if (set.secrets.device_key !== undefined) meta.put('device_key', set.secrets.device_key)
        if (set.secrets.mfa_key !== undefined) meta.put('mfa_key', set.secrets.mfa_key)
        for (const u of set.mfaUsed) mfaUsed.put([u.expiresAt, u.id], 1)
        // the events as they are, each under its seq: whether they chain (their hashes are the
        // export's, their seqs in order and without gaps) is for `authctl audit verify` to say
        for (const e of set.events) {
          audit.put(e.seq, e)
          for (const key of auditIndexKeys(e)) auditIndex.put(key, Date.parse(e.time))
        }
        meta.put('audit_anchor', set.anchor)
        // the seqs go on after the highest
        meta.put('audit_head', set.head)
        const counts = { users: set.users.length, sessions: set.sessions.length, keys: set.keys.length, replacedAuditEvents }
        // the import's own event, in its write
        changed(importEvents?.(counts))
        return counts
      })
    },

    flushed: async () => {
      await root.flushed
    },
    backup: async (file) => {
      // LMDB copies an environment into a directory, as data.mdb: copy into a private temp
      // directory beside `file`, then put that one file into place (a data directory holding
      // it as data.mdb is the restored store)
      removeStaleBackups(dirname(file))
      const tmp = mkdtempSync(join(dirname(file), BACKUP_TEMP))
      // A copy cut short by Ctrl-C or a SIGTERM (a cron job's timeout) is removed, not left
      // beside the backups, and nothing after it runs; then the signal does what it would have
      // done, raised again once this listener is gone. Where that raise does not end the program
      // (a parent that had the signal ignored, say), it exits as a shell reports such an end.
      let interruptedBy: NodeJS.Signals | undefined
      const interrupted = (signal: NodeJS.Signals): void => {
        interruptedBy = signal
        rmSync(tmp, { recursive: true, force: true })
        process.off('SIGINT', interrupted)
        process.off('SIGTERM', interrupted)
        process.kill(process.pid, signal)
        setTimeout(() => process.exit(128 + osConstants.signals[signal]), 100)
      }
      process.once('SIGINT', interrupted)
      process.once('SIGTERM', interrupted)
      // liblmdb creates the copy 0666 less the umask: owner-only from its first byte
      const umask = process.umask(0o077)
      try {
        await root.backup(tmp, true).catch((err: unknown) => {
          // cut short, the copy fails on its removed directory: not an error to report, the
          // program is ending by the signal (its delivery can trail the raise by a moment)
          if (interruptedBy === undefined) throw withErrnoCode(err)
        })
        // the copy was cut short: the program is ending, and the copy is gone
        if (interruptedBy !== undefined) await new Promise<never>(() => {})
        chmodSync(join(tmp, 'data.mdb'), 0o600)
        // a hard link, not a rename: it fails on any entry already at `file` (one made while the
        // copy ran, a symlink even when dangling), where a rename would replace it
        try {
          linkSync(join(tmp, 'data.mdb'), file)
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new AppError('BACKUP_EXISTS', { params: { file } })
          throw err
        }
      } finally {
        process.umask(umask)
        process.off('SIGINT', interrupted)
        process.off('SIGTERM', interrupted)
        rmSync(tmp, { recursive: true, force: true })
      }
    },
    close: () => {
      if (!commitFailed) return root.close()
      // lmdb would wait for the failed commit's flush, forever: the process's end closes the files
      root.close().catch(ignore)
      return Promise.resolve()
    },
  }
  return store
}

const ignore = (): void => {}

/** the prefix of a backup's temp directory, beside the backup file */
const BACKUP_TEMP = '.authd-backup-'
/** a temp directory of a backup this old was left by a copy that was killed (kill -9, a crash) */
const STALE_BACKUP_MS = 24 * 3600_000

/** removes, in `dir`, the temp directories of backups killed before they could remove them */
function removeStaleBackups(dir: string): void {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return
  }
  for (const name of names) {
    if (!name.startsWith(BACKUP_TEMP)) continue
    const path = join(dir, name)
    try {
      const s = lstatSync(path)
      if (s.isDirectory() && Date.now() - s.mtimeMs > STALE_BACKUP_MS) rmSync(path, { recursive: true, force: true })
    } catch {
      // gone meanwhile, or not ours to remove
    }
  }
}

/** why a commit failed, as the disk said it (lmdb's page details left out); `path` the store's */
export function commitFailure(cause: unknown, path?: string): string {
  const message = cause instanceof Error ? cause.message : String(cause)
  const why = message.split(': Attempting to write page')[0]!.trim() || 'unknown error'
  // A write into a file mapped in memory that finds no room can fail as an I/O error (tmpfs does
  // that): said as the full disk it is, rather than as failing hardware
  if ((cause as { code?: unknown } | null)?.code === EIO && path !== undefined && diskFull(path)) return `No space left on device (${why})`
  return why
}

const EIO = 5

/** whether the filesystem holding `path` has no room left for another page or two */
function diskFull(path: string): boolean {
  try {
    const s = statfsSync(path)
    return s.bavail * s.bsize < 64 * 1024
  } catch {
    return false
  }
}

/**
 * lmdb-js prints every failed commit to console.error, stack and all (lmdb/write.js), besides
 * rejecting the write with it, which the store turns into one sentence (STORE_WRITE_FAILED): a
 * full disk then filled authctl's stderr and the daemon's journal with a stack per write. Those
 * printouts, and only those (an Error raised in lmdb's write.js, printed alone), are dropped.
 * liblmdb's own words on a failed write() (`Write error: … position …, size …`, written by C to
 * the same stream, then named in the error as "Attempting to write page …") cannot be, and end
 * without a line end: the line is ended here instead, so the next sentence starts on its own.
 */
let quieted = false
function quietCommitErrors(): void {
  if (quieted) return
  quieted = true
  const print = console.error
  console.error = (...args: unknown[]) => {
    const [only] = args
    if (args.length === 1 && only instanceof Error && /[\\/]lmdb[\\/]write\.js:/.test(only.stack ?? '')) {
      if (only.message.includes('Attempting to write page')) process.stderr.write('\n')
      return
    }
    print.apply(console, args)
  }
}

/**
 * A draft as the chain keeps it: the fields that do not apply `null`, and `detail` as JSON has it
 * (what an export writes and `audit verify` hashes), so the hash sealed now is the one recomputed
 * from any copy later.
 */
function plainDraft(d: AuditDraft): AuditDraft {
  return {
    at: d.at,
    event: d.event,
    actor: d.actor,
    userId: d.userId ?? null,
    email: d.email ?? null,
    sessionId: d.sessionId ?? null,
    ip: d.ip ?? null,
    userAgent: d.userAgent ?? null,
    detail: d.detail === undefined || d.detail === null ? {} : (JSON.parse(JSON.stringify(d.detail)) as Record<string, unknown>),
  }
}

/** the audit_index entries of an event (keys longer than LMDB takes are left out: such a filter finds nothing) */
function auditIndexKeys(e: AuditEvent): Key[] {
  const fits = (s: string): boolean => Buffer.byteLength(s, 'utf8') <= MAX_KEY_BYTES
  const out: Key[] = []
  if (fits(e.event)) out.push(['e', e.event, e.seq])
  if (e.userId !== null && fits(e.userId)) {
    out.push(['u', e.userId, e.seq])
    if (fits(e.event)) out.push(['ue', e.userId, e.event, e.seq])
  }
  return out
}
