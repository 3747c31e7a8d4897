/**
 * docs/api.md (the API reference) and docs/openapi.yaml (its machine-readable twin) against the
 * error registry, both ways: every client-visible status and message of the registry is in
 * api.md, every endpoint of api.md lists exactly the statuses and messages of its OpenAPI
 * operation (so each registered error is in the OpenAPI responses of the endpoints that give it),
 * and neither document names a status and message the registry lacks. And api.md says which
 * answers record which audit events, pointing to the README for the rest.
 */
import { readFileSync } from 'node:fs'
import t, { type Test } from 'tap'
import YAML from 'yaml'
import { AUDIT_EVENTS } from '../../src/core/audit-events.js'
import { errorRegistry } from '../../src/errors.js'

type Obj = Record<string, any>

const apiMd = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8')
const openapi = YAML.parse(readFileSync(new URL('../../docs/openapi.yaml', import.meta.url), 'utf8')) as Obj

/** a message as the documents write it: a template's `{min}` is N */
const asWritten = (message: string): string => message.replace(/\{\w+\}/g, 'N')

/** `status message` of every client-visible registry entry (CLI-only codes have no status) */
const registry = new Set(
  Object.values(errorRegistry as Record<string, { status?: number; message: string }>)
    .filter((e) => typeof e.status === 'number')
    .map((e) => `${e.status} ${asWritten(e.message)}`),
)

// ---------------------------------------------------------------------------------- api.md

interface Row {
  status: number
  message: string | undefined
}

