/**
 * The LMDB implementation of the Store: the only module that imports lmdb. LMDB is safe for
 * several processes, so authctl opens the same directory while the daemon runs; every write
 * happens in one write transaction, which LMDB serialises across processes.
 */
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { open, type Database, type RootDatabase } from 'lmdb'
import { hashParamsKey, settleKeys, StoreError, type KeyRecord, type LimitClear, type MfaStepDecision, type RefreshDecision, type SessionEntry, type SessionLimit, type SessionRecord, type Store, type UserRecord, type MeRecord, type SessionCursor, type LimitClearTarget, type AuditAnchor, type AuditEvent, type ExportRecord } from './store.js'
import { migrate, SCHEMA_VERSION } from './migrations.js'

/**
 * refresh-token hashes indexed per session; older tokens are found through their family (a token
 * of a session from an older version, which has none, is then simply unknown)
 */
const REFRESH_HISTORY = 32
// LMDB refuses keys over 1978 bytes (and throws synchronously); emails are checked well below
const MAX_KEY_BYTES = 1000
/** limit-clear requests kept: a daemon polls every few hundred ms, so only the newest matter */
const LIMIT_CLEARS_KEPT = 64

type Key = string | (string | number)[]
const hasSeals = (s: SessionRecord): boolean => (s.rotations?.length ?? 0) > 0 || s.sealedSuccessor !== undefined
type IndexTimes = [createdAt: number, lastUsedAt: number, expiresAt: number, sealed: 0 | 1]

export { StoreError }

/**
 * At most this many sessions end in one login's write: only a user far beyond the max (a store
 * from before the max) has more to lose, and deleting them all at once held the event loop for
 * seconds (100 000: 3.6 s); the sweep trims the rest in chunks.
 */
const EVICT_PER_WRITE = 256

/** decoded records remembered per database by decodedOnChange */
const DECODED_KEPT = 4096

/**
 * Reads of one database that decode a record only when its stored bytes differ from those of the
 * last decode of that key. The bytes are read on every call, so a write by any process (authctl
 * disabling a user, revoking a session) shows on the very next read; only the msgpack decoding,
 * which carries every field name in every record and was most of the cost of a /me, is saved.
 * The bytes are read into lmdb's shared read buffer and compared there: nothing is allocated
 * unless they changed. Callers get their own shallow copy of a record, as from a plain read.
 */
function decodedOnChange<V>(db: Database<V, Key>): (key: string) => V | undefined {
  const kept = new Map<string, { bytes: Buffer; value: V }>()
  // the database's own msgpack decoder (lmdb sets it up at open; the typings leave it out)
  const decoder = (db as unknown as { decoder?: { decode(bytes: Uint8Array): V } }).decoder
  // lmdb's getBinaryFast returns its shared buffer with `length` set to the value's size; the
  // buffer is overwritten by the next read, so it is copied before being kept
  const fast = db as unknown as { getBinaryFast(key: Key): Buffer | undefined }
  const copy = (value: V): V => (typeof value === 'object' && value !== null ? { ...value } : value)
  return (key) => {
    const bytes = fast.getBinaryFast(key)
    if (bytes === undefined) {
      kept.delete(key)
      return undefined
    }
    const n = bytes.length
    const hit = kept.get(key)
    if (hit !== undefined && hit.bytes.length === n && hit.bytes.compare(bytes, 0, n) === 0) return copy(hit.value)
    // a copy of its own size: Buffer.from would cut a small one from a shared 8 KB slab, and the
    // kept entry would hold the whole slab
    const own = Buffer.allocUnsafeSlow(n)
    own.set(bytes.subarray(0, n))
    // decoded from these very bytes; a plain read is the same snapshot (renewed once per turn)
    const value = decoder !== undefined ? decoder.decode(own) : db.get(key)!
    if (hit === undefined && kept.size >= DECODED_KEPT) kept.delete(kept.keys().next().value!)
    kept.set(key, { bytes: own, value })
    return copy(value)
  }
}

// LMDB's meta page carries this magic number near its start. LMDB takes a data file on trust
// and can crash the process on one that is not its own, so look before opening.
const LMDB_MAGIC = Buffer.from([0xde, 0xc0, 0xef, 0xbe])

