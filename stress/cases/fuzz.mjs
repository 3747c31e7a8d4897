/**
 * Case 1 — hostile input. Thousands of malformed or hostile requests over every endpoint, sent as
 * raw bytes on fresh connections: broken JSON, wrong types, huge and deep values, bad Unicode,
 * control characters, oversize bodies and headers, duplicate headers, junk cookies, and every
 * JWT attack (signed with the daemon's own key where the claims, not the signature, are the
 * attack). Then: no 5xx, no exit, no unhandled rejection, every body the envelope, bounded RSS,
 * and /me as fast as before.
 */
import { mkdirSync } from 'node:fs'
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { startDaemon, readLogLines, sleep } from '../lib/daemon.mjs'
import { agentFor, loopbackAddress, rawExchange } from '../lib/http.mjs'
import { envelopeProblem } from '../lib/contract.mjs'
import { login, me, register, refresh } from '../lib/auth.mjs'
import { readKeys } from '../lib/store-peek.mjs'
import { b64u, decodeSegment, signJws } from '../lib/jws.mjs'
import { password, CANARY } from '../lib/secrets.mjs'
import { percentile, pool, mb, round } from '../lib/stats.mjs'
import { check, info, timingCheck } from '../lib/report.mjs'

export const id = 'fuzz'
export const title = 'Hostile input fuzz'

const SCALE = {
  full: { requests: 5200, meSamples: 15000, meWarmup: 5000 },
  small: { requests: 300, meSamples: 100, meWarmup: 100 },
}
const CONCURRENCY = 16
/** source addresses the fuzz rotates through (the per-IP login limit bounds the hashing) */
const SOURCES = 16
const POSTS = ['/api/auth/login', '/api/auth/register', '/api/auth/refresh', '/api/auth/logout']

const int = (a, b) => a + Math.floor(Math.random() * (b - a + 1))
const pick = (list) => list[Math.floor(Math.random() * list.length)]
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
const randText = (n, alphabet = B64) => Array.from({ length: n }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('')
const email = () => `fz-${randText(10).toLowerCase()}@example.test`

const CRLF = '\r\n'
/** A request as raw bytes: any method, path, header list (values may be Buffers), body. */
function raw({ method = 'POST', path, headers = [], body, contentLength = true, close = true }) {
  const parts = [Buffer.from(`${method} ${path} HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}`, 'latin1')]
  for (const [k, v] of headers) parts.push(Buffer.from(`${k}: `, 'latin1'), Buffer.isBuffer(v) ? v : Buffer.from(v, 'latin1'), Buffer.from(CRLF))
  const b = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8')
  if (b !== undefined && contentLength) parts.push(Buffer.from(`Content-Length: ${b.length}${CRLF}`))
  if (close) parts.push(Buffer.from(`Connection: close${CRLF}`))
  parts.push(Buffer.from(CRLF))
  if (b !== undefined) parts.push(b)
  return { method, path, bytes: Buffer.concat(parts) }
}
const JSON_CT = ['Content-Type', 'application/json']
const post = (path, body, headers = [JSON_CT]) => raw({ path, headers, body })

// ---------------------------------------------------------------------------------------------
// generators: each returns one request (random within its category); `ctx` holds real tokens

const INVALID_JSON = [
  '{', '}', '{"email":}', '{"email":"a@b.c",}', "{'email':'a@b.c'}", '{"email":"a@b.c" "password":"x"}', 'NaN', '{"a":NaN}',
  '{"a":Infinity}', '{"a":-}', '[', '{"a":"\\x41"}', '{"a":"\\u12"}', '{"a":01}', '{"a":1e}', '{"a":tru}', 'nul', '"', '{"a":"b}',
  '{"a":1}{"b":2}', '{"a"::1}', '{,}', '{"a":[1,]}', '/* c */{}', '{"a":1} x', '\u0000', '{"\u0000":', 'undefined', '{"a":.5}',
]

const wrongValue = () =>
  pick([
    () => int(-1e9, 1e9),
    () => null,
    () => true,
    () => [],
    () => [email()],
    () => ({}),
    () => ({ email: email() }),
    () => '',
    () => '   ',
    () => 1.5e308,
    () => -0,
    () => [null, [null, [null]]],
    () => ({ toString: 'x', valueOf: 1 }),
    () => ({ length: 1e9 }),
  ])()

function truncated() {
  const full = JSON.stringify({ email: email(), password: password() })
  return post(pick(POSTS), full.slice(0, int(1, full.length - 1)))
}

function invalidJson() {
  if (Math.random() < 0.25) return post(pick(POSTS), randomBytes(int(1, 300)))
  return post(pick(POSTS), pick(INVALID_JSON))
}

function wrongTypes() {
  const top = Math.random() < 0.2
  const body = top ? JSON.stringify(pick([[], 'str', 1, null, true, [{ email: email(), password: password() }]])) : JSON.stringify({ email: wrongValue(), password: Math.random() < 0.5 ? password() : wrongValue() })
  return post(pick(POSTS), body)
}

function huge() {
  const path = pick(['/api/auth/login', '/api/auth/register'])
  return post(
    path,
    pick([
      () => JSON.stringify({ email: `${'a'.repeat(15000)}@example.test`, password: password() }),
      () => JSON.stringify({ email: email(), password: `${CANARY}${'p'.repeat(15000)}` }),
      () => JSON.stringify({ email: email(), password: password(), pad: 'x'.repeat(16 * 1024 - 120) }),
      () => JSON.stringify(Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`k${i}`, i]))),
      () => JSON.stringify({ email: email(), password: Array.from({ length: 3000 }, (_, i) => i) }),
      () => JSON.stringify({ email: email(), password: password(), n: 1e308, m: -1e-308, big: '9'.repeat(5000) }),
      () => JSON.stringify({ email: email(), password: '\uFDFA'.repeat(4000) }), // NFKC expands ×18
    ])(),
  )
}

