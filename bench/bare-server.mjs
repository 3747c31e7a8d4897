/**
 * The "bare" baseline: node:http answering the same small JSON /me answers, doing no work at
 * all. It is the ceiling of a Node HTTP server on this machine; authd's rows are ratios of it.
 *
 * With `--verify <public-key.pem>` it is the "bare + ES256" reference instead: the same server,
 * plus one ES256 signature check per request of the `Authorization: Bearer` token, 401 when it
 * fails, made as authd must make it: with jsonwebtoken (the library authd verifies with), its
 * KeyObject built once, the algorithm pinned, no claims checked (expiry ignored), no store. That is
 * the most a node:http server verifying with that library can answer on this machine when every
 * request carries a token it has not seen, which is what the "/me, a different token on every
 * request" row asks of authd.
 *
 * Prints the port it listens on, then serves until killed.
 */
import { createPublicKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import jwt from 'jsonwebtoken'

const body = JSON.stringify({ success: true, data: { id: 'bXlJZGVudGlmaWVyMDEyMw', email: 'user-0001@bench.test' } })
const headers = {
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'content-length': Buffer.byteLength(body),
}

const verifyAt = process.argv.indexOf('--verify')
const key = verifyAt === -1 ? null : createPublicKey(readFileSync(process.argv[verifyAt + 1], 'utf8'))

/** the token's ES256 signature is good (jsonwebtoken, as authd checks it; claims not looked at) */
function signed(authorization) {
  if (authorization === undefined) return false
  try {
    jwt.verify(authorization.slice('Bearer '.length), key, { algorithms: ['ES256'], ignoreExpiration: true })
    return true
  } catch {
    return false
  }
}

const server = createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
  // drain a body if one is sent, then answer
  req.resume()
  if (key !== null && !signed(req.headers.authorization)) {
    res.writeHead(401, headers)
    res.end(body)
    return
  }
  res.writeHead(200, headers)
  res.end(body)
})
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
