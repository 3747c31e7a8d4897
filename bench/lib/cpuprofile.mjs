/**
 * Summarises a V8 .cpuprofile (node --cpu-prof): self time by function and by where the code
 * lives (authd's own modules, each dependency, node internals, GC, native, idle).
 */
import { readFileSync } from 'node:fs'

export function summarise(file, top = 25, lastSeconds = Infinity) {
  const p = JSON.parse(readFileSync(file, 'utf8'))
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const self = new Map()
  // samples[i] was taken timeDeltas[i] µs after samples[i-1]; only the last `lastSeconds` count
  const from = p.endTime - lastSeconds * 1e6
  let t = p.startTime
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0
    t += dt
    if (t < from) continue
    self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + dt)
  }
  let total = 0
  let idle = 0
  const fns = new Map()
  const areas = new Map()
  for (const [id, us] of self) {
    const n = byId.get(id)
    const cf = n.callFrame
    total += us
    if (cf.functionName === '(idle)') {
      idle += us
      continue
    }
    const where = area(cf.url, cf.functionName)
    const name = `${cf.functionName || '(anonymous)'} ${shortUrl(cf.url)}${cf.url ? `:${cf.lineNumber + 1}` : ''}`
    fns.set(name, (fns.get(name) ?? 0) + us)
    areas.set(where, (areas.get(where) ?? 0) + us)
  }
  const busy = total - idle
  const pct = (us) => ((100 * us) / busy).toFixed(1).padStart(5) + '%'
  const sorted = (m) => [...m].sort((a, b) => b[1] - a[1])
  return {
    busyMs: busy / 1000,
    idleMs: idle / 1000,
    areas: sorted(areas).map(([k, us]) => `${pct(us)}  ${k}`),
    functions: sorted(fns)
      .slice(0, top)
      .map(([k, us]) => `${pct(us)}  ${k}`),
  }
}

function shortUrl(url) {
  if (!url) return ''
  const nm = url.lastIndexOf('node_modules/')
  if (nm !== -1) return url.slice(nm + 'node_modules/'.length)
  const d = url.indexOf('/dist/')
  if (d !== -1) return url.slice(d + 1)
  return url.replace(/^file:\/\//, '')
}

function area(url, fn) {
  if (fn === '(garbage collector)') return 'GC'
  if (fn === '(program)') return 'native (V8/libuv/OpenSSL, outside JS)'
  if (!url) return 'native'
  if (url.startsWith('node:')) {
    const m = /^node:(internal\/)?([a-z_]+)/.exec(url)
    return `node:${m?.[2] ?? url}`
  }
  const nm = url.lastIndexOf('node_modules/')
  if (nm !== -1) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/')
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]
  }
  const d = url.indexOf('/dist/')
  if (d !== -1) return url.slice(d + 1)
  return url
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const s = summarise(process.argv[2], Number(process.argv[3] ?? 25), Number(process.argv[4] ?? Infinity))
  console.log(`busy ${s.busyMs.toFixed(0)} ms, idle ${s.idleMs.toFixed(0)} ms\n\nby area:\n${s.areas.join('\n')}\n\ntop functions (self time):\n${s.functions.join('\n')}`)
}