function deep() {
  const depth = int(100, 8000)
  const kind = Math.random() < 0.5 ? ['[', ']'] : ['{"a":', '}']
  const nest = kind[0].repeat(depth) + '1' + kind[1].repeat(depth)
  const body = pick([() => nest, () => `{"email":${nest},"password":"x"}`, () => `{"email":"${email()}","password":${nest}}`])()
  return post(pick(POSTS), body.length > 16 * 1024 ? body.slice(0, 16 * 1024 - 1) : body)
}

function surrogates() {
  const lone = pick(['\\ud800', '\\udfff', '\\ud83d', '\\ude00\\ud83d', '\\udbff\\u0041'])
  const bodies = [
    `{"email":"a${lone}@example.test","password":"${password()}"}`,
    `{"email":"${email()}","password":"${password()}${lone}"}`,
    `{"${lone}":1}`,
    `{"email":"${email()}","password":"${password()}","x":["${lone}"]}`,
  ]
  if (Math.random() < 0.3) {
    // a surrogate encoded directly as UTF-8 bytes (CESU-8): invalid UTF-8
    return post(pick(POSTS), Buffer.concat([Buffer.from('{"email":"a'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('@x.y","password":"x"}')]))
  }
  return post(pick(POSTS), pick(bodies))
}

const BAD_UTF8 = [[0xff], [0xc3, 0x28], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80], [0xe2, 0x82], [0xfe, 0xfe, 0xff, 0xff]]
function invalidUtf8() {
  const bad = Buffer.from(pick(BAD_UTF8))
  const where = int(0, 2)
  const body =
    where === 0
      ? Buffer.concat([Buffer.from('{"email":"'), bad, Buffer.from(`@example.test","password":"${password()}"}`)])
      : where === 1
        ? Buffer.concat([Buffer.from(`{"email":"${email()}","password":"`), bad, Buffer.from('"}')])
        : Buffer.concat([Buffer.from('{"'), bad, Buffer.from('":1}')])
  return post(pick(POSTS), body)
}

const CONTROLS = ['\\u0000', '\\u0001', '\\u001f', '\\u007f', '\\u0085', '\\u2028', '\\u202e', '\\u200b', '\\ufeff', '\\n', '\\r\\n', '\\t', '\\b']
function control() {
  const c = pick(CONTROLS)
  if (Math.random() < 0.2) {
    // raw control bytes inside a JSON string are invalid JSON
    return post(pick(POSTS), Buffer.from(`{"email":"a\u0000\u0007b@x.y","password":"${password()}"}`, 'utf8'))
  }
  const bodies = [
    `{"email":"a${c}b@example.test","password":"${password()}"}`,
    `{"email":"${email()}${c}","password":"${password()}"}`,
    `{"email":"${email()}","password":"${password()}${c}"}`,
    `{"email":"${c}","password":"${c}"}`,
  ]
  return post(pick(['/api/auth/login', '/api/auth/register']), pick(bodies))
}

function email2000() {
  const local = pick([
    () => 'a'.repeat(2000 - 13),
    () => 'é'.repeat(994),
    () => '@'.repeat(1990),
    () => `${'a.'.repeat(993)}`,
  ])()
  const e = pick([() => `${local}@example.test`, () => `${'x'.repeat(10)}@${'d'.repeat(1988)}`, () => local])()
  return post(pick(['/api/auth/login', '/api/auth/register']), JSON.stringify({ email: e, password: password() }))
}

function oversizeBody() {
  return pick([
    () => post(pick(POSTS), JSON.stringify({ email: email(), password: password(), pad: 'x'.repeat(16 * 1024) })),
    () => post(pick(POSTS), Buffer.alloc(64 * 1024, 0x20)),
    () => post(pick(POSTS), Buffer.alloc(1024 * 1024, 0x7b)),
    // declared far more than is sent
    () => raw({ path: pick(POSTS), headers: [JSON_CT, ['Content-Length', String(10 ** 9)]], body: '{}', contentLength: false }),
    () => raw({ path: pick(POSTS), headers: [JSON_CT, ['Content-Length', '99999999999999999999']], body: '{}', contentLength: false }),
    // chunked, over the limit
    () => {
      const chunk = 'x'.repeat(8192)
      const body = `2000${CRLF}${chunk}${CRLF}`.repeat(4) + `0${CRLF}${CRLF}`
      return raw({ path: pick(POSTS), headers: [JSON_CT, ['Transfer-Encoding', 'chunked']], body, contentLength: false })
    },
  ])()
}

