import { readFileSync } from 'node:fs'
import t from 'tap'
import { httpErrors } from '../src/errors.js'

// The README's error table is the reference operators read: it must list exactly the registry.
t.test('the README error table lists every HTTP error of the registry with its status and message', async (t) => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  const table = /<!-- error-table:start -->([\s\S]*?)<!-- error-table:end -->/.exec(readme)
  t.ok(table, 'README has the error table')
  const rows = [...table![1]!.matchAll(/^\| (\d{3}) \| `([^`]+)` \|/gm)].map((m) => `${m[1]} ${m[2]}`)
  const registry = Object.values(httpErrors).map((e) => `${e.status} ${e.message.replace(/\{\w+\}/g, 'N')}`)
  t.same([...rows].sort(), [...registry].sort())
})