function refuseForeignFile(file: string): void {
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
    throw new StoreError('NOT_A_STORE', `${file} is not an authd store (not an LMDB data file)`)
  }
}

/**
 * The store's files hold password hashes and private keys: owner-only whatever the umask. LMDB
 * creates them with 0644 under the usual umask 022 and keeps the mode of an existing file, so
 * they are made here first, 0600, and an existing one (of an older authd) is set to 0600.
 */
const STORE_FILES = ['data.mdb', 'lock.mdb']

function ownerOnlyFiles(dir: string): void {
  for (const name of STORE_FILES) {
    const file = join(dir, name)
    closeSync(openSync(file, 'a', 0o600))
    if ((statSync(file).mode & 0o777) !== 0o600) chmodSync(file, 0o600)
  }
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
    default:
      return undefined
  }
}

/** TEMPORARY (helper A): the store's synchronous interface of before, which the object below still has */
interface SyncStore {
  /** the data directory */
  readonly path: string

  // users
  getUser(id: string): UserRecord | undefined
  getUserByEmail(canonicalEmail: string): UserRecord | undefined
  listUsers(): UserRecord[]
  /** inserts the user and its email index in one transaction; false if the email exists */
  createUser(user: UserRecord): Promise<boolean>
  /** applies `change` to the current record inside a transaction; undefined if gone */
  updateUser(id: string, change: (user: UserRecord) => UserRecord): Promise<UserRecord | undefined>
  /**
   * updateUser, and in the same write transaction every session of the user except `keep` ends
   * with its token entries (a password change: no other session outlives the old password).
   * Resolves once durable, to the record now stored and how many sessions ended; undefined if
   * the user is gone.
   */
  updateUserEndingSessions(id: string, change: (user: UserRecord) => UserRecord, keep: string): Promise<{ user: UserRecord; ended: number } | undefined>
  /** deletes the user, its email index entry and all its sessions */
  deleteUser(id: string): Promise<boolean>
  /**
   * How many stored password hashes there are per parameter set (keys: hashParamsKey), counted in
   * the transactions that create, re-hash and delete users, by any process. An unknown email's
   * dummy verification follows these proportions (passwords.ts).
   */
  hashTally(): Readonly<Record<string, number>>

  // sessions
  getSession(id: string): SessionRecord | undefined
  /**
   * Sessions by id, in order (undefined for one that is gone), read plainly: for listings, which
   * read each session once (getSession keeps decoded records for the reads /me repeats).
   */
  getSessions(ids: string[]): Array<SessionRecord | undefined>
  listSessions(userId?: string): SessionRecord[]
  countSessions(userId: string): number
  /**
   * One bounded page of the sessions index, in index order (by user, then session id), after
   * `after`; of one user if `userId` is given. Walking a huge store page by page keeps memory and
   * each synchronous stretch bounded.
   */
  sessionEntries(opts: { userId?: string; after?: SessionCursor; limit: number }): SessionEntry[]
  /**
   * Creates the session. With `limit`, in the same write transaction, the user's live sessions
   * beyond `limit.max - 1` (the oldest last use first) are deleted with their token entries, so
   * that with the new one the user has at most `limit.max`, however many logins race. Resolves
   * to the sessions so ended. A bounded number end per call (a user far beyond the max, from a
   * store of before it, comes down over several logins and the sweep).
   */
  createSession(session: SessionRecord, limit?: SessionLimit): Promise<SessionEntry[]>
  /**
   * Finds the session a refresh-token hash belongs to (live or a recent predecessor), else the
   * one of the token's family (`familyHash`: any token the session ever had), and lets
   * `decide` choose, atomically with respect to every other writer, what happens to it.
   */
  refreshSession<T>(tokenHash: string, decide: (session: SessionRecord | undefined) => RefreshDecision<T>, familyHash?: string): Promise<T>
  /**
   * Replaces a session's record with `change(current)`, inside a write transaction; `change` may
   * answer undefined to leave it as it is. Not for rotation (refreshSession): the token entries
   * stay as they are. Resolves to the record now stored, or undefined if there is none.
   */
  updateSession(id: string, change: (session: SessionRecord) => SessionRecord | undefined): Promise<SessionRecord | undefined>
  /**
   * For each of `ids` that still exists, inside one write transaction: `change(current)` answers
   * 'delete' (the session goes with its token entries), a replacement record, or undefined (left
   * as it is). Resolves to how many were deleted. For the sweep: keep `ids` to a bounded chunk.
   */
  sweepSessions(ids: string[], change: (session: SessionRecord) => SessionRecord | 'delete' | undefined): Promise<number>
  /** deletes one session and its refresh-token entries; false if it did not exist */
  revokeSession(id: string): Promise<boolean>
  /** deletes every session of a user; returns how many */
  revokeUserSessions(userId: string): Promise<number>
  revokeAllSessions(): Promise<number>
  /** session id for a refresh-token hash, else for the token's family hash, if known */
  findSessionIdByRefreshHash(tokenHash: string, familyHash?: string): string | undefined

