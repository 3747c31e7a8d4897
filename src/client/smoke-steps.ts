/**
 * The smoke test of a running daemon, over HTTP: login → me → refresh → me → logout → refresh,
 * where the last refresh (with the token that was live before logout) must be refused. Each
 * step is reported through callbacks as it happens, so a terminal UI can show it live; the
 * function itself prints nothing and never throws for a failed step.
 *
 * src/client holds what talks to a running authd from outside, over HTTP: `authctl smoke` and the
 * TUI's Smoke view both use it, so neither the TUI imports the CLI nor the CLI the TUI for it.
 */
import type { Dispatcher } from 'undici'
import { AppError, isAppError } from '../errors.js'

export type SmokeStepName = 'login' | 'me' | 'refresh' | 'me_refreshed' | 'logout' | 'refresh_after_logout'

export interface SmokeStep {
  /** 1-based position */
  index: number
  name: SmokeStepName
  method: 'GET' | 'POST'
  path: string
  /** the status this step must answer with */
  expectedStatus: number
  /** the status received; null if no response came (connection refused, timeout) or the step was skipped */
  status: number | null
  /** wall time of the request, milliseconds (0 when skipped) */
  ms: number
  outcome: 'passed' | 'failed' | 'skipped'
  /** why it failed, one sentence without secrets; null otherwise */
  error: string | null
  /** the Retry-After header of the answer (a 429 or 503 says when to try again), else null */
  retryAfter: string | null
}

export interface SmokeResult {
  ok: boolean
  url: string
  email: string
  steps: SmokeStep[]
  /** the first failing step, or null */
  failedStep: SmokeStepName | null
  totalMs: number
}

export interface SmokeOptions {
  /** the daemon's base URL, e.g. http://127.0.0.1:8080 */
  url: string
  email: string
  password: string
  /** per request; default 5000 */
  timeoutMs?: number
  /** called before each step's request */
  onStart?: (step: Pick<SmokeStep, 'index' | 'name' | 'method' | 'path'>) => void
  /** called with each step's result, in order, skipped ones included */
  onStep?: (step: SmokeStep) => void
}

const PLAN: Array<Pick<SmokeStep, 'name' | 'method' | 'path' | 'expectedStatus'>> = [
  { name: 'login', method: 'POST', path: '/api/auth/login', expectedStatus: 200 },
  { name: 'me', method: 'GET', path: '/api/auth/me', expectedStatus: 200 },
  { name: 'refresh', method: 'POST', path: '/api/auth/refresh', expectedStatus: 200 },
  { name: 'me_refreshed', method: 'GET', path: '/api/auth/me', expectedStatus: 200 },
  { name: 'logout', method: 'POST', path: '/api/auth/logout', expectedStatus: 200 },
  { name: 'refresh_after_logout', method: 'POST', path: '/api/auth/refresh', expectedStatus: 401 },
]

export const SMOKE_STEP_NAMES: readonly SmokeStepName[] = PLAN.map((p) => p.name)

interface Reply {
  status: number
  body: Record<string, unknown> | undefined
  setCookies: string[]
  retryAfter: string | null
}

/** A failed check inside a step: `why` is what the step reports. */
const checkFailed = (why: string): AppError => new AppError('SMOKE_CHECK_FAILED', { message: why })

/** cookies by name, as the daemon set them (a browser-like jar for one origin) */
class Jar {
  private cookies = new Map<string, string>()
  take(setCookies: string[]): void {
    for (const c of setCookies) {
      const pair = c.split(';')[0]!
      const eq = pair.indexOf('=')
      if (eq <= 0) continue
      const name = pair.slice(0, eq).trim()
      const value = pair.slice(eq + 1).trim()
      if (value === '' || /;\s*max-age=0\s*(;|$)/i.test(c)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }
  header(): string {
    return [...this.cookies].map(([n, v]) => `${n}=${v}`).join('; ')
  }
  get size(): number {
    return this.cookies.size
  }
}

/** Why a request to `url` got no answer, naming the URL (the one given, or server.public_url). */
export function describeNetworkError(err: unknown, timeoutMs: number, url: string): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string } }
  const code = e.code ?? e.cause?.code
  if (code === 'ECONNREFUSED') return `connection refused at ${url} (is authd running at this URL?)`
  // undici's own timeouts, and the deadline of the whole request (AbortSignal.timeout)
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || (err as { name?: string } | null)?.name === 'TimeoutError') {
    return `no response within ${timeoutMs} ms`
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    let host = url
    try {
      host = new URL(url).hostname
    } catch {
      // the URL was checked before; keep it whole
    }
    return `host not found: ${host} (in ${url})`
  }
  // TLS spoken to a plain-HTTP port (an https URL for authd's own listener, say): OpenSSL's
  // message runs over several lines
  if (typeof code === 'string' && code.startsWith('ERR_SSL_')) return `TLS failed at ${url} (${code}): does that port serve https?`
  return `request to ${url} failed: ${(e.message ?? String(err)).split('\n')[0]!.trim()}`
}

/** ` (Retry-After: 37 s)` for a header in seconds, the header as sent otherwise (an HTTP date) */
const retryNote = (retryAfter: string | null): string =>
  retryAfter === null ? '' : ` (Retry-After: ${/^\d+$/.test(retryAfter) ? `${retryAfter} s` : retryAfter})`

