/**
 * The tests' TypeScript loader: module hooks that run the project's .ts and .tsx files as ES
 * modules (the package is "type": "module"), transpiled by its own TypeScript compiler with
 * tsconfig.json's options and inline source maps (for stack traces and coverage).
 * Types are checked by `tsc --noEmit` (`npm test`'s type check step), not here.
 *
 * Each file's JavaScript is kept in node_modules/.cache/authd-ts, named by a hash of its path,
 * its text, the compiler's version and options, and this file's own text. The compiler is loaded
 * only when a file is not there, so a test process that finds all it imports in the cache never
 * loads it; `warm()` fills the cache for the whole tree in one process before a run
 * (test/suite.mjs) and removes the entries no file has any more.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { threadId } from 'node:worker_threads'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
export const CACHE_DIR = join(ROOT, 'node_modules', '.cache', 'authd-ts')

let ts
const compiler = () => (ts ??= require('typescript'))

// tsconfig.json's compilerOptions, as tsc reads them (comments allowed), with what this loader
// needs instead: ES modules (the package is "type": "module"), source maps inline, no output files
const tsconfigText = readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')
let tsconfig
try {
  tsconfig = JSON.parse(tsconfigText)
} catch {
  tsconfig = compiler().parseConfigFileTextToJson('tsconfig.json', tsconfigText).config
}
const { outDir, rootDir, noEmit, declaration, sourceMap, incremental, ...fromTsconfig } = tsconfig.compilerOptions
export const compilerOptions = {
  ...fromTsconfig,
  module: 'ESNext',
  moduleResolution: 'Bundler',
  sourceMap: false,
  inlineSourceMap: true,
  inlineSources: true,
}
const tsVersion = JSON.parse(readFileSync(require.resolve('typescript/package.json'), 'utf8')).version
// this file's own text too: a change to the loader is a change to every entry
const optionsKey = JSON.stringify([tsVersion, compilerOptions, readFileSync(fileURLToPath(import.meta.url), 'utf8')])

const TYPESCRIPT = /\.tsx?$/

/** how many files this process has transpiled (the rest came from the cache) */
export let transpiledHere = 0

/** where the JavaScript of `path` with text `source` is kept */
export function cacheFile(path, source) {
  const key = createHash('sha256').update(optionsKey).update('\0').update(path).update('\0').update(source).digest('hex')
  return join(CACHE_DIR, `${key}.js`)
}

/** the JavaScript of the TypeScript file at `path`, whose text is `source` */
export function transpiled(path, source) {
  const file = cacheFile(path, source)
  try {
    return readFileSync(file, 'utf8')
  } catch {}
  const out = compiler().transpileModule(source, { fileName: path, compilerOptions, reportDiagnostics: true })
  // a syntax error fails the import, as tsc would, rather than running the compiler's repair of it
  const [first] = out.diagnostics ?? []
  if (first !== undefined) {
    const at = first.file && first.start !== undefined ? first.file.getLineAndCharacterOfPosition(first.start) : undefined
    const where = at ? `${path}:${at.line + 1}:${at.character + 1}` : path
    throw new SyntaxError(`${where}: ${compiler().flattenDiagnosticMessageText(first.messageText, '\n')} (TS${first.code})`)
  }
  const js = out.outputText
  transpiledHere++
  try {
    // whole or not at all: test processes running at once read and write it
    mkdirSync(CACHE_DIR, { recursive: true })
    const tmp = `${file}.${process.pid}.${threadId}.tmp`
    writeFileSync(tmp, js)
    renameSync(tmp, file)
  } catch {}
  return js
}

/**
 * Transpiles every .ts and .tsx file under `dirs` (paths from the project root; by default
 * tsconfig.json's `include`, the tree tsc checks) that the cache
 * lacks, and removes the cache's files that none of them has any more. Answers how many there
 * are, and how many were transpiled (a file with a syntax error is not).
 */
export function warm(dirs = tsconfig.include) {
  const keep = new Set()
  let files = 0
  const before = transpiledHere
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && !entry.name.startsWith('.')) walk(path)
      } else if (TYPESCRIPT.test(entry.name) && !entry.name.endsWith('.d.ts')) {
        const source = readFileSync(path, 'utf8')
        keep.add(cacheFile(path, source))
        files++
        try {
          transpiled(path, source)
        } catch {
          // a syntax error: the test that imports the file fails on it, saying where
        }
      }
    }
  }
  for (const dir of dirs) walk(join(ROOT, dir))
  let entries = []
  try {
    entries = readdirSync(CACHE_DIR)
  } catch {}
  for (const name of entries) {
    if (!keep.has(join(CACHE_DIR, name))) rmSync(join(CACHE_DIR, name), { force: true })
  }
  return { files, transpiled: transpiledHere - before }
}

/**
 * The TypeScript files an import names by their .js twin (`./x.js` for ./x.ts or ./x.tsx,
 * NodeNext's rule): relative, absolute and file: specifiers, a query or fragment kept (tap's mocks
 * add one). Bare (package) specifiers have none.
 */
export function typescriptTwins(specifier) {
  if (!/^(\.{1,2}\/|\/|file:)/.test(specifier)) return []
  const [, path, rest] = /^([^?#]*)(.*)$/s.exec(specifier)
  if (!path.endsWith('.js')) return []
  return ['.ts', '.tsx'].map((ext) => path.slice(0, -3) + ext + rest)
}

export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context)
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error
    for (const twin of typescriptTwins(specifier)) {
      try {
        return await nextResolve(twin, context)
      } catch {}
    }
    throw error
  }
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !TYPESCRIPT.test(new URL(url).pathname)) return nextLoad(url, context)
  const path = fileURLToPath(url)
  return { format: 'module', source: transpiled(path, readFileSync(path, 'utf8')), shortCircuit: true }
}
