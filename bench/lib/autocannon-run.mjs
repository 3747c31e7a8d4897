/**
 * The fallback load generator (when wrk is unavailable): autocannon in its own process, with the
 * same three kinds of request as the wrk scripts. Prints one `BENCH {json}` line.
 */
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'

const spec = JSON.parse(process.argv[2])
const opts = {
  // the request target goes in the URL (autocannon's per-request path is for `requests` only)
  url: spec.kind === 'tokens' || spec.kind === 'login' || spec.kind === 'refresh' ? spec.url : spec.url + (spec.path ?? '/'),
  connections: spec.connections,
  duration: spec.seconds,
  timeout: 5,
  headers: spec.headers ?? {},
}
if (spec.kind === 'tokens') {
  const tokens = readFileSync(spec.tokensFile, 'utf8').split('\n').filter((l) => l !== '')
  let i = Math.floor(Math.random() * tokens.length)
  opts.requests = [
    {
      method: 'GET',
      path: '/api/auth/me',
      setupRequest: (req) => {
        i = (i + 1) % tokens.length
        return { ...req, headers: { ...req.headers, authorization: `Bearer ${tokens[i]}` } }
      },
    },
  ]
} else if (spec.kind === 'login') {
  let n = 0
  opts.requests = [
    {
      method: 'POST',
      path: '/api/auth/login',
      setupRequest: (req) => {
        n = (n + 1) % 4064
        const body = JSON.stringify({ email: `bench-login-${n % spec.users}@bench.test`, password: spec.password })
        return { ...req, body, headers: { ...req.headers, 'content-type': 'application/json', 'x-forwarded-for': `10.9.${n >> 8}.${(n & 255) + 1}` } }
      },
    },
  ]
} else if (spec.kind === 'refresh') {
  // as bench/wrk/refresh.lua: every token used once, its successor back in the queue
  const queue = readFileSync(spec.tokensFile, 'utf8').split('\n').filter((l) => l !== '')
  const prefix = `${spec.cookieName}=`
  let n = 0
  opts.requests = [
    {
      method: 'POST',
      path: '/api/auth/refresh',
      setupRequest: (req) => {
        n = (n + 1) % 4064
        const headers = { ...req.headers, 'content-type': 'application/json', 'x-forwarded-for': `10.8.${n >> 8}.${(n & 255) + 1}` }
        const token = queue.shift()
        if (token !== undefined) headers.cookie = prefix + token
        return { ...req, body: '{}', headers }
      },
      onResponse: (status, _body, _context, headers) => {
        if (status !== 200) return
        // autocannon gives the headers as an object: a name seen twice has an array of values
        for (const [name, value] of Object.entries(headers)) {
          if (name.toLowerCase() !== 'set-cookie') continue
          const cookie = [value].flat().find((v) => String(v).startsWith(prefix))
          if (cookie !== undefined) queue.push(String(cookie).slice(prefix.length).split(';')[0])
          return
        }
      },
    },
  ]
} else {
  opts.method = spec.method ?? 'GET'
  if (spec.body) {
    opts.body = spec.body
    opts.headers = { ...opts.headers, 'content-type': 'application/json' }
  }
}
const r = await autocannon(opts)
const seconds = r.duration
process.stdout.write(
  `BENCH ${JSON.stringify({
    requests: r.requests.total,
    seconds,
    rps: r.requests.total / seconds,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    maxMs: r.latency.max,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  })}\n`,
)
