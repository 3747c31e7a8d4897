/**
 * A client that does nothing but probe, in a process of its own: the stress harness that drives
 * a flood is busy itself, and its own event loop would be measured along with the daemon.
 *   node stress/lib/prober.mjs <url> <source address> <count> <gap ms>
 * Sends <count> logins that the per-IP limit must refuse (429), each followed after <gap> ms by a
 * GET /healthz (the floor: a request that does nothing, in the same moments), and prints one JSON
 * document: { ms: [...], floor: [...], refused } with client-side milliseconds.
 */
import { randomBytes } from 'node:crypto'
import { agentFor, request } from './http.mjs'
import { login } from './auth.mjs'
import { password } from './secrets.mjs'

const [url, address, count, gap] = process.argv.slice(2)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const agent = agentFor(address)
const ms = []
const floor = []
let refused = 0
for (let i = 0; i < Number(count); i++) {
  const r = await login(url, `probe-${randomBytes(6).toString('hex')}@example.test`, password(), { agent })
  if (r.status === 429 && r.body?.message === 'Too many login attempts' && r.headers['retry-after'] !== undefined) refused++
  ms.push(r.ms)
  await sleep(Number(gap))
  floor.push((await request(url, 'GET', '/healthz', { agent })).ms)
  await sleep(Number(gap))
}
process.stdout.write(`${JSON.stringify({ ms, floor, refused })}\n`)
process.exit(0)
