/**
 * http/body.ts on its own, on a stream standing in for the request: the media types it takes,
 * the size limit (declared or counted), and what is a JSON object (docs/api.md, "Every response":
 * 415, 413, 400 `Invalid JSON body`; an empty body is `{}`). test/http/envelope.test.ts covers the
 * same through the app and over sockets.
 */
import type { IncomingMessage } from 'node:http'
import { PassThrough } from 'node:stream'
import t, { type Test } from 'tap'
import { errorRegistry } from '../../src/errors.js'
import { isJsonContentType, parseJsonObject, readJsonBody } from '../../src/http/body.js'

type Req = IncomingMessage & PassThrough

/** a request whose body arrives as `chunks` (then ends), with these headers */
function request(headers: Record<string, string>, chunks: Array<string | Buffer> = [], end = true): Req {
  const req = new PassThrough() as Req
  Object.assign(req, { headers })
  for (const c of chunks) req.write(c)
  if (end) req.end()
  return req
}

const JSON_HEADERS = { 'content-type': 'application/json' }

async function refused(t: Test, read: Promise<unknown>, code: 'BODY_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'INVALID_JSON'): Promise<void> {
  const { status, message } = errorRegistry[code]
  await t.rejects(read, { code, status, message }, `${status} ${message}`)
}

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

