/**
 * Case 10 — junk requests. (a) Metrics cardinality: absolute-form targets (`GET http://x/healthz`)
 * and unknown paths, each a different URL, must not each make a metrics series of their own (the
 * route label is a route template, or one label for everything else): /metrics grows by a fixed
 * amount, not per request. (b) 404 log flood: one client sending 404s as fast as one keep-alive
 * connection goes gets one request line at once and one `request_repeated` line per 10 s, not a
 * line per request (docs/observability.md).
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { readLogLines, sleep, startDaemon } from '../lib/daemon.mjs'
import { get, loopbackAddress, rawExchange, RawConnection } from '../lib/http.mjs'
import { pool, round } from '../lib/stats.mjs'
import { check, info } from '../lib/report.mjs'

export const id = 'junk'
export const title = 'Junk requests: metrics cardinality, 404 log flood'

const SCALE = {
  full: { absolute: 10_000, floodMs: 10_000, floodMax: 2_000_000, linesPerS: 1 },
  small: { absolute: 400, floodMs: 1_500, floodMax: 100_000, linesPerS: 3 },
}

export async function run({ scale, dir, say }) {
  const cfg = SCALE[scale]
  const figures = []
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const logFile = join(dir, 'authd.log')
  const d = await startDaemon({ dataDir, logFile })

  // (a) every request a different absolute-form URL (half) or unknown path (half), 16 at a time
  const size = async () => (await get(d.url, '/metrics')).text.length
  const before = await size()
  const statuses = new Map()
  say(`junk: ${cfg.absolute} absolute-form and unknown-path requests`)
  await pool(cfg.absolute, 16, async (i) => {
    const target = i % 2 === 0 ? `http://h${i}.example.test/healthz?i=${i}` : `/no/such/page/${i}`
    const r = await rawExchange({ port: d.port, data: `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`, localAddress: loopbackAddress(1000 + (i % 200)) })
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1)
  })
  const grown = (await size()) - before
  figures.push(
    check('absolute-form → 400', statuses.get(400) ?? 0, '=', cfg.absolute / 2),
    check('unknown path → 404', statuses.get(404) ?? 0, '=', cfg.absolute / 2),
    check('/metrics growth', round(grown / 1024, 2), '<=', 10, 'KB'),
  )

  // (b) one client, one keep-alive connection, 404s pipelined 32 deep for floodMs
  const ip = '127.0.0.1'
  const conn = new RawConnection(d.port, ip)
  await conn.ready
  const req = (i) => `GET /flood/${i} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`
  let sent = 0
  let answered404 = 0
  // the lines of (a) still in the daemon's log batch (written 100 ms after its first line) are
  // on file before the count starts, or they would be counted as the flood's
  const linesBefore = await settledLineCount(logFile)
  const t0 = performance.now()
  await pool(32, 32, async () => {
    while (performance.now() - t0 < cfg.floodMs && sent < cfg.floodMax) {
      const r = await conn.send(req(sent++))
      if (r.status === 404) answered404++
    }
  })
  const seconds = (performance.now() - t0) / 1000
  conn.close()
  // a clean stop writes the counts gathered so far (the period's `request_repeated` line)
  await d.stop()
  const lines = readLogLines(logFile).slice(linesBefore)
  const floodLines = lines.filter((l) => (l.msg === 'request' && l.status === 404 && l.route === 'unknown') || (l.event === 'request_repeated' && l.ip === ip))
  const repeated = lines.filter((l) => l.event === 'request_repeated' && l.ip === ip && l.status === 404).reduce((n, l) => n + l.repeated, 0)
  figures.push(
    info('404s answered', answered404),
    info('404s/s', round(answered404 / seconds, 0)),
    check('404 log lines/s', round(floodLines.length / seconds, 2), '<=', cfg.linesPerS),
    check('404s accounted in the log', floodLines.filter((l) => l.msg === 'request').length + repeated, '=', answered404),
  )
  return { figures }
}

/** the number of lines in the log once it has stopped growing: unchanged across 250 ms (at most 5 s) */
async function settledLineCount(file) {
  let n = readLogLines(file).length
  for (const end = performance.now() + 5_000; performance.now() < end; ) {
    await sleep(250)
    const now = readLogLines(file).length
    if (now === n) return n
    n = now
  }
  return n
}