function oversizeHeaders() {
  return pick([
    () => raw({ method: 'GET', path: '/api/auth/me', headers: [['X-Big', 'a'.repeat(20 * 1024)]] }),
    () => raw({ method: 'GET', path: '/healthz', headers: Array.from({ length: 200 }, (_, i) => [`X-H${i}`, 'v']) }),
    () => raw({ method: 'GET', path: `/api/auth/me?${'q'.repeat(17 * 1024)}` }),
    () => raw({ method: 'GET', path: '/api/auth/me', headers: [['Authorization', `Bearer ${'a'.repeat(15 * 1024)}`]] }),
    () => raw({ path: '/api/auth/refresh', headers: [['Cookie', `__Host-authd_rt=${'a'.repeat(15 * 1024)}`]] }),
    () => raw({ method: 'GET', path: '/healthz', headers: Array.from({ length: 2000 }, (_, i) => [`X-${i}`, 'v'.repeat(4)]) }),
    // 101 header lines, an Origin last: refused whole (431), never served with the Origin unread
    () => raw({ path: '/api/auth/logout', headers: [...Array.from({ length: 98 }, (_, i) => [`X-J${i}`, 'v']), ['Origin', 'https://evil.test']] }),
  ])()
}

function duplicateHeaders(ctx) {
  const body = JSON.stringify({ email: email(), password: password() })
  return pick([
    () => raw({ path: '/api/auth/login', headers: [JSON_CT, ['Content-Length', String(body.length)], ['Content-Length', String(body.length + 1)]], body, contentLength: false }),
    () => raw({ path: '/api/auth/login', headers: [JSON_CT, ['Content-Length', String(body.length)], ['Content-Length', String(body.length)]], body, contentLength: false }),
    () => raw({ path: '/api/auth/login', headers: [JSON_CT, ['Content-Type', 'text/plain']], body }),
    () => raw({ path: '/api/auth/login', headers: [['Content-Type', 'text/plain'], JSON_CT], body }),
    () => raw({ method: 'GET', path: '/api/auth/me', headers: [['Authorization', `Bearer ${ctx.token}`], ['Authorization', 'Bearer junk']] }),
    () => raw({ method: 'GET', path: '/api/auth/me', headers: [['Authorization', 'Bearer junk'], ['Authorization', `Bearer ${ctx.token}`]] }),
    () => raw({ path: '/api/auth/refresh', headers: [['Cookie', `__Host-authd_rt=${randText(43)}`], ['Cookie', `__Host-authd_rt=${randText(43)}`]] }),
    () => raw({ path: '/api/auth/login', headers: [JSON_CT, ['Origin', 'http://127.0.0.1'], ['Origin', 'https://evil.test']], body }),
    () => raw({ path: '/api/auth/login', headers: [JSON_CT, ['Host', 'evil.test']], body }),
    // targets that are not a path: absolute-form and asterisk-form (400 Bad request)
    () => raw({ method: 'GET', path: `http://${randText(8)}.test/healthz` }),
    () => raw({ method: 'OPTIONS', path: '*' }),
    () => raw({ path: '/api/auth/login', headers: [JSON_CT, ['Transfer-Encoding', 'chunked'], ['Content-Length', '5']], body: `5${CRLF}{"a":${CRLF}0${CRLF}${CRLF}`, contentLength: false }),
    () => raw({ path: '/api/auth/login', headers: [JSON_CT, ['Transfer-Encoding', 'chunked'], ['Transfer-Encoding', 'identity']], body: `2${CRLF}{}${CRLF}0${CRLF}${CRLF}`, contentLength: false }),
    () => raw({ path: '/api/auth/login', headers: [JSON_CT, ['Transfer-Encoding', 'gzip, chunked']], body: `2${CRLF}{}${CRLF}0${CRLF}${CRLF}`, contentLength: false }),
    () => raw({ path: '/api/auth/login', headers: [JSON_CT, ['X-Forwarded-For', '1.2.3.4'], ['X-Forwarded-For', '5.6.7.8']], body }),
  ])()
}

function junkCookies() {
  const v = pick([
    () => randomBytes(int(1, 200)).toString('latin1').replace(/[\r\n]/g, ''),
    () => `__Host-authd_rt=${randText(43)}`,
    () => `__Host-authd_rt=${randText(int(1, 100))}`,
    () => '__Host-authd_rt=',
    () => '__Host-authd_rt',
    () => '=;=;=;;',
    () => `__Host-authd_rt="${randText(43)}"`,
    () => `__Host-authd_rt=%zz%${randText(40)}`,
    () => `__Host-authd_rt=${randText(43)}; __Host-authd_rt=${randText(43)}`,
    () => Array.from({ length: 500 }, (_, i) => `c${i}=${i}`).join('; '),
    () => `__proto__=x; constructor=y; __Host-authd_rt=${randText(43)}`,
    () => `authd_rt=${randText(43)}`,
    () => `__Host-authd_rt=${randText(42)}\u00ff`,
    () => `__Host-authd_rt=${' '.repeat(10)}${randText(43)}${' '.repeat(10)}`,
  ])()
  const headers = [['Cookie', v]]
  if (Math.random() < 0.5) headers.push(JSON_CT)
  return raw({ path: pick(['/api/auth/refresh', '/api/auth/logout']), headers, body: Math.random() < 0.5 ? pick(['{}', '{"all":true}', '{"all":"true"}', '[]', 'x']) : undefined })
}

function contentTypes() {
  const body = JSON.stringify({ email: email(), password: password() })
  const ct = pick([
    'text/plain', 'application/json; charset=latin1', 'application/json; charset=utf-16', 'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x', 'application/json, text/plain', 'APPLICATION/JSON; CHARSET="UTF-8"', 'application/json;;;',
    'application/json; charset', 'application/jsonx', '', ' ', 'application/json; charset=utf-8; charset=latin1', '*/*', 'application/*',
  ])
  const headers = ct === '' ? [] : [['Content-Type', ct]]
  return raw({ path: pick(POSTS), headers, body: Math.random() < 0.8 ? body : undefined })
}