/** The rows of the first `| status | message | when |` table in `text`. */
function tableRows(text: string): Row[] {
  const table = /^\| status \| message \| when \|\n\|---\|---\|---\|\n((?:\|.*\n?)*)/m.exec(text)
  if (table === null) return []
  return table[1]!
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .map((l) => {
      const m = /^\| (\d{3}) \| (?:`([^`]+)`)? *\|/.exec(l)
      if (m === null) throw new Error(`docs/api.md: a table row that is not "| status | \`message\` | when |": ${l}`)
      return { status: Number(m[1]), message: m[2] }
    })
}

/** api.md's sections: `### \`METHOD /path\`` (path parameters as `:id`) → its table's rows */
const endpoints = new Map<string, Row[]>()
for (const m of apiMd.matchAll(/^### `([A-Z]+) (\S+)`[^\n]*\n([\s\S]*?)(?=^##)/gm)) {
  const key = `${m[1]} ${m[2]!.replace(/:(\w+)/g, '{$1}')}`
  endpoints.set(key, tableRows(m[3]!))
}
const anyPath = tableRows(/^## Any path\n([\s\S]*?)^## /m.exec(apiMd)?.[1] ?? '')
/** every row of every status table in api.md */
const allRows = [...[...endpoints.values()].flat(), ...anyPath]
const pair = (r: Row): string => `${r.status} ${r.message}`

t.test('api.md has its sections, each endpoint with its table of statuses', async (t) => {
  t.ok(endpoints.size >= 15, `${endpoints.size} endpoints`)
  for (const [key, rows] of endpoints) t.ok(rows.length > 0, `${key} has a status table`)
  t.ok(anyPath.length > 0, 'the "Any path" table')
  for (const heading of ['Every response', 'Any path', 'Endpoints', 'Cookies', 'Tokens', 'Rate limits', 'Audit events', 'Limits']) t.match(apiMd, new RegExp(`^## ${heading}`, 'm'), heading)
})

t.test('every status and message in api.md is a registered error, and every registered error is in api.md', async (t) => {
  const named = new Set(allRows.filter((r) => r.message !== undefined).map(pair))
  for (const r of allRows) {
    if (r.status >= 400) t.ok(r.message !== undefined, `a ${r.status} row names its message`)
    else t.equal(r.message, undefined, `a ${r.status} row names no error message`)
  }
  t.same([...named].filter((p) => !registry.has(p)).sort(), [], 'no table names a message the registry lacks')
  t.same([...registry].filter((p) => !named.has(p)).sort(), [], 'every registered error has its row')
  // prose too: a status followed by a message in backquotes ("answers 401 `Invalid code`")
  const prose = [...apiMd.matchAll(/\b([1-5]\d\d) `([^`]+)`/g)].map((m) => `${m[1]} ${m[2]}`)
  t.ok(prose.length > 10, `${prose.length} statuses with a message in the prose`)
  t.same(prose.filter((p) => !registry.has(p)), [], 'the prose names no message the registry lacks')
})

// ---------------------------------------------------------------------------------- OpenAPI

/** a response object, following `$ref`s into components.responses */
const deref = (o: Obj): Obj => {
  if (typeof o?.$ref !== 'string') return o
  const name = /^#\/components\/responses\/(\w+)$/.exec(o.$ref as string)?.[1]
  if (name === undefined) throw new Error(`unexpected $ref ${o.$ref}`)
  return deref(openapi.components.responses[name] as Obj)
}

/** the messages a failure response declares: `const`/`enum` values, and `pattern`s for templates */
function declared(response: Obj): { messages: string[]; patterns: RegExp[] } {
  const messages: string[] = []
  const patterns: RegExp[] = []
  const m = (Object.values((deref(response).content ?? {}) as Obj)[0] as Obj | undefined)?.schema?.properties?.message as Obj | undefined
  if (m === undefined) return { messages, patterns }
  for (const alt of [m, ...((m.anyOf ?? []) as Obj[])]) {
    if (typeof alt.const === 'string') messages.push(alt.const)
    for (const v of alt.enum ?? []) messages.push(v as string)
    if (typeof alt.pattern === 'string') patterns.push(new RegExp(alt.pattern))
  }
  return { messages, patterns }
}

/** the documents' messages with `N` in them, as a server would fill them in */
const filled = (message: string): string => message.replace(/\bN\b/g, '8')

/** Checks that an api.md table and a set of OpenAPI responses (status → response) say the same. */
function sameAnswers(t: Test, what: string, rows: Row[], responses: Record<string, Obj>): void {
  t.same([...new Set(rows.map((r) => r.status))].sort(), Object.keys(responses).map(Number).sort(), `${what}: the same statuses`)
  for (const [status, response] of Object.entries(responses)) {
    if (Number(status) < 400) continue
    const { messages, patterns } = declared(response)
    const written = rows.filter((r) => r.status === Number(status)).map((r) => r.message!)
    // a message of api.md is an OpenAPI const, or fills one of its patterns
    const covered = (m: string): boolean => messages.includes(m) || patterns.some((p) => p.test(filled(m)))
    t.same(written.filter((m) => !covered(m)), [], `${what} ${status}: every message of api.md is in the OpenAPI response`)
    t.same(messages.filter((m) => !written.includes(m)), [], `${what} ${status}: every message of the OpenAPI response is in api.md`)
    for (const p of patterns) t.ok(written.some((m) => p.test(filled(m))), `${what} ${status}: api.md has the message of ${p}`)
  }
}

t.test("each endpoint of api.md answers as its OpenAPI operation, and they are the same endpoints", async (t) => {
  const operations = new Map<string, Record<string, Obj>>()
  const preflights: Record<string, Obj> = {}
  for (const [path, item] of Object.entries(openapi.paths as Obj)) {
    for (const [method, op] of Object.entries(item as Obj)) {
      if (method === 'options') Object.assign(preflights, op.responses)
      else operations.set(`${method.toUpperCase()} ${path}`, op.responses as Record<string, Obj>)
    }
  }
  const documented = [...endpoints.keys()].filter((k) => !k.startsWith('OPTIONS '))
  t.same(documented.sort(), [...operations.keys()].sort(), 'api.md and openapi.yaml describe the same operations')
  for (const [key, responses] of operations) if (endpoints.has(key)) sameAnswers(t, key, endpoints.get(key)!, responses)
  // the preflights: one section in api.md for every /api/auth/* path
  const preflight = endpoints.get('OPTIONS /api/auth/*')
  if (t.ok(preflight, 'api.md describes the CORS preflight')) sameAnswers(t, 'OPTIONS', preflight!, preflights)
})

t.test('the answers of any path are the OpenAPI components that say so', async (t) => {
  // components.responses that no operation names for its status: any path can give them
  const names = ['NotFound', 'MethodNotAllowed', 'MalformedRequest', 'InternalError']
  const messages = names.flatMap((n) => declared(openapi.components.responses[n] as Obj).messages)
  t.same(anyPath.map((r) => r.message!).sort(), messages.sort(), 'api.md "Any path" lists the messages of ' + names.join(', '))
})

t.test('openapi.yaml names no message the registry lacks, with the status the registry gives it', async (t) => {
  const byMessage = new Map<string, number[]>()
  for (const p of registry) {
    const [status, ...rest] = p.split(' ')
    const m = rest.join(' ')
    byMessage.set(m, [...(byMessage.get(m) ?? []), Number(status)])
  }
  const found: string[] = []
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk)
    if (v === null || typeof v !== 'object') return
    for (const [k, x] of Object.entries(v as Obj)) {
      if (k === 'message' && x !== null && typeof x === 'object') found.push(...declared({ content: { 'application/json': { schema: { properties: { message: x } } } } }).messages)
      else walk(x)
    }
  }
  walk(openapi)
  t.ok(found.length > 30, `${found.length} messages declared`)
  t.same(found.filter((m) => !byMessage.has(m)), [], 'every declared message is registered')
  // and under a status the registry gives it, in every operation
  for (const [path, item] of Object.entries(openapi.paths as Obj)) {
    for (const [method, op] of Object.entries(item as Obj)) {
      for (const [status, response] of Object.entries(op.responses as Obj)) {
        for (const m of declared(response as Obj).messages) {
          t.ok(byMessage.get(m)?.includes(Number(status)), `${method.toUpperCase()} ${path} ${status}: ${m}`)
        }
      }
    }
  }
})

t.test('api.md says where every audit event of the API comes from, and points to the README for the log itself', async (t) => {
  const section = /^## Audit events\n([\s\S]*?)^## /m.exec(apiMd)?.[1] ?? ''
  t.match(section, '](../README.md#audit-log)', 'links the README’s audit log section')
  const named = new Set([...section.matchAll(/`([a-z_]+(?:\.[a-z_]+)*)`/g)].map((m) => m[1]))
  const api = AUDIT_EVENTS.filter((e) => !e.startsWith('admin.'))
  t.same(api.filter((e) => !named.has(e)), [], `each of the ${api.length} events an HTTP request causes is named`)
  t.match(section, '`admin.*`', 'and the admin events are said to be authctl’s')
})
