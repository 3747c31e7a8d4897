import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parse, TomlError } from 'smol-toml'
import { configError } from './config-error.js'
import { flattenTable, type Layer } from './layer.js'

/**
 * Which config file to read: `--config F`, else AUTHD_CONFIG, else `<cwd>/auth.toml` if it
 * exists, else none. Relative paths resolve against cwd.
 */
export function locateConfigFile(flag: string | undefined, envValue: string | undefined, cwd: string): string | null {
  const [given, name] = flag !== undefined ? [flag, '--config'] : [envValue, 'AUTHD_CONFIG']
  if (given !== undefined) {
    if (given === '') throw configError(`config: ${name} must be a file path (got "")`, name)
    return resolve(cwd, given)
  }
  const implicit = resolve(cwd, 'auth.toml')
  return existsSync(implicit) ? implicit : null
}

export function readConfigFile(file: string): Layer {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message
    throw configError(`config: cannot read config file ${file} (${reason})`)
  }
  let table: Record<string, unknown>
  try {
    table = parse(text)
  } catch (error) {
    if (!(error instanceof TomlError)) throw error
    // smol-toml's message carries a multi-line code excerpt; errors are printed as one line.
    const reason = error.message.split('\n')[0].replace(/:$/, '')
    throw configError(`config: cannot parse config file ${file} at line ${error.line}, column ${error.column}: ${reason}`)
  }
  return flattenTable(table, `in ${file}`)
}
