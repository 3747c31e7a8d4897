/**
 * What `npm ci --omit=dev` installs is enough to run authd and authctl: every package the
 * sources import (or require: jsonwebtoken is loaded after the listening line) is a runtime
 * dependency, and no runtime dependency is left unused (each one is part of what
 * `npm audit --omit=dev` must answer for).
 */
import t from 'tap'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join } from 'node:path'
import { ROOT } from '../helpers/app.js'

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') || p.endsWith('.tsx') ? [p] : []
  })
}

/** the package a bare specifier names: `@scope/name` or `name` */
const packageOf = (spec: string): string => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/')

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> }
const imported = new Map<string, string>()
for (const file of [...sources(join(ROOT, 'src')), ...readdirSync(join(ROOT, 'bin')).map((f) => join(ROOT, 'bin', f))]) {
  const text = readFileSync(file, 'utf8')
  for (const m of text.matchAll(/(?:^|\s)(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|require\(\s*['"]([^'"]+)['"]\s*\)/gm)) {
    const spec = m[1] ?? m[2] ?? m[3]!
    if (spec.startsWith('.') || spec.startsWith('node:') || builtinModules.includes(spec)) continue
    imported.set(packageOf(spec), file.slice(ROOT.length + 1))
  }
}

t.test('every package the sources import is a runtime dependency', async (t) => {
  t.ok(imported.size >= 8, `${imported.size} packages imported`)
  for (const [name, file] of imported) t.ok(name in pkg.dependencies, `${name} (imported by ${file}) is in dependencies`)
})

t.test('every runtime dependency is imported by the sources', async (t) => {
  for (const name of Object.keys(pkg.dependencies)) {
    if (name.startsWith('@types/')) continue
    t.ok(imported.has(name), `${name} is used at run time`)
  }
})