t.test('isJsonContentType: application/json in any case, charset utf-8 or none', async (t) => {
  for (const type of ['application/json', 'Application/JSON', ' application/json ', 'application/json; charset=utf-8', 'application/json;charset="UTF-8"', 'application/json; Charset = utf-8 ', 'application/json; boundary=x', 'application/json;']) {
    t.ok(isJsonContentType(type), type)
  }
  for (const type of [undefined, '', 'text/json', 'text/plain', 'application/jsonx', 'application/json-patch+json', 'application/ld+json', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/json; charset=utf8', 'application/json; charset=utf-16', 'application/json; charset=', 'application/json; charset', 'application/json; charset=utf-8; charset=latin1', 'application/json, text/plain']) {
    t.notOk(isJsonContentType(type), String(type))
  }
})

t.test('parseJsonObject: a JSON object, in strict UTF-8, with well-formed strings; otherwise null', async (t) => {
  t.same(parseJsonObject(bytes('{"email":"ann@example.com","n":[1,{"a":null}]}')), { email: 'ann@example.com', n: [1, { a: null }] })
  t.same(parseJsonObject(bytes('{}')), {})
  t.same(parseJsonObject(bytes(' \n{"a":"\\ud83d\\ude00 é"}\t')), { a: '\u{1F600} é' }, 'a surrogate pair escape, white space around')
  t.same(parseJsonObject(bytes('\uFEFF{"a":1}')), { a: 1 }, 'a UTF-8 byte order mark is dropped')
  const nulls: Array<[string, Uint8Array]> = [
    ['empty', bytes('')],
    ['an array', bytes('[{}]')],
    ['a string', bytes('"{}"')],
    ['null', bytes('null')],
    ['a number', bytes('1')],
    ['truncated', bytes('{"a":1')],
    ['two values', bytes('{} {}')],
    ['a lone continuation byte', Uint8Array.from([0x7b, 0x22, 0x80, 0x22, 0x3a, 0x31, 0x7d])],
    ['an overlong "/"', Uint8Array.from([0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x3a, 0x31, 0x7d])],
    ['UTF-16LE', Buffer.from('{"a":1}', 'utf16le')],
    ['a lone surrogate in a value', bytes('{"a":"\\ud800"}')],
    ['a lone surrogate in a key', bytes('{"\\udc00":1}')],
    ['reversed surrogates', bytes('{"a":"\\ude00\\ud83d"}')],
    ['a lone surrogate deep in arrays and objects', bytes('{"a":[1,{"b":[{"c":"x\\ud83d"}]}]}')],
  ]
  for (const [what, body] of nulls) t.equal(parseJsonObject(body), null, what)
})

t.test('parseJsonObject checks a deeply nested body without recursion', async (t) => {
  const depth = 20_000
  const deep = (leaf: string): Uint8Array => bytes('{"a":'.repeat(depth) + leaf + '}'.repeat(depth))
  t.not(parseJsonObject(deep('"ok"')), null)
  t.equal(parseJsonObject(deep('"\\ud800"')), null, 'a lone surrogate at the bottom')
})

t.test('reads a JSON object, whatever the chunks, a character split between two included', async (t) => {
  const text = JSON.stringify({ email: 'zoë@example.com', password: '日本語のパスワード' })
  const all = Buffer.from(text)
  const split = all.indexOf(Buffer.from('本')) + 1 // inside the three bytes of 本
  t.same(await readJsonBody(request(JSON_HEADERS, [all.subarray(0, split), all.subarray(split)]), 1024), JSON.parse(text))
})

t.test('an empty body is {}, whatever its type', async (t) => {
  t.same(await readJsonBody(request({}), 10), {})
  t.same(await readJsonBody(request({ 'content-type': 'text/plain', 'content-length': '0' }), 10), {})
  t.same(await readJsonBody(request(JSON_HEADERS, [Buffer.alloc(0)]), 10), {})
})

t.test('a body of exactly the limit is read; one byte more is 413', async (t) => {
  const body = JSON.stringify({ pad: 'x'.repeat(20) })
  t.same(await readJsonBody(request(JSON_HEADERS, [body]), body.length), JSON.parse(body))
  await refused(t, readJsonBody(request(JSON_HEADERS, [body]), body.length - 1), 'BODY_TOO_LARGE')
  await refused(t, readJsonBody(request(JSON_HEADERS, [body.slice(0, 10), body.slice(10)]), body.length - 1), 'BODY_TOO_LARGE')
})

t.test('a declared length over the limit is 413 before anything is read', async (t) => {
  const req = request({ ...JSON_HEADERS, 'content-length': '11' }, ['{}'], false)
  await refused(t, readJsonBody(req, 10), 'BODY_TOO_LARGE')
  t.equal(req.listenerCount('data'), 0, 'the body is not read')
})

t.test('a declared length under the limit is not believed: the bytes are counted', async (t) => {
  await refused(t, readJsonBody(request({ ...JSON_HEADERS, 'content-length': '2' }, ['{"a":"' + 'x'.repeat(20) + '"}']), 10), 'BODY_TOO_LARGE')
  await refused(t, readJsonBody(request({ ...JSON_HEADERS, 'content-length': 'lots' }, ['x'.repeat(11)]), 10), 'BODY_TOO_LARGE')
})

t.test('past the limit the rest of the body is still read to its end, not left paused', async (t) => {
  const req = request(JSON_HEADERS, [], false)
  const read = readJsonBody(req, 10)
  req.write('x'.repeat(11))
  await refused(t, read, 'BODY_TOO_LARGE')
  for (let i = 0; i < 50; i++) req.write('y'.repeat(1000))
  req.end()
  await new Promise((resolve) => req.once('end', resolve))
  t.ok(req.readableEnded, 'the request was read to its end')
})

t.test('a non-empty body that is not application/json (UTF-8) is 415; size is checked first', async (t) => {
  await refused(t, readJsonBody(request({}, ['{}']), 10), 'UNSUPPORTED_MEDIA_TYPE')
  await refused(t, readJsonBody(request({ 'content-type': 'text/plain' }, ['{}']), 10), 'UNSUPPORTED_MEDIA_TYPE')
  await refused(t, readJsonBody(request({ 'content-type': 'application/json; charset=latin1' }, ['{}']), 10), 'UNSUPPORTED_MEDIA_TYPE')
  await refused(t, readJsonBody(request({ 'content-type': 'text/plain' }, ['x'.repeat(11)]), 10), 'BODY_TOO_LARGE')
})

t.test('a body that is not a UTF-8 JSON object is 400 Invalid JSON body', async (t) => {
  for (const body of ['[]', 'null', '{"a":', 'a=b', '{"a":"\\ud800"}', Buffer.from([0x7b, 0xff, 0x7d])]) {
    await refused(t, readJsonBody(request(JSON_HEADERS, [body]), 100), 'INVALID_JSON')
  }
})

t.test('a body that fails to arrive (the client goes away) is 400 Invalid JSON body', async (t) => {
  const req = request(JSON_HEADERS, ['{"a":'], false)
  const read = readJsonBody(req, 100)
  req.destroy(new Error('aborted'))
  await refused(t, read, 'INVALID_JSON')
})

