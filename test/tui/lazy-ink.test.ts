/**
 * Ink and React are loaded by `authctl tui` only: every other command starts without paying for
 * them. A module-resolution hook in the child process records every ink/react module resolved.
 */
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { AUTHCTL_BIN, ROOT } from '../helpers/app.js'

const HOOKS = `
import { appendFileSync } from 'node:fs'
let log
export function initialize(data) { log = data.log }
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context)
  if (/\\/node_modules\\/(ink|react|@inkjs\\/ui|react-reconciler)\\//.test(r.url)) appendFileSync(log, r.url + '\\n')
  return r
}
`

function registerScript(hooks: string, log: string): string {
  return `import { register } from 'node:module'\nregister(${JSON.stringify(pathToFileURL(hooks).href)}, { data: { log: ${JSON.stringify(log)} } })\n`
}

async function loadedBy(dir: string, name: string, args: string[], input = ''): Promise<{ code: number | null; modules: string[] }> {
  const hooks = join(dir, 'hooks.mjs')
  const log = join(dir, `${name}.log`)
  const register = join(dir, `${name}-register.mjs`)
  writeFileSync(hooks, HOOKS)
  writeFileSync(log, '')
  writeFileSync(register, registerScript(hooks, log))
  const code = await new Promise<number | null>((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', pathToFileURL(register).href, AUTHCTL_BIN, ...args], {
      stdio: ['pipe', 'ignore', 'ignore'],
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    })
    p.on('error', reject)
    p.on('exit', resolve)
    p.stdin.end(input)
  })
  return { code, modules: readFileSync(log, 'utf8').split('\n').filter((l) => l !== '') }
}

t.test('only authctl tui loads Ink and React', async (t) => {
  t.ok(existsSync(join(ROOT, 'dist/cli/commands/tui.js')), 'dist/ is built (npm run build)')
  const dir = t.testdir()
  const data = join(dir, 'data')
  const add = await loadedBy(dir, 'add', ['user', 'add', 'lazy@example.com', '--password-stdin', '--data', data], 'Tr0ub4dor&3-lazy\n')
  t.equal(add.code, 0)
  t.same(add.modules, [], 'user add')
  for (const [name, args] of [
    ['help', ['--help']],
    ['list', ['user', 'list', '--data', data]],
    ['keys', ['keys', 'list', '--data', data]],
  ] as const) {
    const r = await loadedBy(dir, name, [...args])
    t.equal(r.code, 0, name)
    t.same(r.modules, [], `${name} loads no ink or react module`)
  }
  // the hook does see them when they load: tui (refused here, without a terminal) has imported Ink
  const tui = await loadedBy(dir, 'tui', ['tui', '--data', data])
  t.equal(tui.code, 2)
  t.ok(tui.modules.some((m) => m.includes('/node_modules/ink/')), 'tui loads ink')
  t.ok(tui.modules.some((m) => m.includes('/node_modules/react/')), 'tui loads react')
})