function httpJunk() {
  return pick([
    () => ({ method: 'GET', path: '/', bytes: Buffer.from(`GET / HTTP/1.1\r\nHost: x\r\n\r\n`) }),
    () => ({ method: 'GARBAGE', path: '/', bytes: Buffer.from(`${randText(20)} ${randText(10)}\r\n\r\n`) }),
    () => ({ method: 'GET', path: '/', bytes: randomBytes(int(1, 400)) }),
    () => ({ method: 'GET', path: '/healthz', bytes: Buffer.from('GET /healthz HTTP/1.0\r\n\r\n') }),
    () => ({ method: 'GET', path: '/healthz', bytes: Buffer.from('GET /healthz\r\n\r\n') }),
    () => ({ method: 'GET', path: '/healthz', bytes: Buffer.from('GET http://127.0.0.1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n') }),
    () => ({ method: 'GET', path: '/healthz', bytes: Buffer.from('GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n') }),
    () => ({ method: 'GET', path: '/healthz', bytes: Buffer.from('GET /healthz HTTP/1.1\nHost: x\n\n') }),
    () => ({ method: 'GET', path: '/healthz', bytes: Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n') }),
    () => ({ method: 'GET', path: '/healthz', bytes: Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\n Folded: y\r\n\r\n') }),
    () => raw({ method: 'GET', path: pick(['/%00', '/%zz', '/api/auth/../auth/me', '//api/auth/me', '/api/auth/me/', '/API/AUTH/ME', '/api/auth/me%2f', '/api/auth/me;x', '/api/auth/%6d%65', '/%E0%A4%A', '/\u00e9'.replace('\u00e9', '%C3%A9'), `/${'a/'.repeat(2000)}`]) }),
    () => raw({ method: pick(['PUT', 'DELETE', 'PATCH', 'TRACE', 'PROPFIND', 'SEARCH', 'MKCOL', 'LOCK', 'PURGE']), path: pick(['/api/auth/login', '/api/auth/me', '/healthz', '/metrics', '/nope']), body: Math.random() < 0.5 ? '{}' : undefined }),
    () => raw({ method: 'OPTIONS', path: pick(['/api/auth/login', '/api/auth/me', '/healthz', '*']), headers: [['Origin', pick(['https://evil.test', 'null', 'http://127.0.0.1'])], ['Access-Control-Request-Method', 'POST']] }),
    () => raw({ method: 'HEAD', path: pick(['/healthz', '/api/auth/me', '/metrics', '/.well-known/jwks.json', '/api/auth/login']) }),
    () => raw({ method: 'GET', path: pick(['/metrics', '/.well-known/jwks.json', '/readyz', '/healthz', '/api/auth/login', '/api/auth/refresh']) }),
    () => raw({ method: 'CONNECT', path: '127.0.0.1:1' }),
    () => raw({ method: 'GET', path: '/healthz', headers: [['Expect', '100-continue']] }),
    () => raw({ path: '/api/auth/login', headers: [JSON_CT, ['Expect', '100-continue']], body: '{}' }),
    () => raw({ method: 'GET', path: '/healthz', headers: [['Upgrade', 'websocket'], ['Connection', 'Upgrade']], close: false }),
  ])()
}

function jwtAttack(ctx) {
  const t = pick(ctx.attacks)
  return { ...raw({ method: 'GET', path: '/api/auth/me', headers: [['Authorization', `Bearer ${t.token}`]] }), expect401: t.name }
}

function mutate(token) {
  const ops = [
    (s) => {
      const i = int(0, s.length - 1)
      return s.slice(0, i) + pick(B64) + s.slice(i + 1)
    },
    (s) => {
      const i = int(0, s.length - 1)
      return s.slice(0, i) + s.slice(i + 1)
    },
    (s) => {
      const i = int(0, s.length)
      return s.slice(0, i) + pick(B64 + '.=') + s.slice(i)
    },
    (s) => {
      const [h, p, sig] = s.split('.')
      return pick([`${p}.${h}.${sig}`, `${h}.${h}.${sig}`, `${h}.${p}.${sig}.${sig}`, `${h}.${p}`, `${h}..${sig}`, `.${p}.${sig}`, `${h}.${p}.${sig}=`, `${h}=.${p}.${sig}`])
    },
    (s) => {
      const i = int(0, s.length - 1)
      const c = s[i]
      return s.slice(0, i) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + s.slice(i + 1)
    },
    (s) => s.slice(0, int(1, s.length - 1)),
    (s) => s + pick(B64),
    // the last characters of the signature: base64url's spare bits
    (s) => s.slice(0, -1) + pick(B64),
  ]
  let out = token
  const n = int(1, 3)
  for (let i = 0; i < n; i++) out = pick(ops)(out)
  return out
}

function jwtMutation(ctx) {
  const token = mutate(ctx.token)
  return { ...raw({ method: 'GET', path: '/api/auth/me', headers: [['Authorization', `Bearer ${token}`]] }), expect401: token === ctx.token ? undefined : 'mutated token' }
}

function authJunk(ctx) {
  const v = pick([
    () => 'Bearer',
    () => 'Bearer ',
    () => 'Bearer  ',
    () => `Bearer ${ctx.token} extra`,
    () => `Basic ${Buffer.from('a:b').toString('base64')}`,
    () => `Token ${ctx.token}`,
    () => `Bearer\t${ctx.token}`,
    () => `Bearer ${randomBytes(int(1, 200)).toString('latin1').replace(/[\r\n\t ]/g, 'x')}`,
    () => `Bearer ${'.'.repeat(int(1, 4000))}`,
    () => `Bearer ${b64u('{}')}.${b64u('{}')}.${'A'.repeat(86)}`,
    () => Buffer.concat([Buffer.from('Bearer '), Buffer.from([0xff, 0xfe, 0x80, 0x00])]),
    () => `Bearer ${ctx.token.split('.').map(() => randText(int(1, 300))).join('.')}`,
  ])()
  return { ...raw({ method: 'GET', path: '/api/auth/me', headers: [['Authorization', v]] }), expect401: 'junk authorization' }
}

function xffJunk() {
  const v = pick([
    () => '1.2.3.4, 5.6.7.8',
    () => randText(int(1, 300), '0123456789.:,abcdef '),
    () => Array.from({ length: 2000 }, () => '1.1.1.1').join(','),
    () => '::ffff:1.2.3.4',
    () => '2001:db8::1, 127.0.0.1',
    () => ',,,,',
    () => '999.999.999.999',
    () => '[::1]:80',
    () => 'unknown',
    () => `${int(0, 255)}.${int(0, 255)}.${int(0, 255)}.${int(0, 255)}`,
  ])()
  const body = Math.random() < 0.5 ? JSON.stringify({ email: email(), password: password() }) : '{}'
  return raw({ path: pick(['/api/auth/login', '/api/auth/refresh', '/api/auth/register']), headers: [JSON_CT, ['X-Forwarded-For', v]], body })
}

function extraFields() {
  const body = pick([
    () => `{"email":"${email()}","password":"${password()}","__proto__":{"admin":true,"disabled":false}}`,
    () => JSON.stringify({ email: email(), password: password(), constructor: { prototype: { admin: true } } }),
    () => JSON.stringify({ email: email(), password: password(), id: 'admin', passwordHash: '$argon2id$v=19$m=1,t=1,p=1$AAAA$AAAA', disabled: false }),
    () => `{"email":"${email()}","email":"${email()}","password":"${password()}"}`,
    () => JSON.stringify({ email: email(), password: password(), all: true }),
  ])()
  return post(pick(['/api/auth/login', '/api/auth/register']), body)
}

function unicodeEmails() {
  const e = pick([
    () => `ＡＮＮ${randText(4)}@ＥＸＡＭＰＬＥ.test`,
    () => `${randText(5)}\u212a@example.test`, // KELVIN SIGN
    () => `\u202e${randText(5)}@example.test`,
    () => `${randText(5)}\u0301@example.test`,
    () => `  ${randText(5)}@Example.Test  `,
    () => `${randText(5)}@xn--80ak6aa92e.com`,
    () => `"${randText(3)} x"@example.test`,
    () => `${randText(3)}@@example.test`,
    () => `${randText(3)}@`,
    () => `@${randText(3)}`,
    () => `ß${randText(3)}@straße.test`,
    () => `${'\uFDFA'.repeat(20)}@example.test`,
    () => '😀'.repeat(70) + '@example.test',
  ])()
  return post(pick(['/api/auth/login', '/api/auth/register']), JSON.stringify({ email: e, password: password() }))
}

function refreshJunk(ctx) {
  const token = pick([
    () => ctx.token,
    () => randText(43),
    () => randText(44),
    () => ctx.deadRefresh,
    () => b64u(randomBytes(32)),
    () => '0'.repeat(43),
    () => randText(43).replace(/./, '+'),
  ])()
  return raw({ path: pick(['/api/auth/refresh', '/api/auth/logout']), headers: [['Cookie', `__Host-authd_rt=${token}`], JSON_CT], body: pick([undefined, '{}', '{"all":true}', 'junk']) })
}

export const GENERATORS = [
  truncated, invalidJson, wrongTypes, huge, deep, surrogates, invalidUtf8, control, email2000, oversizeBody, oversizeHeaders,
  duplicateHeaders, junkCookies, contentTypes, httpJunk, jwtAttack, jwtMutation, authJunk, xffJunk, extraFields, unicodeEmails, refreshJunk,
]

// ---------------------------------------------------------------------------------------------

/** Every named JWT attack, built against the running daemon's real token and key. */
/** The high-S twin (r, n - s) of a low-S 64-byte ES256 signature */
function highS(sig) {
  const n = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n
  const s = BigInt(`0x${sig.subarray(32).toString('hex')}`)
  return Buffer.concat([sig.subarray(0, 32), Buffer.from((n - s).toString(16).padStart(64, '0'), 'hex')])
}

export function buildAttacks({ token, keyRecord, otherUserId }) {
  const [h, p, s] = token.split('.')
  const header = decodeSegment(h)
  const claims = decodeSegment(p)
  const key = createPrivateKey(keyRecord.privateKeyPem)
  const pub = createPublicKey(keyRecord.publicKeyPem)
  const alg = keyRecord.alg
  const ours = (hdr, cl, opts) => signJws({ ...header, ...hdr }, cl, { key, alg, ...opts })
  const now = Math.floor(Date.now() / 1000)
  const foreign = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
  const foreignJwk = createPublicKey(foreign).export({ format: 'jwk' })
  const without = (o, k) => Object.fromEntries(Object.entries(o).filter(([x]) => x !== k))
  const list = {
    'alg none': `${b64u({ ...header, alg: 'none' })}.${p}.`,
    'alg None': `${b64u({ ...header, alg: 'None' })}.${p}.`,
    'alg NONE': `${b64u({ ...header, alg: 'NONE' })}.${p}.`,
    'alg none, signature kept': `${b64u({ ...header, alg: 'none' })}.${p}.${s}`,
    'alg none, no kid': `${b64u({ alg: 'none', typ: 'at+jwt' })}.${p}.`,
    'stripped signature': `${h}.${p}.`,
    'stripped signature, no dot': `${h}.${p}`,
    'tampered payload (sub)': `${h}.${b64u({ ...claims, sub: otherUserId })}.${s}`,
    'tampered payload (exp)': `${h}.${b64u({ ...claims, exp: claims.exp + 3600 })}.${s}`,
    'tampered header (kid)': `${b64u({ ...header, kid: 'other' })}.${p}.${s}`,
    // ECDSA's (r, n - s) verifies too: authd accepts only the low-S form, so a token has one text
    ...(alg === 'ES256' ? { 'high-S twin of the real token': `${h}.${p}.${highS(Buffer.from(s, 'base64url')).toString('base64url')}` } : {}),
    'HS256 with the public key (PEM)': signJws({ ...header, alg: 'HS256' }, claims, { key: keyRecord.publicKeyPem }),
    'HS256 with the public key (DER)': signJws({ ...header, alg: 'HS256' }, claims, { key: pub.export({ type: 'spki', format: 'der' }) }),
    'HS256 with the public key (JWK)': signJws({ ...header, alg: 'HS256' }, claims, { key: JSON.stringify(pub.export({ format: 'jwk' })) }),
    'RS256 header on our key': signJws({ ...header, alg: alg === 'RS256' ? 'ES256' : 'RS256' }, claims, { key, alg }),
    'foreign key, our kid': signJws(header, claims, { key: foreign, alg: 'ES256' }),
    'foreign key, embedded jwk': signJws({ ...header, alg: 'ES256', jwk: foreignJwk }, claims, { key: foreign, alg: 'ES256' }),
    'foreign key, jku': signJws({ ...header, alg: 'ES256', jku: 'http://127.0.0.1:1/jwks.json', kid: 'evil' }, claims, { key: foreign, alg: 'ES256' }),
    'unknown kid': ours({ kid: randText(16) }, claims),
    'empty kid': ours({ kid: '' }, claims),
    'kid as a number': ours({ kid: 1 }, claims),
    'kid as an array': ours({ kid: [header.kid] }, claims),
    '8 KB kid': ours({ kid: 'k'.repeat(8192) }, claims),
    '3 KB kid': ours({ kid: 'k'.repeat(3000) }, claims),
    'path traversal kid': ours({ kid: '../../../../../../etc/passwd' }, claims),
    'path traversal kid (encoded)': ours({ kid: '..%2f..%2f..%2fetc%2fpasswd' }, claims),
    'kid /dev/zero': ours({ kid: '/dev/zero' }, claims),
    'kid with NUL': ours({ kid: `${header.kid}\u0000` }, claims),
    'kid SQL': ours({ kid: "' OR '1'='1" }, claims),
    'kid __proto__': ours({ kid: '__proto__' }, claims),
    'missing exp': ours({}, without(claims, 'exp')),
    'missing iat': ours({}, without(claims, 'iat')),
    'far exp': ours({}, { ...claims, exp: now + 10 * 365 * 86400 }),
    'future iat': ours({}, { ...claims, iat: now + 3600, exp: now + 3600 + 600 }),
    'future nbf': ours({}, { ...claims, nbf: now + 3600 }),
    expired: ours({}, { ...claims, iat: now - 7200, exp: now - 3600 }),
    'exp as a string': ours({}, { ...claims, exp: String(claims.exp) }),
    'iat as a string': ours({}, { ...claims, iat: String(claims.iat) }),
    'wrong typ JWT': ours({ typ: 'JWT' }, claims),
    'no typ': signJws(without(header, 'typ'), claims, { key, alg }),
    'typ id token': ours({ typ: 'id+jwt' }, claims),
    'wrong iss': ours({}, { ...claims, iss: 'evil' }),
    'no iss': ours({}, without(claims, 'iss')),
    'wrong aud': ours({}, { ...claims, aud: 'evil' }),
    'aud list without ours': ours({}, { ...claims, aud: ['evil', 'other'] }),
    'no aud': ours({}, without(claims, 'aud')),
    'no sub': ours({}, without(claims, 'sub')),
    'sub of another user': ours({}, { ...claims, sub: otherUserId }),
    'unknown sid': ours({}, { ...claims, sid: randText(22) }),
    'empty sid': ours({}, { ...claims, sid: '' }),
    'empty sub': ours({}, { ...claims, sub: '' }),
    'sid as an object': ours({}, { ...claims, sid: { $ne: null } }),
    'payload null': `${h}.${b64u('null')}.${s}`,
    'payload array (signed)': signJws(header, '[]', { key, alg }),
    'header not JSON': `${b64u('not json')}.${p}.${s}`,
    'header array': `${b64u('[]')}.${p}.${s}`,
    'crit header': ours({ crit: ['exp'] }, claims),
    'DER signature': ours({}, claims, { der: true }),
    'zero signature': `${h}.${p}.${Buffer.alloc(64).toString('base64url')}`,
    '1-byte signature': `${h}.${p}.AA`,
    '1-char signature': `${h}.${p}.A`,
    '4 segments': `${token}.${s}`,
    '5 segments (JWE shape)': `${h}.${randText(20)}.${randText(16)}.${randText(40)}.${randText(22)}`,
    'JSON-serialized (flattened)': JSON.stringify({ protected: h, payload: p, signature: s }).replace(/\s/g, ''),
    'JSON-serialized (general)': JSON.stringify({ payload: p, signatures: [{ protected: h, signature: s }] }),
    'JSON-serialized, base64url': b64u(JSON.stringify({ protected: h, payload: p, signature: s })),
    'padded segments': `${h}==.${p}==.${s}==`,
    'signature as standard base64': `${h}.${p}.${Buffer.from(s, 'base64url').toString('base64')}`,
  }
  return Object.entries(list).map(([name, t]) => ({ name, token: t }))
}

/**
 * /me latency of the fuzzed daemon, request by request alternating with an identical daemon that
 * the fuzz never touches (which of the two goes first alternates too). On a shared machine other
 * people's load moves latencies by several times from one second to the next; a request and its
 * twin's see the same machine, so the ratio of the two p99s is the fuzzed daemon's own figure.
 */
async function meLatency(target, twin, count) {
  const t = []
  const w = []
  const one = async (x, into) => {
    const res = await me(x.url, x.token, { agent: agentFor('127.0.0.1') })
    if (res.status !== 200) throw new Error(`/me answered ${res.status} during the latency probe`)
    into.push(res.ms)
  }
  for (let i = 0; i < count; i++) {
    if (i % 2 === 0) {
      await one(target, t)
      await one(twin, w)
    } else {
      await one(twin, w)
      await one(target, t)
    }
  }
  const p99 = percentile(t, 99)
  const twinP99 = percentile(w, 99)
  return { p99, twinP99, ratio: p99 / twinP99, p50: percentile(t, 50), twinP50: percentile(w, 50) }
}

export async function run({ scale, dir, say }) {
  const cfg = SCALE[scale]
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const env = { AUTHD_SERVER_TRUST_PROXY: '127.0.0.1' }
  const d = await startDaemon({ dataDir, logFile: join(dir, 'authd.log'), env })
  // the twin: same build, same config, never fuzzed; the /me comparison is against it
  const twinDir = join(dir, 'twin-data')
  mkdirSync(twinDir, { recursive: true })
  const twinDaemon = await startDaemon({ dataDir: twinDir, logFile: join(dir, 'authd-twin.log'), env })
  say(`fuzz: daemon pid ${d.pid} on ${d.url}, twin pid ${twinDaemon.pid}`)

  // real accounts and tokens to attack
  const alice = { email: `alice-${randText(6).toLowerCase()}@example.test`, password: password() }
  const bob = { email: `bob-${randText(6).toLowerCase()}@example.test`, password: password() }
  const a = await register(d.url, alice.email, alice.password, { localAddress: '127.0.0.2' })
  const b = await register(d.url, bob.email, bob.password, { localAddress: '127.0.0.2' })
  if (a.status !== 201 || b.status !== 201) throw new Error(`setup: register answered ${a.status}/${b.status}`)
  const used = await refresh(d.url, b.refreshToken, { localAddress: '127.0.0.2' })
  const keyRecord = readKeys(dataDir).find((k) => k.state === 'active')
  const attacks = buildAttacks({ token: a.accessToken, keyRecord, otherUserId: b.userId })

  // the harness's own signature on the real claims must be accepted, or the claim attacks prove nothing
  const [h, p] = a.accessToken.split('.')
  const control = signJws(decodeSegment(h), decodeSegment(p), { key: createPrivateKey(keyRecord.privateKeyPem), alg: keyRecord.alg })
  const controlStatus = (await me(d.url, control)).status

  const t = await register(twinDaemon.url, alice.email, alice.password, { localAddress: '127.0.0.2' })
  const target = { url: d.url, token: a.accessToken }
  const twin = { url: twinDaemon.url, token: t.accessToken }

  // warm up both alike: every libuv thread has hashed once (argon2's memory is then part of the
  // baseline), and the JIT has seen thousands of /me requests
  for (const x of [d, twinDaemon]) {
    await pool(scale === 'full' ? 16 : 8, 8, (i) => login(x.url, alice.email, i % 2 === 0 ? alice.password : password(), { localAddress: '127.0.0.3' }))
  }
  await meLatency(target, twin, cfg.meWarmup)
  const before = await meLatency(target, twin, cfg.meSamples)
  const rssBefore = d.rss()
  say(`fuzz: /me before: p99 ${round(before.p99, 2)} ms, twin ${round(before.twinP99, 2)} ms (p50 ${round(before.p50, 2)} / ${round(before.twinP50, 2)}); RSS ${mb(rssBefore)} MB`)

  const ctx = { token: a.accessToken, attacks, deadRefresh: b.refreshToken }
  const tally = { sent: 0, byStatus: {}, fivexx: [], envelope: [], closed: 0, closedOther: [], errors: [], accepted: [], not401: 0, byCategory: {}, closedBy: {}, connect: 0, not401By: {} }
  const t0 = performance.now()
  await pool(cfg.requests, CONCURRENCY, async (i) => {
    const gen = GENERATORS[i % GENERATORS.length]
    const spec = gen(ctx)
    // requests that carry an X-Forwarded-For come from the trusted proxy address
    if (spec.method === 'CONNECT') tally.connect++
    const fromProxy = spec.bytes.includes('X-Forwarded-For')
    const localAddress = fromProxy ? '127.0.0.1' : loopbackAddress(100 + (i % SOURCES))
    tally.sent++
    tally.byCategory[gen.name] = (tally.byCategory[gen.name] ?? 0) + 1
    let res
    try {
      res = await rawExchange({ port: d.port, data: spec.bytes, localAddress, timeoutMs: 15_000, hasBody: spec.method !== 'HEAD' })
    } catch (err) {
      tally.errors.push(`${gen.name}: ${err.message}`)
      return
    }
    if (res.status === null) {
      tally.closed++
      tally.closedBy[gen.name] = (tally.closedBy[gen.name] ?? 0) + 1
      if (spec.method !== 'CONNECT') tally.closedOther.push(`${gen.name} ${spec.method} ${spec.path.slice(0, 40)}`)
      return
    }
    tally.byStatus[res.status] = (tally.byStatus[res.status] ?? 0) + 1
    if (res.status >= 500) tally.fivexx.push(`${gen.name} ${spec.method} ${spec.path.slice(0, 40)} → ${res.status} ${res.body.toString('utf8').slice(0, 80)}`)
    const problem = envelopeProblem(res, spec)
    if (problem !== null) tally.envelope.push(`${gen.name} ${spec.method} ${spec.path.slice(0, 40)} → ${res.status}: ${problem}`)
    // an attack is accepted if it is answered 2xx; a 400 from the HTTP parser is a refusal too
    if (spec.expect401 !== undefined && res.status < 300) tally.accepted.push(`${spec.expect401} → ${res.status}`)
    if (spec.expect401 !== undefined && res.status !== 401) {
      tally.not401++
      const why = `${spec.expect401} → ${res.status}`
      tally.not401By[why] = (tally.not401By[why] ?? 0) + 1
    }
  })
  const fuzzSeconds = (performance.now() - t0) / 1000
  // every named attack once more, deterministically, so none is left to chance
  for (const t of attacks) {
    const r = await me(d.url, t.token)
    tally.sent++
    if (r.status < 300) tally.accepted.push(`${t.name} → ${r.status}`)
    if (r.status !== 401) tally.not401++
  }
  say(`fuzz: token attacks answered other than 401: ${JSON.stringify(tally.not401By)}`)
  say(`fuzz: ${tally.sent} requests in ${round(fuzzSeconds, 1)} s; statuses ${JSON.stringify(tally.byStatus)}; closed without answer ${tally.closed} ${JSON.stringify(tally.closedBy)}`)
  for (const c of tally.closedOther.slice(0, 5)) say(`fuzz: ✗ closed without an answer: ${c}`)

  await sleep(1000)
  const after = await meLatency(target, twin, cfg.meSamples)
  const rssAfter = d.rss()
  say(`fuzz: /me after: p99 ${round(after.p99, 2)} ms, twin ${round(after.twinP99, 2)} ms (p50 ${round(after.p50, 2)} / ${round(after.twinP50, 2)}); RSS ${mb(rssAfter)} MB`)
  const alive = d.alive()
  await d.stop()
  await twinDaemon.stop()
  const lines = readLogLines(d.logFile)
  const unhandled = lines.filter((l) => l.msg === 'unhandled rejection' || l.msg === 'uncaught exception').length
  const unexpected = lines.filter((l) => l.msg === 'unexpected error')
  for (const l of [...tally.fivexx, ...tally.envelope, ...tally.accepted, ...tally.errors].slice(0, 12)) say(`fuzz: ✗ ${l}`)
  for (const l of unexpected.slice(0, 5)) say(`fuzz: ✗ logged: ${JSON.stringify(l.err ?? l).slice(0, 300)}`)

  // the fuzzed daemon's /me p99 relative to its twin's, after the fuzz against before
  const growth = (after.ratio / before.ratio - 1) * 100
  return {
    figures: [
      check('requests', tally.sent, '>=', scale === 'full' ? 5000 : 300),
      check('≥500', tally.fivexx.length, '=', 0),
      check('exits', alive ? 0 : 1, '=', 0),
      check('unhandled', unhandled, '=', 0),
      check('non-envelope', tally.envelope.length, '=', 0),
      check('attacks accepted', tally.accepted.length, '=', 0),
      check('harness errors', tally.errors.length, '=', 0),
      check('control token', controlStatus, '=', 200),
      check('RSS growth', mb(rssAfter - rssBefore), '<=', 50, 'MB'),
      timingCheck(scale)('/me p99 change', round(growth, 1), '<=', 10, '%'),
      info('named token attacks', attacks.length),
      info('attacks not 401', tally.not401),
      info('/me p99', `${round(before.p99, 2)}→${round(after.p99, 2)} ms, twin ${round(before.twinP99, 2)}→${round(after.twinP99, 2)} ms`),
      // Node closes a CONNECT it has no handler for without a word; anything else is answered
      check('closed unanswered, not CONNECT', tally.closedOther.length, '=', 0),
      info('closed unanswered', `${tally.closed} (CONNECT sent ${tally.connect})`),
    ],
    extra: { byStatus: tally.byStatus, closed: tally.closed, attacks: attacks.length, byCategory: tally.byCategory, used: used.status },
  }
}