/** The smoke steps against `opts.url`. Resolves with every step's result; `ok` only if all passed. */
export async function runSmoke(opts: SmokeOptions): Promise<SmokeResult> {
  const { Agent, request } = await import('undici')
  const timeoutMs = opts.timeoutMs ?? 5000
  const base = opts.url.replace(/\/+$/, '')
  const agent = new Agent({ connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, keepAliveTimeout: 1000 })
  const jar = new Jar()
  const started = performance.now()
  const steps: SmokeStep[] = []
  let userId = ''
  let accessToken = ''
  let cookieBeforeLogout = ''

  const send = async (method: 'GET' | 'POST', path: string, headers: Record<string, string>, json?: unknown): Promise<Reply> => {
    const res = await request(base + path, {
      method,
      dispatcher: agent as Dispatcher,
      // the whole request, its body read included: a server that trickles bytes is given up too
      signal: AbortSignal.timeout(timeoutMs),
      headers: json === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    })
    const text = await res.body.text()
    let body: Record<string, unknown> | undefined
    try {
      const parsed: unknown = JSON.parse(text)
      body = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined
    } catch {
      body = undefined
    }
    const sc = res.headers['set-cookie']
    const ra = res.headers['retry-after']
    const retryAfter = ra === undefined ? null : (Array.isArray(ra) ? ra[0] : ra)?.trim() ?? null
    return { status: res.statusCode, body, setCookies: sc === undefined ? [] : Array.isArray(sc) ? sc : [sc], retryAfter }
  }
  const data = (r: Reply): Record<string, unknown> => {
    const d = r.body?.data
    if (r.body?.success !== true || typeof d !== 'object' || d === null) throw checkFailed('the body is not {success:true, data:{…}}')
    return d as Record<string, unknown>
  }
  const takeAccessToken = (r: Reply): void => {
    const token = data(r).accessToken
    if (typeof token !== 'string' || token === '') throw checkFailed('no accessToken in the body')
    accessToken = token
  }
  const checkMe = (r: Reply): void => {
    if (data(r).id !== userId) throw checkFailed('/me answered for another user')
  }

  // what each step sends, and what it checks beyond the status
  const actions: Record<SmokeStepName, () => Promise<{ reply: Reply; check: (r: Reply) => void }>> = {
    login: async () => ({
      reply: await send('POST', '/api/auth/login', {}, { email: opts.email, password: opts.password }),
      check: (r) => {
        takeAccessToken(r)
        const user = data(r).user as { id?: unknown } | undefined
        if (typeof user?.id !== 'string') throw checkFailed('no user id in the body')
        userId = user.id
        jar.take(r.setCookies)
        if (jar.size === 0) throw checkFailed('no refresh cookie was set')
      },
    }),
    me: async () => ({ reply: await send('GET', '/api/auth/me', { authorization: `Bearer ${accessToken}` }), check: checkMe }),
    refresh: async () => {
      const before = jar.header()
      return {
        reply: await send('POST', '/api/auth/refresh', { cookie: before }),
        check: (r) => {
          takeAccessToken(r)
          jar.take(r.setCookies)
          if (jar.header() === before || jar.size === 0) throw checkFailed('the refresh cookie was not rotated')
        },
      }
    },
    me_refreshed: async () => ({ reply: await send('GET', '/api/auth/me', { authorization: `Bearer ${accessToken}` }), check: checkMe }),
    logout: async () => {
      cookieBeforeLogout = jar.header()
      return {
        reply: await send('POST', '/api/auth/logout', { cookie: cookieBeforeLogout }),
        check: (r) => {
          data(r)
          jar.take(r.setCookies)
        },
      }
    },
    // the token that was live until logout must now be refused
    refresh_after_logout: async () => ({ reply: await send('POST', '/api/auth/refresh', { cookie: cookieBeforeLogout }), check: () => {} }),
  }

  let failed: SmokeStep | null = null
  try {
    for (const [i, plan] of PLAN.entries()) {
      const head = { index: i + 1, name: plan.name, method: plan.method, path: plan.path }
      if (failed !== null) {
        const skipped: SmokeStep = { ...head, expectedStatus: plan.expectedStatus, status: null, ms: 0, outcome: 'skipped', error: null, retryAfter: null }
        steps.push(skipped)
        opts.onStep?.(skipped)
        continue
      }
      opts.onStart?.(head)
      const t0 = performance.now()
      let status: number | null = null
      let error: string | null = null
      let retryAfter: string | null = null
      try {
        const { reply, check } = await actions[plan.name]()
        status = reply.status
        retryAfter = reply.retryAfter
        if (reply.status !== plan.expectedStatus) {
          const message = typeof reply.body?.message === 'string' ? `: ${reply.body.message}` : ''
          // a 429 (or 503) says when the limit lets the smoke user in again
          error = `expected ${plan.expectedStatus}, got ${reply.status}${message}${retryNote(reply.retryAfter)}`
        } else check(reply)
      } catch (err) {
        error = isAppError(err) && err.code === 'SMOKE_CHECK_FAILED' ? err.message : describeNetworkError(err, timeoutMs, base)
      }
      const step: SmokeStep = {
        ...head,
        expectedStatus: plan.expectedStatus,
        status,
        ms: Math.round(performance.now() - t0),
        outcome: error === null ? 'passed' : 'failed',
        error,
        retryAfter,
      }
      if (error !== null) failed = step
      steps.push(step)
      opts.onStep?.(step)
    }
    // A run that stopped after its login leaves that session live: signed out here, as the
    // logout step would have, whatever the daemon answers (nothing is reported of it).
    const loggedOut = steps.some((s) => s.name === 'logout' && s.outcome === 'passed')
    if (!loggedOut && jar.size > 0) await send('POST', '/api/auth/logout', { cookie: jar.header() }).catch(() => {})
  } finally {
    await agent.close()
  }
  return { ok: failed === null, url: base, email: opts.email, steps, failedStep: failed?.name ?? null, totalMs: Math.round(performance.now() - started) }
}