  // keys
  listKeys(): KeyRecord[]
  getKey(kid: string): KeyRecord | undefined
  putKey(key: KeyRecord): Promise<void>
  /**
   * Adds `key`, atomically with what it changes. A `next` key (its `activatedAt` in the future)
   * is published and signs from its `activatedAt`, unless no key signs now: then it is active at
   * once. Any other key is active from `now`, and the key signing until then turns retiring. A
   * key still `next` is replaced either way (it never signed: no token needs it). Returns the
   * key as stored.
   */
  rotateKey(key: KeyRecord, now: number): Promise<KeyRecord>
  /** creates `key` as the first active key unless some active key already exists */
  ensureActiveKey(create: () => KeyRecord): Promise<KeyRecord>
  deleteKey(kid: string): Promise<boolean>
  /** a number that changes whenever the keys change, cheap to poll */
  keysVersion(): number
  /**
   * A number that changes with every write to the store, by any process (it is bumped inside
   * each write transaction). A reader that finds it unchanged since it read some records knows
   * those records are as it read them. One cheap read, done once per turn of the event loop
   * (the requests of one turn share lmdb's read snapshot anyway) and again after each write of
   * this process: the daemon polls it on every /me.
   */
  changes(): number

  // rate limits and device cookies
  /**
   * The key that signs device cookies: the one stored, else `create()`'s, stored in the same
   * transaction (so two processes starting at once never make two).
   */
  ensureDeviceKey(create: () => string): Promise<string>
  /** The key that signs mfaTokens (core/mfa-tokens.ts), made by `create()` once, like the device key. */
  ensureMfaKey(create: () => string): Promise<string>
  /** whether the mfaToken `id` (which expires at `expiresAt`) was used by a second step already */
  mfaTokenUsed(id: string, expiresAt: number): boolean
  /**
   * The second step of a login, atomically with respect to every other writer: `decide` sees the
   * user `userId` as stored and whether the mfaToken `token` was used already, and chooses. With
   * `use`, the user is stored (its TOTP step or recovery codes moved on) and the token recorded as
   * used, in one transaction: two second steps with one token, or one TOTP code, never both win.
   * Records of tokens expired by `now` are dropped on the way.
   */
  finishMfaStep<T>(token: { id: string; expiresAt: number }, userId: string, now: number, decide: (user: UserRecord | undefined, used: boolean) => MfaStepDecision<T>): Promise<T>
  /** records a request to clear login limits (the newest few are kept); resolves to its seq */
  addLimitClear(target: LimitClearTarget, at: number): Promise<number>
  /** the kept requests with a seq above `after`, oldest first; one cheap read, fit to poll */
  limitClearsAfter(after: number): LimitClear[]

  // meta
  schemaVersion(): number

  /** waits until everything committed so far is on disk */
  flushed(): Promise<void>
  /** a consistent, compacted copy of the store into `file` */
  backup(file: string): Promise<void>
  close(): Promise<void>
}

