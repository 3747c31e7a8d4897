/** The permission bits of what a store leaves in its data directory, for the tests of file modes. */
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'

/** every file under `dir` (recursively) with its permission bits in octal */
export function modes(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue
    const file = join(entry.parentPath, entry.name)
    out[file.slice(dir.length + 1)] = (statSync(file).mode & 0o777).toString(8)
  }
  return out
}

/** `dir` holds exactly the files `expected`, each 0600, and is itself 0700 */
export function ownerOnly(t: Test, dir: string, expected: string[]): void {
  const found = modes(dir)
  t.same(Object.keys(found).sort(), [...expected].sort(), 'the files in the data directory')
  for (const [file, mode] of Object.entries(found)) t.equal(mode, '600', `${file} is 0600`)
  t.equal((statSync(dir).mode & 0o777).toString(8), '700', 'the directory is 0700')
}
