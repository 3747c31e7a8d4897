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
}

/** Runs inside the write transaction that also stamps the new version. */
export type Migration = (target: MigrationTarget) => void

/** migrations[i] upgrades a store at version i to i + 1 (0 is a store from before versioning) */
const migrations: readonly Migration[] = [
  // 0 → 1: the first schema; nothing to convert
  () => {},
]

/** The schema this build writes: one more than the last migration's source version. */
export const SCHEMA_VERSION = migrations.length

export class SchemaError extends Error {
  readonly code = 'SCHEMA_TOO_NEW'
}

/** Brings the store to the latest version of `steps` (the real list unless a test passes one). */
export async function migrate(target: MigrationTarget, steps: readonly Migration[] = migrations): Promise<void> {
  const latest = steps.length
  if (target.isEmpty()) {
    await target.transaction(() => target.setVersion(latest))
    return
  }
  const from = target.version()
  if (from > latest) {
    throw new SchemaError(
      `the store was written by a newer authd (schema ${from}; this version understands up to ${latest}): upgrade authd or restore a backup`,
    )
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
