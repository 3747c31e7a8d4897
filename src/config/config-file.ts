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

/** why a config file could not be read, in words (the code in brackets for any other) */
const READ_FAILURES: Readonly<Record<string, string>> = {
  ENOENT: 'no such file',
  EISDIR: 'it is a directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ELOOP: 'its symbolic links go round in a loop',
  ENAMETOOLONG: 'the name is too long',
}

export function readConfigFile(file: string): Layer {
  let bytes: Buffer
  try {
    bytes = readFileSync(file)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const reason = (code !== undefined && READ_FAILURES[code]) || code || (error as Error).message
    throw configError(`config: cannot read config file ${file} (${reason})`)
  }
  let text: string
  try {
    // TOML is UTF-8: a file in another encoding would have its bytes replaced without a word
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw configError(`config: config file ${file} is not UTF-8 text (TOML files are UTF-8)`)
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