export async function openLmdbStore(opts: LmdbStoreOptions): Promise<Store> {
  let root: RootDatabase
  try {
    mkdirSync(opts.path, { recursive: true, mode: 0o700 })
    // mkdir's mode is masked by umask and ignored for an existing directory: make sure
    if ((statSync(opts.path).mode & 0o777) !== 0o700) chmodSync(opts.path, 0o700)
    refuseForeignFile(join(opts.path, 'data.mdb'))
    ownerOnlyFiles(opts.path)
    root = open({ path: opts.path, noSubdir: false, maxDbs: 16, compression: false })
  } catch (err) {
    // a plain sentence instead of node's "EEXIST: file already exists, mkdir '…'"
    const why = directoryProblem(err)
    if (why === undefined) throw err
    // a file in the way is a wrong --data / store.path (a config error), the rest a fault of the system
    const inTheWay = ['EEXIST', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')
    throw new StoreError(inTheWay ? 'DATA_DIR_NOT_DIRECTORY' : 'DATA_DIR', `cannot use the data directory ${opts.path}: ${why}`)
  }
  const db = <V>(name: string): Database<V, Key> => root.openDB<V, Key>({ name })
  const users = db<UserRecord>('users')
  const emails = db<string>('emails')
  const sessions = db<SessionRecord>('sessions')
  // [userId, sessionId] → [createdAt, lastUsedAt, expiresAt, sealed] of the session, kept in step
  // with its record (older versions wrote `true`: such an entry is read through the record)
  const userSessions = db<IndexTimes | true>('user_sessions')
  const refresh = db<string>('refresh')
  const sessionTokens = db<string>('session_tokens')
  const keys = db<KeyRecord>('keys')
  const meta = db<unknown>('meta')
  // [expiresAt, id] of each mfaToken used by a second step, until it expires
  const mfaUsed = db<number>('mfa_used')

  const tooLong = (key: string): boolean => Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES
  const readUser = decodedOnChange(users)
  const readSession = decodedOnChange(sessions)
  const readMeta = decodedOnChange(meta)

  // Every write goes through here: the change counter (Store.changes) is bumped in the same
  // transaction as the write, so no reader can see the one without the other.
  const write = <T>(fn: () => T): Promise<T> =>
    root
      .transaction(() => {
        const result = fn()
        meta.put('changes', ((meta.get('changes') as number | undefined) ?? 0) + 1)
        return result
      })
      .finally(forgetChanges)

  // The counter is read once per turn of the event loop (at the first changes() of the turn)
  // and forgotten right after the turn's I/O callbacks, and after every write of this process.
  // lmdb itself keeps a read snapshot until a timer of the next turn, so the requests of one
  // turn saw the same counter before; a /me read it on every request (3 % of one).
  let changesThisTurn: number | undefined
  const forgetChanges = (): void => {
    changesThisTurn = undefined
  }
  const changes = (): number => {
    if (changesThisTurn === undefined) {
      changesThisTurn = (readMeta('changes') as number | undefined) ?? 0
      setImmediate(forgetChanges)
    }
    return changesThisTurn
  }

  await migrate({
    version: () => (meta.get('schema_version') as number | undefined) ?? 0,
    setVersion: (v) => meta.put('schema_version', v),
    transaction: write,
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
    refresh.put(s.familyHash!, s.id)
    sessionTokens.put([s.id, -1], s.familyHash!)
  }
  // inside a write transaction: write a session's record and its entry in the per-user index
  const putSessionTx = (s: SessionRecord): void => {
    sessions.put(s.id, s)
    userSessions.put([s.userId, s.id], [s.createdAt, s.lastUsedAt, s.expiresAt, hasSeals(s) ? 1 : 0])
  }
  // an index entry as a SessionEntry (an older version's entry through its record; none if gone)
  const entryOf = (key: Key, value: IndexTimes | true): SessionEntry | undefined => {
    const [userId, id] = key as [string, string]
    if (value !== true) return { id, userId, createdAt: value[0], lastUsedAt: value[1], expiresAt: value[2], sealed: value[3] === 1 }
    const s = sessions.get(id)
    return s === undefined ? undefined : { id, userId, createdAt: s.createdAt, lastUsedAt: s.lastUsedAt, expiresAt: s.expiresAt, sealed: hasSeals(s) }
  }
  const userRange = (userId: string): { start: Key; end: Key } => ({ start: [userId], end: [userId, '\uffff'] })
  // inside a write transaction: the user's live sessions beyond `limit.max - 1`, oldest last use
  // first, deleted. Only the small index entries are read, not the sessions themselves.
  const evictTx = (userId: string, limit: SessionLimit): SessionEntry[] => {
    const live: SessionEntry[] = []
    for (const { key, value } of userSessions.getRange(userRange(userId))) {
      const e = entryOf(key, value)
      if (e !== undefined && limit.isLive(e)) live.push(e)
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
  // inside a write transaction: the user's record replaced by `change(current)`, with its email
  // index and the hash tally kept in step
  const updateUserTx = (id: string, change: (user: UserRecord) => UserRecord): UserRecord | undefined => {
    const current = users.get(id)
    if (current === undefined) return undefined
    const next = change(current)
    if (next.email !== current.email) {
      if (emails.get(next.email) !== undefined) throw new StoreError('EMAIL_TAKEN', 'email already registered')
      emails.remove(current.email)
      emails.put(next.email, id)
    }
    if (next.passwordHash !== current.passwordHash) {
      tallyHash(current.passwordHash, -1)
      tallyHash(next.passwordHash, 1)
    }
    users.put(id, next)
    return next
  }
  const bumpKeysVersion = (): void => {
    meta.put('keys_version', ((meta.get('keys_version') as number | undefined) ?? 0) + 1)
  }
  // revocations are acknowledged only once durable: a power cut must not bring a token back
  const durable = async <T>(p: Promise<T>): Promise<T> => {
    const v = await p
    await root.flushed
    return v
  }

  const store: SyncStore = {
    path: opts.path,

    getUser: (id) => (tooLong(id) ? undefined : readUser(id)),
    getUserByEmail(email) {
      if (tooLong(email)) return undefined
      const id = emails.get(email)
      return id === undefined ? undefined : readUser(id)
    },
    listUsers: () => [...users.getRange().map(({ value }) => value)],
    hashTally: () => (readMeta('hash_tally') as Record<string, number> | undefined) ?? {},
    createUser: (user) =>
      write(() => {
        if (emails.get(user.email) !== undefined) return false
        if (tooLong(user.email)) throw new StoreError('KEY_TOO_LONG', 'email too long for the store')
        emails.put(user.email, user.id)
        users.put(user.id, user)
        tallyHash(user.passwordHash, 1)
        return true
      }),
    updateUser: (id, change) => durable(write(() => updateUserTx(id, change))),
    updateUserEndingSessions: (id, change, keep) =>
      durable(
        write(() => {
          const user = updateUserTx(id, change)
          if (user === undefined) return undefined
          let ended = 0
          for (const { key } of userSessions.getRange(userRange(id))) {
            const sid = (key as string[])[1]!
            if (sid === keep) continue
            const s = sessions.get(sid)
            if (s !== undefined) {
              deleteSessionTx(s)
              ended++
            } else userSessions.remove(key)
          }
          return { user, ended }
        }),
      ),
    deleteUser: (id) =>
      durable(
        write(() => {
          const user = users.get(id)
          if (user === undefined) return false
          for (const { key } of userSessions.getRange({ start: [id], end: [id, '\uffff'] })) {
            const s = sessions.get((key as string[])[1])
            if (s !== undefined) deleteSessionTx(s)
            else userSessions.remove(key)
          }
          emails.remove(user.email)
          users.remove(id)
          tallyHash(user.passwordHash, -1)
          return true
        }),
      ),

    getSession: (id) => (tooLong(id) ? undefined : readSession(id)),
    getSessions: (ids) => ids.map((id) => (tooLong(id) ? undefined : sessions.get(id))),
    listSessions(userId) {
      if (userId === undefined) return [...sessions.getRange().map(({ value }) => value)]
      const out: SessionRecord[] = []
      for (const { key } of userSessions.getRange({ start: [userId], end: [userId, '\uffff'] })) {
        const s = sessions.get((key as string[])[1])
        if (s !== undefined) out.push(s)
      }
      return out
    },
    countSessions: (userId) => userSessions.getKeysCount({ start: [userId], end: [userId, '\uffff'] }),
    sessionEntries({ userId, after, limit }) {
      const range: { start?: Key; end?: Key } = userId === undefined ? {} : userRange(userId)
      // resume at the cursor's key, skipping the cursor itself if it is still there
      if (after !== undefined) range.start = [after.userId, after.id]
      const out: SessionEntry[] = []
      for (const { key, value } of userSessions.getRange(range)) {
        const [u, id] = key as [string, string]
        if (after !== undefined && u === after.userId && id === after.id) continue
        const e = entryOf(key, value)
        if (e !== undefined) out.push(e)
        if (out.length >= limit) break
      }
      return out
    },
    async createSession(s, limit) {
      const evicted = await write(() => {
        const ended = limit === undefined ? [] : evictTx(s.userId, limit)
        putSessionTx(s)
        refresh.put(s.refreshHash, s.id)
        sessionTokens.put([s.id, s.generation], s.refreshHash)
        if (s.familyHash !== undefined) putFamily(s)
        return ended
      })
      // an eviction is a revocation: acknowledged once durable
      if (evicted.length > 0) await root.flushed
      return evicted
    },
    async refreshSession<T>(tokenHash: string, decide: (s: SessionRecord | undefined) => RefreshDecision<T>, familyHash?: string) {
      let revoked = false
      const result = await write(() => {
        const sid = refresh.get(tokenHash) ?? (familyHash === undefined ? undefined : refresh.get(familyHash))
        const current = sid === undefined ? undefined : sessions.get(sid)
        const d = decide(current)
        if (d.action === 'rotate') {
          const next = d.session
          putSessionTx(next)
          refresh.put(next.refreshHash, next.id)
          sessionTokens.put([next.id, next.generation], next.refreshHash)
          // a session of an older version gets its family at its first rotation
          if (next.familyHash !== undefined && next.familyHash !== current?.familyHash) putFamily(next)
          const old = next.generation - REFRESH_HISTORY
          if (old >= 0) {
            const h = sessionTokens.get([next.id, old])
            if (h !== undefined) refresh.remove(h)
            sessionTokens.remove([next.id, old])
          }
        } else if (d.action === 'revoke' && current !== undefined) {
          deleteSessionTx(current)
          revoked = true
        }
        return d.result
      })
      if (revoked) await root.flushed
      return result
    },
    updateSession: (id, change) =>
      write(() => {
        const current = sessions.get(id)
        if (current === undefined) return undefined
        const next = change(current)
        if (next === undefined) return current
        putSessionTx(next)
        return next
      }),
    sweepSessions: (ids, change) =>
      write(() => {
        let n = 0
        for (const id of ids) {
          const current = sessions.get(id)
          if (current === undefined) continue
          const next = change(current)
          if (next === 'delete') {
            deleteSessionTx(current)
            n++
          } else if (next !== undefined) putSessionTx(next)
        }
        return n
      }),
    revokeSession: (id) =>
      durable(
        write(() => {
          const s = sessions.get(id)
          if (s === undefined) return false
          deleteSessionTx(s)
          return true
        }),
      ),
    revokeUserSessions: (userId) =>
      durable(
        write(() => {
          let n = 0
          for (const { key } of userSessions.getRange({ start: [userId], end: [userId, '\uffff'] })) {
            const s = sessions.get((key as string[])[1])
            if (s !== undefined) {
              deleteSessionTx(s)
              n++
            } else userSessions.remove(key)
          }
          return n
        }),
      ),
    revokeAllSessions: () =>
      durable(
        write(() => {
          let n = 0
          for (const { value } of sessions.getRange()) {
            deleteSessionTx(value)
            n++
          }
          return n
        }),
      ),
    findSessionIdByRefreshHash: (h, family) => refresh.get(h) ?? (family === undefined ? undefined : refresh.get(family)),

    listKeys: () => [...keys.getRange().map(({ value }) => value)],
    getKey: (kid) => (tooLong(kid) ? undefined : keys.get(kid)),
    putKey: (key) =>
      durable(
        write(() => {
          keys.put(key.kid, key)
          bumpKeysVersion()
        }),
      ),
    rotateKey: (key, now) =>
      durable(
        write(() => {
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
          return added
        }),
      ),
    ensureActiveKey: (create) =>
      write(() => {
        for (const { value } of keys.getRange()) if (value.state === 'active') return value
        const key = create()
        keys.put(key.kid, key)
        bumpKeysVersion()
        return key
      }),
    deleteKey: (kid) =>
      durable(
        write(() => {
          if (keys.get(kid) === undefined) return false
          keys.remove(kid)
          bumpKeysVersion()
          return true
        }),
      ),
    // read when the change counter moved (a key revoked by authctl counts at once): kept cheap
    keysVersion: () => (readMeta('keys_version') as number | undefined) ?? 0,
    changes,

    async ensureDeviceKey(create) {
      const stored = meta.get('device_key') as string | undefined
      if (stored !== undefined) return stored
      return write(() => {
        const again = meta.get('device_key') as string | undefined
        if (again !== undefined) return again
        const key = create()
        meta.put('device_key', key)
        return key
      })
    },
    async ensureMfaKey(create) {
      const stored = meta.get('mfa_key') as string | undefined
      if (stored !== undefined) return stored
      return write(() => {
        const again = meta.get('mfa_key') as string | undefined
        if (again !== undefined) return again
        const key = create()
        meta.put('mfa_key', key)
        return key
      })
    },
    mfaTokenUsed: (id, expiresAt) => mfaUsed.get([expiresAt, id]) !== undefined,
    finishMfaStep: <T>(token: { id: string; expiresAt: number }, userId: string, now: number, decide: (user: UserRecord | undefined, used: boolean) => MfaStepDecision<T>) =>
      durable(
        write(() => {
          // the records of tokens expired by now: nobody can present those any more
          for (const { key } of mfaUsed.getRange({ end: [now] })) mfaUsed.remove(key)
          const d = decide(tooLong(userId) ? undefined : users.get(userId), mfaUsed.get([token.expiresAt, token.id]) !== undefined)
          if (d.action === 'use') {
            users.put(userId, d.user)
            mfaUsed.put([token.expiresAt, token.id], 1)
          }
          return d.result
        }),
      ),
    addLimitClear: (target, at) =>
      write(() => {
        const kept = (meta.get('limit_clears') as LimitClear[] | undefined) ?? []
        const seq = (kept.at(-1)?.seq ?? 0) + 1
        meta.put('limit_clears', [...kept.slice(-(LIMIT_CLEARS_KEPT - 1)), { seq, target, at }])
        meta.put('limit_clear_seq', seq)
        return seq
      }),
    limitClearsAfter(after) {
      // a number read (as changes() is) unless there is something new
      if (((readMeta('limit_clear_seq') as number | undefined) ?? 0) <= after) return []
      return ((meta.get('limit_clears') as LimitClear[] | undefined) ?? []).filter((c) => c.seq > after)
    },

    schemaVersion: () => (meta.get('schema_version') as number | undefined) ?? SCHEMA_VERSION,

    flushed: async () => {
      await root.flushed
    },
    backup: async (file) => {
      // LMDB copies an environment into a directory, as data.mdb: copy into a private temp
      // directory beside `file`, then move that one file into place (a data directory holding
      // it as data.mdb is the restored store)
      const tmp = mkdtempSync(join(dirname(file), '.authd-backup-'))
      try {
        await root.backup(tmp, true)
        chmodSync(join(tmp, 'data.mdb'), 0o600)
        renameSync(join(tmp, 'data.mdb'), file)
      } finally {
        rmSync(tmp, { recursive: true, force: true })
      }
    },
    close: () => root.close(),
  }
  // TEMPORARY (helper A): the synchronous store above behind the asynchronous seam, until the
  // LMDB store is rewritten to it (helper E replaces this file).
  const ok = <T>(f: () => T): Promise<T> => {
    try {
      return Promise.resolve(f())
    } catch (err) {
      return Promise.reject(err)
    }
  }
  const meRecord = (sid: string): MeRecord | undefined => {
    const s = store.getSession(sid)
    if (s === undefined) return undefined
    const u = store.getUser(s.userId)
    return {
      userId: s.userId,
      expiresAt: s.expiresAt,
      lastUsedAt: s.lastUsedAt,
      user: u === undefined ? undefined : { id: u.id, email: u.email, disabled: u.disabled, mfaEnabled: u.mfa !== undefined },
    }
  }
  const notYet = (what: string): never => {
    throw new StoreError('NOT_BUILT', `${what} is not built yet`)
  }
  return {
    backend: 'lmdb',
    location: opts.path,
    getUser: (id) => ok(() => store.getUser(id)),
    getUserByEmail: (email) => ok(() => store.getUserByEmail(email)),
    listUsers: () => ok(() => store.listUsers()),
    createUser: (user) => store.createUser(user),
    updateUser: (id, change) => store.updateUser(id, change),
    updateUserEndingSessions: (id, change, keep) => store.updateUserEndingSessions(id, change, keep),
    deleteUser: (id) => store.deleteUser(id),
    hashTally: () => ok(() => store.hashTally()),
    getSession: (id) => ok(() => store.getSession(id)),
    getSessions: (ids) => ok(() => store.getSessions(ids)),
    listSessions: (userId) => ok(() => store.listSessions(userId)),
    countSessions: (userId) => ok(() => store.countSessions(userId)),
    sessionEntries: (o) => ok(() => store.sessionEntries(o)),
    createSession: (s, limit) => store.createSession(s, limit),
    refreshSession: (h, decide, family) => store.refreshSession(h, decide, family),
    updateSession: (id, change) => store.updateSession(id, change),
    sweepSessions: (ids, change) => store.sweepSessions(ids, change),
    revokeSession: (id) => store.revokeSession(id),
    revokeUserSessions: (userId) => store.revokeUserSessions(userId),
    revokeAllSessions: () => store.revokeAllSessions(),
    findSessionIdByRefreshHash: (h, family) => ok(() => store.findSessionIdByRefreshHash(h, family)),
    listKeys: () => ok(() => store.listKeys()),
    getKey: (kid) => ok(() => store.getKey(kid)),
    putKey: (key) => store.putKey(key),
    rotateKey: (key, now) => store.rotateKey(key, now),
    ensureActiveKey: (create) => store.ensureActiveKey(create),
    deleteKey: (kid) => store.deleteKey(kid),
    keysVersion: () => ok(() => store.keysVersion()),
    meRead: (sids, known, cached) =>
      ok(() => {
        const version = changes()
        const records = new Map<string, MeRecord | undefined>()
        for (const sid of sids) if (version !== known || !cached.has(sid)) records.set(sid, meRecord(sid))
        return { version, keysVersion: store.keysVersion(), records }
      }),
    ensureDeviceKey: (create) => store.ensureDeviceKey(create),
    ensureMfaKey: (create) => store.ensureMfaKey(create),
    mfaTokenUsed: (id, expiresAt) => ok(() => store.mfaTokenUsed(id, expiresAt)),
    finishMfaStep: (token, userId, now, decide) => store.finishMfaStep(token, userId, now, decide),
    addLimitClear: (target, at) => store.addLimitClear(target, at),
    limitClearsAfter: (after) => ok(() => store.limitClearsAfter(after)),
    appendAudit: async () => {},
    auditEvents: async () => [],
    auditChain: () => ({
      anchor: Promise.resolve<AuditAnchor>({ seq: 0, hash: '0'.repeat(64) }),
      events: (async function* (): AsyncGenerator<AuditEvent> {})(),
    }),
    sweepAudit: async () => 0,
    schemaVersion: () => ok(() => store.schemaVersion()),
    ping: async () => {},
    exportRecords: () => ({
      [Symbol.asyncIterator]: (): AsyncIterator<ExportRecord> => notYet('export'),
    }),
    importRecords: async () => notYet('import'),
    flushed: () => store.flushed(),
    backup: (file) => store.backup(file),
    close: () => store.close(),
  } satisfies Store
}
