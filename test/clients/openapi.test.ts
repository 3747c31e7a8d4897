/**
 * docs/openapi.yaml against the running daemon: every response the real `authd start` gives to a
 * walk through every endpoint is checked against the description of its operation and status
 * (body schema with Ajv's JSON Schema 2020-12, the documented message values, required headers,
 * media type), every status seen must be documented, and every documented status must be seen
 * (a short list of unreachable ones excepted, with the reason).
 */
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import YAML from 'yaml'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import { httpErrors } from '../../src/errors.js'
import { codeAt, stepAt } from '../../src/core/totp.js'
import { call, CookieJar, startServer, type Reply } from '../helpers/app.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { switchable } from '../helpers/unavailable-store.js'
import { spawnDaemon } from '../helpers/daemon.js'

type Obj = Record<string, any>

const doc = YAML.parse(readFileSync(new URL('../../docs/openapi.yaml', import.meta.url), 'utf8')) as Obj

// Schemas refer to each other as #/components/schemas/X; Ajv gets them as one schema of $defs.
const COMPONENTS = 'https://authd.invalid/openapi/components'
const rewriteRefs = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(rewriteRefs)
    : v !== null && typeof v === 'object'
      ? Object.fromEntries(
          Object.entries(v).map(([k, x]) => [k, k === '$ref' && typeof x === 'string' && x.startsWith('#/components/schemas/') ? `${COMPONENTS}#/$defs/${x.slice(21)}` : rewriteRefs(x)]),
        )
      : v
// strict (unknown keywords are errors), except that `$ref` + sibling `properties` need not repeat `type: object`
const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false })
ajv.addSchema({ $id: COMPONENTS, $defs: rewriteRefs(doc.components.schemas) as Obj })
const compiled = new WeakMap<object, ValidateFunction>()
const validator = (schema: Obj): ValidateFunction => {
  let v = compiled.get(schema)
  if (v === undefined) {
    v = ajv.compile(rewriteRefs(schema) as Obj)
    compiled.set(schema, v)
  }
  return v
}

/** response and header objects may be references into components */
const deref = (o: Obj): Obj => {
  if (typeof o?.$ref !== 'string') return o
  const [, kind, name] = /^#\/components\/(responses|headers)\/(\w+)$/.exec(o.$ref as string) ?? []
  if (kind === undefined) throw new Error(`unexpected $ref ${o.$ref}`)
  return deref(doc.components[kind][name!] as Obj)
}

const seen = new Set<string>()

/** Checks one real response against a documented response object. */
function conforms(t: Test, what: string, documented: Obj | undefined, reply: Reply): void {
  if (!t.ok(documented, `${what}: status ${reply.status} is documented`)) return
  const response = deref(documented!)
  for (const [name, header] of Object.entries((response.headers ?? {}) as Obj)) {
    const h = deref(header as Obj)
    const raw = reply.headers[name.toLowerCase()]
    if (raw === undefined) {
      t.notOk(h.required, `${what}: required header ${name} is present`)
      continue
    }
    for (const value of Array.isArray(raw) ? raw : [raw]) {
      const v = validator(h.schema as Obj)
      t.ok(v(value), `${what}: header ${name} is as documented`, { value, errors: v.errors })
    }
  }
  const content = response.content as Obj | undefined
  if (content === undefined) {
    t.equal(reply.text, '', `${what}: no body`)
    return
  }
  const [mediaType, media] = Object.entries(content)[0]!
  const actualType = String(reply.headers['content-type'] ?? '').split(';')[0]!.trim()
  t.equal(actualType, mediaType, `${what}: media type`)
  const v = validator((media as Obj).schema as Obj)
  const body = mediaType === 'application/json' ? reply.body : reply.text
  t.ok(v(body), `${what}: body matches the schema`, { body: mediaType === 'application/json' ? body : String(body).slice(0, 200), errors: v.errors })
}

/** An operation's response */
function check(t: Test, method: string, path: string, reply: Reply): Reply {
  const op = doc.paths[path]?.[method.toLowerCase()] as Obj | undefined
  const what = `${method} ${path} → ${reply.status}`
  if (t.ok(op, `${method} ${path} is documented`)) conforms(t, what, op!.responses[String(reply.status)] as Obj | undefined, reply)
  seen.add(`${method} ${path} ${reply.status}`)
  return reply
}

