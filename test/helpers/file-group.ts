/**
 * Several test files in one test process (the fast part's groups, written by test/suite.mjs): each
 * file runs as a subtest of the process's root test, named by its path, one after the other, and
 * its `import t from 'tap'` is that subtest (tap-typescript/files.mjs), so its tests, teardowns and
 * t.testdir() directories are its own. What it imports besides, its helpers and the sources, is the
 * process's one copy: a test must not count on a module fresh for it, nor leave a change to the
 * process (an environment variable, a listener) behind. A file takes its t as tap's default export
 * (`import t from 'tap'`, as all of ours do); a named import of one of tap's values fails to load
 * in a group, rather than reach the root test.
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import t, { type Test } from 'tap'

/** the file subtests, by the number their files are imported with */
const subtests = new Map<string, Test>()
Object.assign(globalThis, {
  [Symbol.for('authd.test-file')]: (n: string): Test => {
    const subtest = subtests.get(n)
    if (subtest === undefined) throw new Error(`a test file numbered ${n} was imported outside its group`)
    return subtest
  },
})

/** Runs the test files at `paths` (from the working directory, as tap names them, or absolute), in order. */
export function runFiles(paths: string[]): void {
  paths.forEach((path, i) => {
    t.test(path, async (file) => {
      subtests.set(String(i), file)
      const url = pathToFileURL(resolve(path))
      url.searchParams.set('authd-test-file', String(i))
      await import(url.href)
    })
  })
}
