/**
 * The layers of src/ (README, "Development": the code reads top to bottom, and no module imports
 * from a layer above it): each directory imports only from the ones this table lets it. authctl
 * (src/cli, src/tui) never loads the HTTP layer or the daemon: it works on the store directly.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import t from 'tap'
import { ROOT } from './helpers/app.js'

const SRC = join(ROOT, 'src')
/** what every layer may use: the error registry, the exit codes, the version */
const BASE = ['errors', 'exit-codes', 'version']
const MAY_IMPORT: Record<string, string[]> = {
  errors: [],
  'exit-codes': ['errors'],
  version: [],
  // the entry points' (bin/) handling of a reader that closes the pipe early: imports nothing
  'closed-pipe': [],
  config: BASE,
  store: [...BASE, 'config'],
  core: [...BASE, 'config', 'store'],
  client: BASE,
  http: [...BASE, 'config', 'core'],
  daemon: [...BASE, 'config', 'store', 'core', 'http'],
  tui: [...BASE, 'config', 'store', 'core', 'client'],
  cli: [...BASE, 'config', 'store', 'core', 'client', 'tui'],
}

/** the layer of a path under src/: its top directory, or its file name without the extension */
const layerOf = (path: string): string => relative(SRC, path).split('/')[0]!.replace(/\.tsx?$|\.js$/, '')

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    return statSync(p).isDirectory() ? sources(p) : /\.tsx?$/.test(name) ? [p] : []
  })
}

/** the layers `file` imports from, static and dynamic imports alike */
function importsOf(file: string): Array<{ spec: string; layer: string }> {
  const text = readFileSync(file, 'utf8')
  return [...text.matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+)'/g)].map((m) => ({ spec: m[1]!, layer: layerOf(resolve(dirname(file), m[1]!)) }))
}

t.test('each layer of src/ imports only from the layers below it', async (t) => {
  const files = sources(SRC)
  t.ok(files.length > 100, `${files.length} source files`)
  for (const file of files) {
    const own = layerOf(file)
    t.ok(own in MAY_IMPORT, `${relative(ROOT, file)}: a layer of the table`)
    for (const { spec, layer } of importsOf(file)) {
      if (layer === own) continue
      t.ok(MAY_IMPORT[own]?.includes(layer), `${relative(ROOT, file)} imports ${spec} (${own} → ${layer})`)
    }
  }
})