/** A response documented for any path (components.responses) */
function checkAny(t: Test, name: string, reply: Reply, context: string): void {
  conforms(t, `${context} → ${reply.status} (${name})`, doc.components.responses[name] as Obj, reply)
  seen.add(`* ${name}`)
}

/** Documented (operation, status) pairs no test can reach on a healthy daemon, and why */
const UNREACHABLE: Record<string, string> = {
  '500': 'an unexpected fault; the registry and the error handler are tested in test/http',
}

const ORIGIN = 'http://app.example.test'
const PASSWORD = 'correct horse battery staple'
const json = (body: unknown): { json: unknown } => ({ json: body })

/** Raw bytes to the server, for requests no HTTP client sends */
function raw(url: string, bytes: string): Promise<Reply> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    let data = ''
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer')))
    socket.on('data', (c: Buffer) => (data += c.toString('latin1')))
    socket.on('error', reject)
    socket.on('close', () => {
      const [head, text = ''] = data.split('\r\n\r\n')
      const [statusLine, ...lines] = head!.split('\r\n')
      const headers: Record<string, string> = {}
      for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim()
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, text, body: text === '' ? undefined : JSON.parse(text) })
    })
    socket.end(bytes)
  })
}

t.test('the description is a well-formed OpenAPI 3.1 document whose failures name their messages', async (t) => {
  t.match(readFileSync(new URL('../../README.md', import.meta.url), 'utf8'), /\]\(docs\/openapi\.yaml\)/, 'the README links it')
  t.equal(doc.openapi, '3.1.0')
  t.match(doc.info, { title: 'authd', version: String })
  // the fields OpenAPI 3.1 allows where this document uses them (its schema forbids any other)
  const allowed = (what: string, o: Obj, keys: string[]): void => {
    const extra = Object.keys(o).filter((k) => !keys.includes(k) && !k.startsWith('x-'))
    t.same(extra, [], `${what}: only OpenAPI fields`)
  }
  allowed('document', doc, ['openapi', 'info', 'jsonSchemaDialect', 'servers', 'paths', 'webhooks', 'components', 'security', 'tags', 'externalDocs'])
  allowed('info', doc.info, ['title', 'summary', 'description', 'termsOfService', 'contact', 'license', 'version'])
  t.equal(['identifier', 'url'].filter((k) => k in doc.info.license).length, 1, 'license: an SPDX identifier or a url')
  allowed('components', doc.components, ['schemas', 'responses', 'parameters', 'examples', 'requestBodies', 'headers', 'securitySchemes', 'links', 'callbacks', 'pathItems'])
  const headerKeys = ['description', 'required', 'deprecated', 'allowEmptyValue', 'style', 'explode', 'schema', 'example', 'examples', 'content']
  for (const [name, h] of Object.entries(doc.components.headers as Obj)) allowed(`header ${name}`, h as Obj, headerKeys)
  const ids = new Set<string>()
  for (const [path, item] of Object.entries(doc.paths as Obj)) {
    for (const [method, op] of Object.entries(item as Obj)) {
      t.ok(['get', 'post', 'delete', 'options'].includes(method), `${method} ${path}: a method authd serves`)
      allowed(`${method} ${path}`, op as Obj, ['tags', 'summary', 'description', 'externalDocs', 'operationId', 'parameters', 'requestBody', 'responses', 'callbacks', 'deprecated', 'security', 'servers'])
      if (op.operationId !== undefined) {
        t.notOk(ids.has(op.operationId), `operationId ${op.operationId} is unique`)
        ids.add(op.operationId as string)
      }
      for (const [status, response] of Object.entries(op.responses as Obj)) {
        t.match(status, /^[1-5][0-9][0-9]$/)
        const r = deref(response as Obj)
        t.type(r.description, 'string', `${method} ${path} ${status} has a description`)
        allowed(`${method} ${path} ${status}`, r, ['description', 'headers', 'content', 'links'])
        for (const [name, h] of Object.entries((r.headers ?? {}) as Obj)) if ((h as Obj).$ref === undefined) allowed(`${method} ${path} ${status} header ${name}`, h as Obj, headerKeys)
        if (Number(status) < 400) continue
        // every failure says which messages it can carry, so clients can rely on them
        const message = (Object.values(r.content as Obj)[0] as Obj).schema.properties?.message as Obj | undefined
        t.ok(message?.const ?? message?.enum ?? message?.anyOf, `${method} ${path} ${status} lists its messages`)
      }
    }
  }
  // every schema compiles under strict JSON Schema 2020-12
  for (const name of Object.keys(doc.components.schemas as Obj)) t.ok(ajv.getSchema(`${COMPONENTS}#/$defs/${name}`), `schema ${name} compiles`)
})

