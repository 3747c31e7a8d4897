/**
 * A full disk, for tests of what a refused write does: a small tmpfs, mounted for one test and
 * filled up on demand. Only root on Linux can mount one.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'

/** why a small tmpfs cannot be mounted here, or false */
export function noSmallTmpfs(): string | false {
  if (process.platform !== 'linux') return 'needs Linux, to mount a small tmpfs'
  if (process.getuid?.() !== 0) return 'needs root, to mount a small tmpfs as the full disk'
  return false
}

/**
 * A tmpfs of `size` (mount's syntax: "400k", "1m") mounted for the test, outside its directory
 * (which tap removes whether or not this is unmounted yet); unmounted and removed when the test
 * ends, after `beforeUnmount` (a daemon holding files in it must end first). Undefined, with the
 * test planned empty and the reason given, when the mount fails.
 */
export function smallTmpfs(t: Test, size: string, beforeUnmount?: () => Promise<unknown>): string | undefined {
  const mnt = mkdtempSync(join(tmpdir(), 'authd-full-disk-'))
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mnt], { encoding: 'utf8' })
  t.teardown(async () => {
    await beforeUnmount?.()
    if (mount.status === 0) spawnSync('umount', [mnt])
    rmSync(mnt, { recursive: true, force: true })
  })
  if (mount.status === 0) return mnt
  t.plan(0, `cannot mount a tmpfs here: ${mount.stderr.trim()}`)
  return undefined
}

/** the rest of the tmpfs at `mnt` taken by one file (removed to give the room back); its path */
export function fillUp(t: Test, mnt: string): string {
  const filler = join(mnt, 'filler')
  const dd = spawnSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k'], { encoding: 'utf8' })
  t.not(dd.status, 0, 'dd filled the tmpfs')
  return filler
}
