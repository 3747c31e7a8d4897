import { domainToASCII } from 'node:url'
import { AppError } from '../errors.js'
import { hashParamsKey, type UserRecord } from './store.js'

/**
 * Store schema versions. Each migration moves the store from version i to i + 1 inside one write
 * transaction; they run in order on open (by authd and by authctl alike). A store written by a
 * newer authd is refused rather than guessed at.
 */

export interface MigrationTarget {
  version(): number
  setVersion(v: number): Promise<boolean> | void
  transaction<T>(fn: () => T): Promise<T>
  /** a brand-new store: stamp it with the current version, nothing to migrate */
  isEmpty(): boolean
  // the records, read and written inside the migration's transaction
  users(): Iterable<UserRecord>
  /** writes a user record; its email index entry is the migration's to keep */
  putUser(user: UserRecord): void
  /** the email index: the id of the user stored under `email` */
  emailOwner(email: string): string | undefined
  putEmail(email: string, userId: string): void
  removeEmail(email: string): void
  /** the count of stored password hashes per parameter set (Store.hashTally) */
  putHashTally(tally: Record<string, number>): void
}

/** Runs inside the write transaction that also stamps the new version. */
export type Migration = (target: MigrationTarget) => void

/** migrations[i] upgrades a store at version i to i + 1 (0 is a store from before versioning) */
const migrations: readonly Migration[] = [
  // 0 → 1: the first schema; nothing to convert
  () => {},
  // 1 → 2: emails are stored with their domain in ASCII (UTS #46 ToASCII)
  asciiDomains,
  // 2 → 3: the count of password hashes per parameter set, kept with every write from now on
  (target) => {
    const tally: Record<string, number> = {}
    for (const u of target.users()) {
      const key = hashParamsKey(u.passwordHash)
      tally[key] = (tally[key] ?? 0) + 1
    }
    target.putHashTally(tally)
  },
]

/**
 * Emails used to be stored with their domain as typed (after NFKC and lower-casing); they are
 * now stored, and looked up, with the domain in its ASCII form, so `ann@bücher.example` is
 * re-keyed to `ann@xn--bcher-kva.example` or its owner could no longer sign in. A domain ToASCII
 * refuses stays as it was (its lookups keep it too). Frozen here rather than calling the core's
 * canonicalEmail: a migration converts what one version wrote to what the next reads, for ever.
 *
 * Where two users meet on one ASCII form (a look-alike registered before this version: the
 * U-label twin of an A-label address, a zero-width character inside a domain), the one already
 * stored under it keeps it, else the one created first; the other keeps its old address, listed
 * by `authctl user list` and reachable by id, for the admin to remove or keep.
 */
function asciiDomains(target: MigrationTarget): void {
  const users = [...target.users()].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
  for (const u of users) {
    const at = u.email.lastIndexOf('@')
    if (at < 0) continue
    const domain = u.email.slice(at + 1)
    const ascii = domain === '' ? '' : domainToASCII(domain)
    if (ascii === '' || ascii === domain) continue
    const email = u.email.slice(0, at + 1) + ascii
    if (target.emailOwner(email) !== undefined) continue
    if (target.emailOwner(u.email) === u.id) target.removeEmail(u.email)
    target.putEmail(email, u.id)
    target.putUser({ ...u, email })
  }
}

/** The schema this build writes: one more than the last migration's source version. */
export const SCHEMA_VERSION = migrations.length

/** Brings the store to the latest version of `steps` (the real list unless a test passes one). */
export async function migrate(target: MigrationTarget, steps: readonly Migration[] = migrations): Promise<void> {
  const latest = steps.length
  if (target.isEmpty()) {
    await target.transaction(() => target.setVersion(latest))
    return
  }
  const from = target.version()
  if (from > latest) {
    throw new AppError('SCHEMA_TOO_NEW', { params: { found: from, latest } })
  }
  for (let v = from; v < latest; v++) {
    await target.transaction(() => {
      // re-check inside the transaction: another process may have migrated meanwhile
      if (target.version() !== v) return
      steps[v]!(target)
      target.setVersion(v + 1)
    })
  }
}