t.test('the documented messages are exactly the error registry (plus the server-level request timeout)', async (t) => {
  const consts = new Set<string>()
  const patterns: RegExp[] = []
  const walk = (v: unknown, key?: string): void => {
    if (Array.isArray(v)) return v.forEach((x) => walk(x))
    if (v === null || typeof v !== 'object') return
    const o = v as Obj
    if (key === 'message') {
      for (const m of [o.const, ...(o.enum ?? [])]) if (typeof m === 'string') consts.add(m)
      for (const alt of (o.anyOf ?? []) as Obj[]) {
        for (const m of alt.enum ?? []) consts.add(m as string)
        if (alt.pattern !== undefined) patterns.push(new RegExp(alt.pattern as string))
      }
      return
    }
    for (const [k, x] of Object.entries(o)) walk(x, k)
  }
  walk(doc)
  const documented = (m: string): boolean => consts.has(m) || patterns.some((p) => p.test(m))
  for (const e of Object.values(httpErrors)) {
    const example = e.message.replace(/\{\w+\}/g, '8')
    t.ok(documented(example), `registry message documented: ${e.message}`)
  }
  const registry = new Set<string>(Object.values(httpErrors).map((e) => e.message))
  t.same([...consts].filter((m) => !registry.has(m)).sort(), [], 'no documented message is made up')
})

