import { parse } from 'smol-toml'
import { configError, showValue } from './config-error.js'
import { envName, KEYS, type KeyKind, type KeyPath } from './keys.js'
import type { Layer } from './layer.js'

/** Read elsewhere (config-file.ts) or an alias, so not config keys themselves. */
const SPECIAL = new Set(['AUTHD_CONFIG', 'AUTHD_DATA'])

/**
 * The AUTHD_* variables as a layer. Any other AUTHD_* name is an error, so a typo is never
 * silently ignored. AUTHD_DATA is the documented alias of AUTHD_STORE_PATH.
 */
export function readEnv(env: Record<string, string | undefined>): Layer {
  const byName = new Map<string, KeyPath>(Object.keys(KEYS).map((path) => [envName(path as KeyPath), path as KeyPath]))
  const layer: Layer = new Map()
  for (const [name, text] of Object.entries(env)) {
    if (!name.startsWith('AUTHD_') || text === undefined || SPECIAL.has(name)) continue
    const path = byName.get(name)
    if (path === undefined) throw configError(`config: unknown environment variable ${name} (got ${showValue(text)})`, name)
    const source = `from ${name}`
    layer.set(path, { value: fromEnvText(text, KEYS[path], path, source), source })
  }
  const data = env.AUTHD_DATA
  if (data !== undefined) {
    const other = layer.get('store.path')
    if (other !== undefined && other.value !== data) {
      throw configError(`config: AUTHD_DATA and AUTHD_STORE_PATH disagree (got ${showValue(data)} and ${showValue(other.value)})`, 'AUTHD_DATA')
    }
    layer.set('store.path', { value: data, source: 'from AUTHD_DATA' })
  }
  return layer
}

/**
 * An environment string as the value a TOML file would hold. Text that does not fit the kind
 * stays a string, so validation reports it with the key and the text as given.
 */
export function fromEnvText(text: string, kind: KeyKind, path: string, source: string): unknown {
  switch (kind) {
    case 'integer':
      return /^[+-]?\d+$/.test(text) ? Number(text) : text
    case 'boolean':
      return text === 'true' ? true : text === 'false' ? false : text
    case 'list':
      return parseList(text, path, source)
    default:
      return text
  }
}

/** `a, b` (comma-separated) or a TOML/JSON array like `["a", "b"]`; empty text is an empty list. */
function parseList(text: string, path: string, source: string): unknown {
  const trimmed = text.trim()
  if (!trimmed.startsWith('[')) {
    return trimmed === '' ? [] : trimmed.split(',').map((item) => item.trim()).filter((item) => item !== '')
  }
  try {
    return parse(`value = ${trimmed}`).value
  } catch {
    throw configError(`config: ${path} must be a list of strings (got ${showValue(text)} ${source})`, path)
  }
}
