/**
 * Case 5 — slow clients. A thousand half-open sockets: slowloris headers (a header line every
 * second or two, never the blank line), slow bodies (full headers, then a byte at a time), and
 * sockets that connect and say nothing. Meanwhile normal requests must still be served quickly,
 * and the server must close every one of the slow sockets within 15 s of its opening.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import net from 'node:net'
import { startDaemon, sleep } from '../lib/daemon.mjs'
import { loopbackAddress, request, ResponseReader } from '../lib/http.mjs'
import { register, me } from '../lib/auth.mjs'
import { envelopeProblem } from '../lib/contract.mjs'
import { password } from '../lib/secrets.mjs'
import { pool, round } from '../lib/stats.mjs'
import { check, info } from '../lib/report.mjs'

export const id = 'slow'
export const title = 'Slow clients'

const SCALE = { full: { sockets: 1000 }, small: { sockets: 60 } }
const HOLD_LIMIT_MS = 25_000

function slowSocket(port, kind, localAddress) {
  return new Promise((resolve) => {
    const s = { kind, openedAt: 0, closedAt: null, bytes: [], reply: null }
    const socket = net.connect({ host: '127.0.0.1', port, localAddress })
    let timer
    const trickle = (piece) => {
      // a piece every 1–2 s, for as long as the server keeps the socket
      timer = setTimeout(() => {
        if (!socket.destroyed) socket.write(piece(), () => {})
        trickle(piece)
      }, 1000 + Math.random() * 1000)
    }
    socket.on('connect', () => {
      s.openedAt = performance.now()
      if (kind === 'headers') {
        socket.write('POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\n')
        let n = 0
        trickle(() => `X-Slow-${n++}: ${'x'.repeat(8)}\r\n`)
      } else if (kind === 'body') {
        socket.write('POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{')
        trickle(() => ' ')
      }
      resolve(s)
    })
    socket.on('data', (c) => s.bytes.push(c))
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(timer)
      s.closedAt = performance.now()
      if (s.openedAt === 0) resolve(s)
      if (s.bytes.length > 0) {
        const reader = new ResponseReader()
        reader.push(Buffer.concat(s.bytes))
        try {
          s.reply = reader.next(true, true)
        } catch {
          s.reply = { status: -1 }
        }
      }
    })
    s.destroy = () => socket.destroy()
  })
}

export async function run({ scale, dir, say }) {
  const cfg = SCALE[scale]
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const d = await startDaemon({ dataDir, logFile: join(dir, 'authd.log') })
  const u = await register(d.url, `slow-${Date.now()}@example.test`, password())
  const token = u.accessToken

  const kinds = ['headers', 'body', 'idle', 'headers', 'body']
  const sockets = []
  const t0 = performance.now()
  await pool(cfg.sockets, 50, async (i) => {
    sockets.push(await slowSocket(d.port, kinds[i % kinds.length], loopbackAddress(90_000 + (i % 4))))
  })
  say(`slow: ${sockets.length} slow sockets open in ${round((performance.now() - t0) / 1000, 1)} s`)

  // normal requests while they hang on: each on a fresh connection (it has to get through accept)
  const normal = []
  let failures = 0
  while (performance.now() - t0 < HOLD_LIMIT_MS && sockets.some((s) => s.closedAt === null)) {
    for (const r of await Promise.all([
      request(d.url, 'GET', '/healthz', { localAddress: '127.0.0.2', agent: false, timeoutMs: 5000 }).catch(() => null),
      me(d.url, token, { localAddress: '127.0.0.3', agent: false, timeoutMs: 5000 }).catch(() => null),
    ])) {
      if (r === null || r.status !== 200) failures++
      else normal.push(r.ms)
    }
    await sleep(500)
  }
  const stillOpen = sockets.filter((s) => s.closedAt === null)
  for (const s of stillOpen) s.destroy()
  const lifetimes = sockets.filter((s) => s.closedAt !== null && s.openedAt > 0).map((s) => s.closedAt - s.openedAt)
  const maxLife = Math.max(...lifetimes, stillOpen.length > 0 ? Infinity : 0) / 1000
  const byKind = {}
  for (const s of sockets) {
    const k = (byKind[s.kind] ??= { n: 0, maxS: 0, replies: {} })
    k.n++
    if (s.closedAt !== null) k.maxS = Math.max(k.maxS, round((s.closedAt - s.openedAt) / 1000, 1))
    const st = s.reply?.status ?? 'none'
    k.replies[st] = (k.replies[st] ?? 0) + 1
  }
  const badReplies = sockets.filter((s) => s.reply && s.reply.status !== null && (s.reply.status === -1 || envelopeProblem(s.reply, { method: 'POST', path: '/api/auth/login' }) !== null)).length
  const alive = d.alive()
  await d.stop()
  say(`slow: lifetimes by kind ${JSON.stringify(byKind)}; normal requests max ${round(Math.max(...normal), 1)} ms over ${normal.length}`)
  return {
    figures: [
      check('sockets', sockets.length, '>=', cfg.sockets),
      check('normal request max', round(Math.max(...normal), 1), '<=', 1000, 'ms'),
      check('normal failed', failures, '=', 0),
      check('slowest close', round(maxLife, 1), '<=', 15, 's'),
      check('left open', stillOpen.length, '=', 0),
      check('non-envelope replies', badReplies, '=', 0),
      check('exits', alive ? 0 : 1, '=', 0),
      info('normal requests', normal.length),
    ],
    extra: { byKind },
  }
}