t.test('real responses of the running daemon match the description, endpoint by endpoint', async (t) => {
  const dir = t.testdir()
  const authd = await spawnDaemon(t, join(dir, 'a'), {
    env: {
      AUTHD_CORS_ORIGINS: ORIGIN,
      AUTHD_RATE_LIMIT_LOGIN_PER_IP_EMAIL: '3/1m',
      AUTHD_RATE_LIMIT_REGISTER_PER_IP: '10/1m',
      AUTHD_RATE_LIMIT_REFRESH_PER_IP: '12/1m',
      AUTHD_RATE_LIMIT_MFA_PER_USER: '2/1m',
    },
  })
  const url = authd.url
  const jar = new CookieJar('__Host-authd_rt')
  const req = async (method: string, path: string, opts: Parameters<typeof call>[3] = {}): Promise<Reply> => check(t, method, path, await call(url, method, path, opts))
  const big = { email: 'big@example.com', password: 'x'.repeat(17 * 1024) }
  const evil = { origin: 'https://evil.example' }

  // operations
  await req('GET', '/healthz')
  await req('GET', '/readyz')
  const jwks = await req('GET', '/.well-known/jwks.json')
  t.equal(jwks.body.keys.length, 1)
  await req('GET', '/metrics')

  // preflights, from an allowed origin (with the grant) and another (without)
  const mfaPaths = ['/api/auth/mfa/totp/setup', '/api/auth/mfa/totp/confirm', '/api/auth/mfa/totp/disable', '/api/auth/mfa/recovery-codes']
  for (const path of ['/api/auth/register', '/api/auth/login', '/api/auth/me', '/api/auth/refresh', '/api/auth/logout', '/api/auth/login/mfa', '/api/auth/password', '/api/auth/sessions', ...mfaPaths]) {
    const allowed = await req('OPTIONS', path, { headers: { origin: ORIGIN, 'access-control-request-method': 'POST' } })
    t.same([allowed.headers['access-control-allow-origin'], allowed.headers['access-control-allow-credentials']], [ORIGIN, 'true'])
    const other = await req('OPTIONS', path, { headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'POST' } })
    t.equal(other.headers['access-control-allow-origin'], undefined)
  }

  // register
  const reg = await req('POST', '/api/auth/register', json({ email: 'ann@example.com', password: PASSWORD }))
  t.equal(reg.status, 201)
  jar.take(reg)
  const registerFailures: Array<[unknown, number, string]> = [
    [{}, 400, 'Email and password are required'],
    [{ email: 'not-an-email', password: PASSWORD }, 400, 'Invalid email address'],
    [{ email: 'b@example.com', password: 'short' }, 400, 'Password must be at least 8 characters'],
    [{ email: 'b@example.com', password: 'x'.repeat(300) }, 400, 'Password must be at most 256 characters'],
    [{ email: 'b@example.com', password: 'password' }, 400, 'Password is too common'],
    [{ email: 'ANN@example.com', password: PASSWORD }, 409, 'Email already registered'],
  ]
  for (const [body, status, message] of registerFailures) {
    const r = await req('POST', '/api/auth/register', json(body))
    t.same([r.status, r.body.message], [status, message])
  }
  t.equal((await req('POST', '/api/auth/register', { body: '{"email":', headers: { 'content-type': 'application/json' } })).status, 400)
  t.equal((await req('POST', '/api/auth/register', { body: 'email=a', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status, 415)
  t.equal((await req('POST', '/api/auth/register', json(big))).status, 413)
  t.equal((await req('POST', '/api/auth/register', { ...json({ email: 'c@example.com', password: PASSWORD }), headers: evil })).status, 403)
  let limited: Reply | undefined
  for (let i = 0; i < 12 && limited === undefined; i++) {
    const r = await req('POST', '/api/auth/register', json({ email: `many${i}@example.com`, password: PASSWORD }))
    if (r.status === 429) limited = r
  }
  t.equal(limited?.status, 429, 'the register limit is reached')

  // login
  const login = await req('POST', '/api/auth/login', json({ email: 'ann@example.com', password: PASSWORD }))
  t.equal(login.status, 200)
  jar.take(login)
  const token = login.body.data.accessToken as string
  t.equal((await req('POST', '/api/auth/login', json({ email: 'ann@example.com' }))).status, 400)
  t.equal((await req('POST', '/api/auth/login', { body: '[1]', headers: { 'content-type': 'application/json' } })).status, 400)
  t.equal((await req('POST', '/api/auth/login', { body: 'x', headers: { 'content-type': 'text/plain' } })).status, 415)
  t.equal((await req('POST', '/api/auth/login', json(big))).status, 413)
  t.equal((await req('POST', '/api/auth/login', { ...json({ email: 'ann@example.com', password: PASSWORD }), headers: evil })).status, 403)
  const guesses: number[] = []
  for (let i = 0; i < 4; i++) guesses.push((await req('POST', '/api/auth/login', json({ email: 'nobody@example.com', password: 'wrong guess' }))).status)
  t.same(guesses, [401, 401, 401, 429])

  // me
  t.equal((await req('GET', '/api/auth/me', { headers: { authorization: `Bearer ${token}` } })).status, 200)
  t.equal((await req('GET', '/api/auth/me')).status, 401)
  t.equal((await req('GET', '/api/auth/me', { headers: { authorization: 'Bearer not.a.token' } })).status, 401)

  // refresh
  const refreshed = await req('POST', '/api/auth/refresh', { headers: jar.header() })
  t.equal(refreshed.status, 200)
  jar.take(refreshed)
  t.equal((await req('POST', '/api/auth/refresh')).body.message, 'Refresh token is required')
  const unknown = await req('POST', '/api/auth/refresh', { headers: { cookie: `${jar.name}=${'A'.repeat(43)}` } })
  t.same([unknown.status, unknown.body.message], [401, 'Invalid or expired refresh token'])
  t.equal((await req('POST', '/api/auth/refresh', { body: '{', headers: { 'content-type': 'application/json' } })).status, 400)
  t.equal((await req('POST', '/api/auth/refresh', { body: 'x', headers: { 'content-type': 'text/plain' } })).status, 415)
  t.equal((await req('POST', '/api/auth/refresh', json(big))).status, 413)
  t.equal((await req('POST', '/api/auth/refresh', { headers: { ...jar.header(), ...evil } })).status, 403)

  // logout: with the cookie, without one, everywhere
  const out = await req('POST', '/api/auth/logout', { headers: jar.header() })
  t.equal(out.status, 200)
  t.equal((await req('POST', '/api/auth/logout')).status, 200)
  const again = await call(url, 'POST', '/api/auth/login', json({ email: 'ann@example.com', password: PASSWORD }))
  const jar2 = new CookieJar('__Host-authd_rt')
  jar2.take(again)
  t.equal((await req('POST', '/api/auth/logout', { ...json({ all: true }), headers: jar2.header() })).status, 200)
  t.equal((await req('POST', '/api/auth/logout', { body: '{', headers: { 'content-type': 'application/json' } })).status, 400)
  t.equal((await req('POST', '/api/auth/logout', { body: 'x', headers: { 'content-type': 'text/plain' } })).status, 415)
  t.equal((await req('POST', '/api/auth/logout', json(big))).status, 413)
  t.equal((await req('POST', '/api/auth/logout', { headers: evil })).status, 403)

  // the second factor, on the account of many0 (registered above): its limits are its own
  const manyLogin = await call(url, 'POST', '/api/auth/login', json({ email: 'many0@example.com', password: PASSWORD }))
  const mfaBearer = { authorization: `Bearer ${manyLogin.body.data.accessToken}` }
  for (const path of mfaPaths) {
    t.equal((await req('POST', path)).status, 401, `${path}: no token`)
    t.equal((await req('POST', path, { headers: { authorization: 'Bearer not.a.token' } })).status, 401, `${path}: a bad token`)
    t.equal((await req('POST', path, { body: '{', headers: { ...mfaBearer, 'content-type': 'application/json' } })).status, 400, `${path}: bad JSON`)
    t.equal((await req('POST', path, { body: 'x', headers: { ...mfaBearer, 'content-type': 'text/plain' } })).status, 415, `${path}: not JSON`)
    t.equal((await req('POST', path, { ...json(big), headers: mfaBearer })).status, 413, `${path}: too large`)
  }
  t.equal((await req('POST', '/api/auth/mfa/totp/confirm', { ...json({ code: '123456' }), headers: mfaBearer })).status, 409)
  t.equal((await req('POST', '/api/auth/mfa/totp/disable', { ...json({ password: PASSWORD }), headers: mfaBearer })).status, 409)
  t.equal((await req('POST', '/api/auth/mfa/recovery-codes', { ...json({ password: PASSWORD }), headers: mfaBearer })).status, 409)
  const setup = await req('POST', '/api/auth/mfa/totp/setup', { headers: mfaBearer })
  t.equal(setup.status, 200)
  const secret = setup.body.data.secret as string
  const step = stepAt(Date.now())
  const codes = [codeAt(secret, step), codeAt(secret, step + 1)]
  const wrongCode = codes.includes('000000') ? '000001' : '000000'
  t.equal((await req('POST', '/api/auth/mfa/totp/confirm', { ...json({ code: wrongCode }), headers: mfaBearer })).status, 400)
  const confirmed = await req('POST', '/api/auth/mfa/totp/confirm', { ...json({ code: codes[0] }), headers: mfaBearer })
  t.equal(confirmed.status, 200)
  t.equal((await req('POST', '/api/auth/mfa/totp/setup', { headers: mfaBearer })).status, 409)
  t.equal((await req('GET', '/api/auth/me', { headers: mfaBearer })).body.data.mfaEnabled, true)
  t.equal((await req('POST', '/api/auth/mfa/recovery-codes', { ...json({ password: 'wrong guess' }), headers: mfaBearer })).status, 403)
  t.equal((await req('POST', '/api/auth/mfa/totp/disable', { ...json({ password: 'wrong guess' }), headers: mfaBearer })).status, 403)
  const fresh = await req('POST', '/api/auth/mfa/recovery-codes', { ...json({ password: PASSWORD }), headers: mfaBearer })
  t.equal(fresh.status, 200)
  const challenge = await req('POST', '/api/auth/login', json({ email: 'many0@example.com', password: PASSWORD }))
  t.equal(challenge.body.data.mfaRequired, true)
  const mfaToken = challenge.body.data.mfaToken as string
  t.equal((await req('POST', '/api/auth/login/mfa', json({ mfaToken }))).status, 400)
  t.equal((await req('POST', '/api/auth/login/mfa', { body: '{', headers: { 'content-type': 'application/json' } })).status, 400)
  t.equal((await req('POST', '/api/auth/login/mfa', { body: 'x', headers: { 'content-type': 'text/plain' } })).status, 415)
  t.equal((await req('POST', '/api/auth/login/mfa', json(big))).status, 413)
  t.equal((await req('POST', '/api/auth/login/mfa', { ...json({ mfaToken, code: codes[1] }), headers: evil })).status, 403)
  t.same((await req('POST', '/api/auth/login/mfa', json({ mfaToken: 'nope', code: codes[1] }))).body.message, 'Invalid or expired MFA token')
  t.same((await req('POST', '/api/auth/login/mfa', json({ mfaToken, code: wrongCode }))).body.message, 'Invalid code')
  const viaTotp = await req('POST', '/api/auth/login/mfa', json({ mfaToken, code: codes[1] }))
  t.equal(viaTotp.status, 200)
  const viaRecovery = await req('POST', '/api/auth/login/mfa', json({ mfaToken: (await call(url, 'POST', '/api/auth/login', json({ email: 'many0@example.com', password: PASSWORD }))).body.data.mfaToken, recoveryCode: fresh.body.data.recoveryCodes[0] }))
  t.equal(viaRecovery.status, 200)
  // the per-user limit (2/1m here): two wrong codes, then 429
  const again2 = (await call(url, 'POST', '/api/auth/login', json({ email: 'many0@example.com', password: PASSWORD }))).body.data.mfaToken as string
  const attempts: number[] = []
  for (let i = 0; i < 3; i++) attempts.push((await req('POST', '/api/auth/login/mfa', json({ mfaToken: again2, code: wrongCode }))).status)
  t.same(attempts, [401, 401, 429])
  t.equal((await req('POST', '/api/auth/mfa/totp/disable', { ...json({ password: PASSWORD }), headers: mfaBearer })).status, 200)
  // the login limit, through a wrong password at disable and recovery-codes (3/1m here)
  t.equal((await req('POST', '/api/auth/mfa/totp/setup', { headers: mfaBearer })).status, 200)
  t.equal((await req('POST', '/api/auth/mfa/totp/confirm', { ...json({ code: '' }), headers: mfaBearer })).status, 400)
  const secret2 = (await call(url, 'POST', '/api/auth/mfa/totp/setup', { headers: mfaBearer })).body.data.secret as string
  t.equal((await call(url, 'POST', '/api/auth/mfa/totp/confirm', { ...json({ code: codeAt(secret2, stepAt(Date.now())) }), headers: mfaBearer })).status, 200)
  const spent: number[] = []
  for (let i = 0; i < 4; i++) spent.push((await req('POST', '/api/auth/mfa/totp/disable', { ...json({ password: 'wrong guess' }), headers: mfaBearer })).status)
  spent.push((await req('POST', '/api/auth/mfa/recovery-codes', { ...json({ password: PASSWORD }), headers: mfaBearer })).status)
  t.same(spent, [403, 403, 403, 429, 429], 'three failures (the logins above cleared the earlier ones), then refused, the right password too')

  // a signed-in user's own account: sessions, then the password (whose wrong guesses spend
  // ann's login limit from this address: nothing after this signs ann in)
  const bearer = (r: Reply): Record<string, string> => ({ authorization: `Bearer ${r.body.data.accessToken as string}` })
  const one = await call(url, 'POST', '/api/auth/login', json({ email: 'ann@example.com', password: PASSWORD }))
  const two = await call(url, 'POST', '/api/auth/login', json({ email: 'ann@example.com', password: PASSWORD }))
  const listed = await req('GET', '/api/auth/sessions', { headers: bearer(one) })
  t.equal(listed.status, 200)
  t.equal(listed.body.data.sessions.length, 2)
  t.equal((await req('GET', '/api/auth/sessions')).status, 401)
  t.equal((await req('GET', '/api/auth/sessions', { headers: { authorization: 'Bearer not.a.token' } })).status, 401)
  const byId = (method: string, id: string, opts: Parameters<typeof call>[3] = {}): Promise<Reply> =>
    call(url, method, `/api/auth/sessions/${id}`, opts).then((r) => check(t, method, '/api/auth/sessions/{id}', r))
  const otherId = (listed.body.data.sessions as Array<{ id: string; current: boolean }>).find((s) => !s.current)!.id
  // a body, which it does not take, held to the rules of every body: nothing ended
  t.equal((await byId('DELETE', otherId, { body: 'x', headers: { ...bearer(one), 'content-type': 'text/plain' } })).status, 415)
  t.equal((await byId('DELETE', otherId, { body: '{', headers: { ...bearer(one), 'content-type': 'application/json' } })).status, 400)
  t.equal((await byId('DELETE', otherId, { ...json(big), headers: bearer(one) })).status, 413)
  t.equal((await byId('DELETE', otherId, { headers: bearer(one) })).status, 200)
  t.equal((await byId('DELETE', otherId, { headers: bearer(one) })).status, 404)
  t.equal((await byId('DELETE', otherId, { headers: bearer(two) })).status, 401, 'the ended session')
  t.equal((await byId('DELETE', otherId)).status, 401)
  const sessionPreflight = await byId('OPTIONS', otherId, { headers: { origin: ORIGIN, 'access-control-request-method': 'DELETE' } })
  t.equal(sessionPreflight.headers['access-control-allow-origin'], ORIGIN)
  t.equal((await byId('OPTIONS', otherId, { headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'DELETE' } })).status, 204)
  const three = await call(url, 'POST', '/api/auth/login', json({ email: 'ann@example.com', password: PASSWORD }))
  const pw = (body: Parameters<typeof call>[3], headers = bearer(one)): Promise<Reply> => req('POST', '/api/auth/password', { ...body, headers: { ...headers, ...body?.headers } })
  const NEW = 'another long passphrase'
  t.equal((await pw(json({ currentPassword: PASSWORD }))).body.message, 'Current and new password are required')
  t.equal((await pw(json({ currentPassword: PASSWORD, newPassword: 'short' }))).body.message, 'Password must be at least 8 characters')
  t.equal((await pw(json({ currentPassword: PASSWORD, newPassword: 'password' }))).body.message, 'Password is too common')
  t.equal((await pw({ body: '{', headers: { 'content-type': 'application/json' } })).status, 400)
  t.equal((await pw({ body: 'x', headers: { 'content-type': 'text/plain' } })).status, 415)
  t.equal((await pw(json({ currentPassword: PASSWORD, newPassword: 'x'.repeat(17 * 1024) }))).status, 413)
  t.equal((await pw(json({ currentPassword: PASSWORD, newPassword: NEW }), {})).status, 401)
  t.equal((await pw(json({ currentPassword: PASSWORD, newPassword: NEW }))).status, 200)
  t.equal((await req('GET', '/api/auth/sessions', { headers: bearer(three) })).status, 401, 'the other sessions ended')
  const wrong: number[] = []
  for (let i = 0; i < 4; i++) wrong.push((await pw(json({ currentPassword: 'wrong guess', newPassword: PASSWORD }))).status)
  t.same(wrong, [403, 403, 403, 429], 'a wrong current password is a failed login (login.per_ip_email 3/1m)')

  // the refresh limit, last: every refresh with a well-formed cookie counts (one without a
  // cookie is answered before the limit)
  limited = undefined
  for (let i = 0; i < 15 && limited === undefined; i++) {
    const r = await req('POST', '/api/auth/refresh', { headers: { cookie: `${jar.name}=${'A'.repeat(22)}.${'A'.repeat(43)}` } })
    if (r.status === 429) limited = r
  }
  t.equal(limited?.status, 429, 'the refresh limit is reached')

  // any path
  const notFound = await call(url, 'GET', '/nope')
  checkAny(t, 'NotFound', notFound, 'GET /nope')
  for (const [method, path] of [['GET', '/api/auth/login'], ['POST', '/healthz'], ['DELETE', '/api/auth/me'], ['GET', '/api/auth/sessions/x'], ['POST', '/api/auth/sessions']] as const) {
    const r = await call(url, method, path)
    t.equal(r.status, 405)
    checkAny(t, 'MethodNotAllowed', r, `${method} ${path}`)
  }
  const garbled = await raw(url, 'NOT HTTP AT ALL\r\n\r\n')
  t.equal(garbled.status, 400)
  checkAny(t, 'MalformedRequest', garbled, 'a broken request line')
  const huge = await raw(url, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`)
  t.equal(huge.status, 431)
  checkAny(t, 'MalformedRequest', huge, 'headers over 16 KiB')

  // with registration and metrics turned off
  const closed = await spawnDaemon(t, join(dir, 'b'), { env: { AUTHD_REGISTRATION_ENABLED: 'false', AUTHD_METRICS_ENABLED: 'false' } })
  const disabled = check(t, 'POST', '/api/auth/register', await call(closed.url, 'POST', '/api/auth/register', json({ email: 'd@example.com', password: PASSWORD })))
  t.same([disabled.status, disabled.body.message], [403, 'Registration is disabled'])
  t.equal(check(t, 'GET', '/metrics', await call(closed.url, 'GET', '/metrics')).status, 404)
})

t.test('readyz while draining matches the description', async (t) => {
  // draining lasts only while requests are in flight, so this one flips the app's flag directly
  const app = await startServer(t)
  app.setReady(false)
  const r = check(t, 'GET', '/readyz', await call(app.url, 'GET', '/readyz'))
  t.equal(r.status, 503)
})

t.test('while the store does not answer, every operation that needs it gives its documented 503', async (t) => {
  // a real store made to reject as an unreachable database does (test/http/store-unavailable.test.ts)
  const real = await openLmdbStore({ path: t.testdir() })
  t.teardown(() => real.close())
  const s = switchable(real)
  const app = await startServer(t, { store: s.store })
  const url = app.url
  const reg = await call(url, 'POST', '/api/auth/register', json({ email: 'zed@example.com', password: PASSWORD }))
  const jar = new CookieJar('__Host-authd_rt')
  jar.take(reg)
  const bearer = { authorization: `Bearer ${reg.body.data.accessToken as string}` }
  // a second factor on, for an mfaToken to present
  const secret = (await call(url, 'POST', '/api/auth/mfa/totp/setup', { headers: bearer })).body.data.secret as string
  t.equal((await call(url, 'POST', '/api/auth/mfa/totp/confirm', { ...json({ code: codeAt(secret, stepAt(Date.now())) }), headers: bearer })).status, 200)
  const mfaToken = (await call(url, 'POST', '/api/auth/login', json({ email: 'zed@example.com', password: PASSWORD }))).body.data.mfaToken as string
  s.down = true
  const ops: Array<[string, string, Parameters<typeof call>[3]]> = [
    ['POST', '/api/auth/register', json({ email: 'yan@example.com', password: PASSWORD })],
    ['POST', '/api/auth/login', json({ email: 'zed@example.com', password: PASSWORD })],
    ['POST', '/api/auth/login/mfa', json({ mfaToken, code: '123456' })],
    ['GET', '/api/auth/me', { headers: bearer }],
    ['POST', '/api/auth/mfa/totp/setup', { headers: bearer }],
    ['POST', '/api/auth/mfa/totp/confirm', { ...json({ code: '123456' }), headers: bearer }],
    ['POST', '/api/auth/mfa/totp/disable', { ...json({ password: PASSWORD }), headers: bearer }],
    ['POST', '/api/auth/mfa/recovery-codes', { ...json({ password: PASSWORD }), headers: bearer }],
    ['POST', '/api/auth/refresh', { headers: jar.header() }],
    ['POST', '/api/auth/logout', { headers: jar.header() }],
    ['POST', '/api/auth/password', { ...json({ currentPassword: PASSWORD, newPassword: 'another fine password' }), headers: bearer }],
    ['GET', '/api/auth/sessions', { headers: bearer }],
    ['DELETE', '/api/auth/sessions/{id}', { headers: bearer }],
    ['GET', '/.well-known/jwks.json', {}],
    ['GET', '/readyz', {}],
  ]
  for (const [method, path, opts] of ops) {
    const r = check(t, method, path, await call(url, method, path.replace('{id}', 'some-session'), opts))
    t.equal(r.status, 503, `${method} ${path}`)
    t.equal(r.body.message, path === '/readyz' ? 'Not ready' : 'Service unavailable')
  }
})

t.test('every documented status was seen, except the unreachable ones named here', async (t) => {
  const missing: string[] = []
  for (const [path, item] of Object.entries(doc.paths as Obj)) {
    for (const [method, op] of Object.entries(item as Obj)) {
      for (const status of Object.keys(op.responses as Obj)) {
        const key = `${method.toUpperCase()} ${path} ${status}`
        if (!seen.has(key) && UNREACHABLE[key] === undefined && UNREACHABLE[status] === undefined) missing.push(key)
      }
    }
  }
  t.same(missing, [], 'documented and exercised')
  for (const name of ['NotFound', 'MethodNotAllowed', 'MalformedRequest']) t.ok(seen.has(`* ${name}`), `${name} exercised`)
})
