/**
 * Module hooks for running several test files in one test process (test/helpers/file-group.ts):
 * a test file imported with `?authd-test-file=N` gets, for its `import t from 'tap'`, the subtest
 * the group gave it (number N) instead of the process's root test. Everything else it imports,
 * its helpers and the sources among them, is the process's one copy.
 */
const FILE = /[?&]authd-test-file=(\d+)/
const SCHEME = 'authd-test-file:'

export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'tap' && context.parentURL !== undefined) {
    const n = FILE.exec(context.parentURL)?.[1]
    if (n !== undefined) return { url: `${SCHEME}${n}`, format: 'module', shortCircuit: true }
  }
  return nextResolve(specifier, context)
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith(SCHEME)) return nextLoad(url, context)
  const n = JSON.stringify(url.slice(SCHEME.length))
  return { format: 'module', source: `export default globalThis[Symbol.for('authd.test-file')](${n})\n`, shortCircuit: true }
}
