import { locateConfigFile, readConfigFile } from './config-file.js'
import { builtInDefaults } from './defaults.js'
import { fromEnvText, readEnv } from './env.js'
import { flattenTable, type Layer } from './layer.js'
import type { Config } from './types.js'
import { buildConfig } from './validate.js'

/** Command-line flags shared by authd and authctl; absent means not given. */
export interface ConfigFlags {
  config?: string
  data?: string
  host?: string
  port?: string | number
  dev?: boolean
}

export interface LoadConfigInput {
  flags: ConfigFlags
  /** the process environment (only AUTHD_* names are read) */
  env: Record<string, string | undefined>
  /** relative paths (config file, store.path) resolve against this */
  cwd: string
}

/**
 * Resolves the config: flag > environment > config file > built-in default, then validates it
 * once. Returns the typed Config and the config file read (absolute path), or null if none.
 * Throws an AppError CONFIG_INVALID naming the key and value, or the file.
 */
export function loadConfig(input: LoadConfigInput): { config: Config; file: string | null } {
  const { flags, env, cwd } = input
  const dev = flags.dev === true
  const file = locateConfigFile(flags.config, env.AUTHD_CONFIG, cwd)
  const layers: Layer[] = [
    flattenTable(builtInDefaults({ dev }), dev ? 'by default with --dev' : 'by default'),
    file === null ? new Map() : readConfigFile(file),
    readEnv(env),
    readFlags(flags),
  ]
  const merged: Layer = new Map()
  for (const layer of layers) for (const [path, entry] of layer) merged.set(path, entry)
  return { config: buildConfig(merged, { dev, cwd }), file }
}

function readFlags(flags: ConfigFlags): Layer {
  const layer: Layer = new Map()
  if (flags.data !== undefined) layer.set('store.path', { value: flags.data, source: 'from --data' })
  if (flags.host !== undefined) layer.set('server.host', { value: flags.host, source: 'from --host' })
  if (flags.port !== undefined) {
    const value = typeof flags.port === 'string' ? fromEnvText(flags.port, 'integer', 'server.port', 'from --port') : flags.port
    layer.set('server.port', { value, source: 'from --port' })
  }
  return layer
}
