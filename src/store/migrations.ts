/**
 * Store schema versions. Each migration moves the store from version i to i + 1 inside one write
 * transaction; they run in order on open (by authd and by authctl alike). A store written by a
 * newer authd is refused rather than guessed at.
 */
export const SCHEMA_VERSION = 1

export interface MigrationTarget {
  version(): number
  setVersion(v: number): Promise<boolean> | void
  transaction<T>(fn: () => T): Promise<T>
  /** a brand-new store: stamp it with the current version, nothing to migrate */
  isEmpty(): boolean
}

/** migrations[i] upgrades a store at version i to i + 1 (0 is a store from before versioning) */
const migrations: Array<(target: MigrationTarget) => void> = [
  // 0 → 1: the first schema; nothing to convert
  () => {},
]

export class SchemaError extends Error {
  readonly code = 'SCHEMA_TOO_NEW'
}

export async function migrate(target: MigrationTarget): Promise<void> {
  if (target.isEmpty()) {
    await target.transaction(() => target.setVersion(SCHEMA_VERSION))
    return
  }
  const from = target.version()
  if (from > SCHEMA_VERSION) {
    throw new SchemaError(
      `the store was written by a newer authd (schema ${from}; this version understands up to ${SCHEMA_VERSION}): upgrade authd or restore a backup`,
    )
  }
  for (let v = from; v < SCHEMA_VERSION; v++) {
    await target.transaction(() => {
      // re-check inside the transaction: another process may have migrated meanwhile
      if (target.version() !== v) return
      migrations[v]!(target)
      target.setVersion(v + 1)
    })
  }
}
