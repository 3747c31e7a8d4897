/**
 * The "bare" baseline: node:http answering the same small JSON /me answers, doing no work at
 * all. It is the ceiling of a Node HTTP server on this machine; authd's rows are ratios of it.
 * Prints the port it listens on, then serves until killed.
 */
import { createServer } from 'node:http'

const body = JSON.stringify({ success: true, data: { id: 'bXlJZGVudGlmaWVyMDEyMw', email: 'user-0001@bench.test' } })
const headers = {
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'content-length': Buffer.byteLength(body),
}

const server = createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
  // drain a body if one is sent, then answer
  req.resume()
  res.writeHead(200, headers)
  res.end(body)
})
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
