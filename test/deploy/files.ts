/** Readers for the deployment files in config/, shared by the deploy tests. */
import { readFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { parse as parseToml } from 'smol-toml'
import { ROOT } from '../helpers/app.js'

export const configFile = (name: string): string => join(ROOT, 'config', name)

/** A systemd unit: section → list of [key, value] in order (keys may repeat). */
export type Unit = Record<string, Array<[string, string]>>

export function parseUnit(text: string): Unit {
  const unit: Unit = {}
  let section: string | undefined
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const head = /^\[(\w+)\]$/.exec(line)
    if (head !== null) {
      section = head[1]!
      unit[section] ??= []
      continue
    }
    const kv = /^([A-Za-z]+)=(.*)$/.exec(line)
    if (kv === null || section === undefined) throw new Error(`unit file line ${i + 1} is not "Key=value" inside a section: ${raw}`)
    unit[section]!.push([kv[1]!, kv[2]!])
  }
  return unit
}

/** every value of a key in a section */
export const values = (unit: Unit, section: string, key: string): string[] => (unit[section] ?? []).filter(([k]) => k === key).map(([, v]) => v)
/** the one value of a key (undefined if absent; the last one wins, as in systemd) */
export const value = (unit: Unit, section: string, key: string): string | undefined => values(unit, section, key).at(-1)

export const readUnit = (): Unit => parseUnit(readFileSync(configFile('authd.service'), 'utf8'))

/** config/auth.toml as written */
export const readVmConfig = (): Record<string, any> => parseToml(readFileSync(configFile('auth.toml'), 'utf8')) as Record<string, any>

/** Whether a program is on PATH */
export function installed(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** An nginx directive: name, arguments, and a block if it has one. */
export interface NginxDirective {
  name: string
  args: string[]
  block?: NginxDirective[]
}

/** Parses nginx configuration syntax (comments, quotes, blocks); throws on unbalanced input. */
export function parseNginx(text: string): NginxDirective[] {
  const tokens: string[] = []
  const re = /#[^\n]*|"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([{};])|([^\s{};"'#]+)/g
  for (const m of text.matchAll(re)) {
    if (m[0].startsWith('#')) continue
    tokens.push(m[1] ?? m[2] ?? m[3] ?? m[4]!)
  }
  let i = 0
  const block = (depth: number): NginxDirective[] => {
    const out: NginxDirective[] = []
    let words: string[] = []
    while (i < tokens.length) {
      const tok = tokens[i++]!
      if (tok === ';') {
        if (words.length === 0) throw new Error('nginx: empty directive')
        out.push({ name: words[0]!, args: words.slice(1) })
        words = []
      } else if (tok === '{') {
        out.push({ name: words[0]!, args: words.slice(1), block: block(depth + 1) })
        words = []
      } else if (tok === '}') {
        if (depth === 0 || words.length > 0) throw new Error('nginx: unbalanced "}" or a directive without ";"')
        return out
      } else words.push(tok)
    }
    if (depth !== 0 || words.length > 0) throw new Error('nginx: unexpected end of file')
    return out
  }
  return block(0)
}

/** A Caddyfile block: the tokens of each line, and nested blocks. */
export interface CaddyLine {
  tokens: string[]
  block?: CaddyLine[]
}

/** Parses Caddyfile syntax (lines of tokens, `{ }` blocks, comments); throws on unbalanced input. */
export function parseCaddyfile(text: string): CaddyLine[] {
  const lines = text
    .split('\n')
    .map((l) => l.replace(/(^|\s)#.*$/, '').trim())
    .filter((l) => l !== '')
  let i = 0
  const block = (depth: number): CaddyLine[] => {
    const out: CaddyLine[] = []
    while (i < lines.length) {
      const line = lines[i++]!
      if (line === '}') {
        if (depth === 0) throw new Error('Caddyfile: unbalanced "}"')
        return out
      }
      const tokens = [...line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!)
      if (tokens.at(-1) === '{') out.push({ tokens: tokens.slice(0, -1), block: block(depth + 1) })
      else out.push({ tokens })
    }
    if (depth !== 0) throw new Error('Caddyfile: unexpected end of file')
    return out
  }
  return block(0)
}
