import { configError, showValue } from './config-error.js'
import { isKeyPath, isTablePath, type KeyPath } from './keys.js'

/** A value and where it came from, as a phrase for messages: "in /etc/authd/auth.toml",
 * "from AUTHD_SERVER_PORT", "from --port", "by default". */
export interface Entry {
  value: unknown
  source: string
}

/** One source of settings (defaults, file, environment or flags), keyed by dotted path. */
export type Layer = Map<KeyPath, Entry>

export function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date)
}

/** Flattens a TOML-shaped table into a layer; an unknown key at any depth is a CONFIG_INVALID error. */
export function flattenTable(table: object, source: string): Layer {
  const layer: Layer = new Map()
  const walk = (node: object, prefix: string): void => {
    for (const [key, value] of Object.entries(node)) {
      // a quoted key with a dot in it ("server.port" = 1) is one name, not a table and a key:
      // read as a path it would be taken for server.port, or silently lose to it
      if (key.includes('.')) {
        const quoted = JSON.stringify(key)
        throw configError(`config: unknown key ${prefix === '' ? quoted : `${prefix}.${quoted}`} (a quoted name with a dot is one key; got ${showValue(value)} ${source})`, prefix === '' ? key : `${prefix}.${key}`)
      }
      const path = prefix === '' ? key : `${prefix}.${key}`
      if (isKeyPath(path)) {
        layer.set(path, { value, source })
      } else if (isTablePath(path)) {
        if (!isTable(value)) throw configError(`config: ${path} must be a table (got ${showValue(value)} ${source})`, path)
        walk(value, path)
      } else {
        throw configError(`config: unknown key "${path}" (got ${showValue(value)} ${source})`, path)
      }
    }
  }
  walk(table, '')
  return layer
}
