/**
 * A client that does nothing but probe, in a process of its own: the stress harness that drives
 * a flood is busy itself, and its own event loop would be measured along with the daemon. It
 * speaks HTTP/1.1 over one keep-alive socket with requests written whole: node's HTTP client
 * adds about 0.4 ms to every exchange here (more in the tail), which is the client's time, not
 * authd's.
 *   node stress/lib/prober.mjs <url> <source address> <count> <gap ms>
 * Sends <count> logins that the per-IP limit must refuse (429), each followed after <gap> ms by a
 * GET /healthz (the floor: a request that does nothing, in the same moments), and prints one JSON
 * document: { ms: [...], floor: [...], refused } with client-side milliseconds.
 */
import net from 'node:net'
import { randomBytes } from 'node:crypto'
import { password } from './secrets.mjs'

const [url, address, count, gap] = process.argv.slice(2)
const target = new URL(url)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const socket = net.connect({ host: target.hostname, port: Number(target.port), localAddress: address })
await new Promise((resolve, reject) => {
  socket.once('connect', resolve)
  socket.once('error', reject)
})
socket.setNoDelay(true)
socket.on('error', (err) => {
  process.stderr.write(`prober: ${err.message}\n`)
  process.exit(1)
})

let pending = Buffer.alloc(0)
let waiting = null
socket.on('data', (chunk) => {
  pending = Buffer.concat([pending, chunk])
  const end = pending.indexOf('\r\n\r\n')
  if (end === -1 || waiting === null) return
  const head = pending.subarray(0, end).toString('latin1')
  const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
  if (pending.length < end + 4 + length) return
  const body = pending.subarray(end + 4, end + 4 + length).toString('utf8')
  pending = pending.subarray(end + 4 + length)
  const done = waiting
  waiting = null
  done({ status: Number(head.slice(9, 12)), head, body })
})
socket.on('close', () => {
  if (waiting !== null) {
    process.stderr.write('prober: the daemon closed the connection\n')
    process.exit(1)
  }
})

/** one exchange on the socket: status, head, body, and client-side ms */
function exchange(text) {
  return new Promise((resolve) => {
    const started = performance.now()
    waiting = (r) => resolve({ ...r, ms: performance.now() - started })
    socket.write(text)
  })
}

const host = `Host: ${target.host}\r\n`
const ms = []
const floor = []
let refused = 0
for (let i = 0; i < Number(count); i++) {
  const json = JSON.stringify({ email: `probe-${randomBytes(6).toString('hex')}@example.test`, password: password() })
  const r = await exchange(`POST /api/auth/login HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`)
  let message
  try {
    message = JSON.parse(r.body).message
  } catch {
    message = undefined
  }
  if (r.status === 429 && message === 'Too many login attempts' && /\r\nretry-after: *\d+/i.test(r.head)) refused++
  ms.push(r.ms)
  await sleep(Number(gap))
  floor.push((await exchange(`GET /healthz HTTP/1.1\r\n${host}\r\n`)).ms)
  await sleep(Number(gap))
}
socket.end()
process.stdout.write(`${JSON.stringify({ ms, floor, refused })}\n`)
process.exit(0)
