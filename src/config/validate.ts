import { isIP } from 'node:net'
import { resolve } from 'node:path'
import ipaddr from 'ipaddr.js'
import { configError, showValue } from './config-error.js'
import { derivePublicUrl } from './defaults.js'
import { parseDuration } from './duration.js'
import type { KeyPath } from './keys.js'
import type { Entry, Layer } from './layer.js'
import { parseRate } from './rate.js'
import { parseSize } from './size.js'
import { redactUrl } from './redact-url.js'
import type { Config, RateRule } from './types.js'

/** the longest Unix socket path Linux takes (sun_path: 108 bytes with its NUL) */
export const MAX_SOCKET_PATH = 107

/**
 * The longest duration a setting takes. Times are kept as dates: a key's start is now plus
 * tokens.key_lead, a session's end now plus its TTL; 99999999d past now is past the last date a
 * Date can hold (year 275760), and every listing that showed it failed. Anything longer than a
 * century is a typo.
 */
const MAX_DURATION = '36500d'
const MAX_DURATION_MS = parseDuration(MAX_DURATION)

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/
// RFC 6265 cookie-name: an RFC 7230 token
const COOKIE_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
// visible ASCII except ";" (it would end the attribute)
const COOKIE_PATH = /^\/[\x21-\x3A\x3C-\x7E]*$/

/**
 * Checks every effective value and builds the typed Config. `layer` holds every key (defaults
 * merged under the other sources) except possibly server.public_url. Throws CONFIG_INVALID naming
 * the key, the value and where it came from.
 */
export function buildConfig(layer: Layer, options: { dev: boolean; cwd: string }): Config {
  const entry = (path: KeyPath): Entry => {
    const found = layer.get(path)
    if (found === undefined) throw new Error(`config: ${path} has no value, not even a default`)
    return found
  }
  const fail = (path: string, problem: string, at: Entry, value: unknown = at.value): never => {
    throw configError(`config: ${path} ${problem} (got ${showValue(value)} ${at.source})`, path)
  }
  // A rule between two keys: name both values and where each came from, since either may be the fix.
  const conflict = (path: KeyPath, problem: string, other: KeyPath): never => {
    const at = entry(path)
    const also = entry(other)
    const detail = `got ${showValue(at.value)} ${at.source}; ${other} is ${showValue(also.value)} ${also.source}`
    throw configError(`config: ${path} ${problem} (${detail})`, path)
  }

  const string = (path: KeyPath, problem = 'must be a non-empty string', ok = (_: string) => true): string => {
    const at = entry(path)
    if (typeof at.value !== 'string' || at.value === '' || !ok(at.value)) return fail(path, problem, at)
    return at.value
  }
  const integer = (path: KeyPath, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    const at = entry(path)
    const { value } = at
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
      return fail(path, max === Number.MAX_SAFE_INTEGER ? `must be an integer >= ${min}` : `must be an integer ${min}-${max}`, at)
    }
    return value
  }
  const boolean = (path: KeyPath): boolean => {
    const at = entry(path)
    return typeof at.value === 'boolean' ? at.value : fail(path, 'must be true or false', at)
  }
  const oneOf = <T extends string>(path: KeyPath, options: readonly T[]): T => {
    const at = entry(path)
    return options.includes(at.value as T) ? (at.value as T) : fail(path, `must be one of ${options.join(', ')}`, at)
  }
  const parsed = <T>(path: KeyPath, parse: (text: string) => T, problem: string): T => {
    const at = entry(path)
    try {
      if (typeof at.value === 'string') return parse(at.value)
    } catch {}
    return fail(path, problem, at)
  }
  const duration = (path: KeyPath, { allowZero = false, wholeSeconds = false } = {}): number => {
    const ms = parsed(path, parseDuration, 'must be a duration like "15m" (an integer followed by ms, s, m, h or d)')
    if (ms > MAX_DURATION_MS) return fail(path, `must be a duration of at most ${MAX_DURATION}`, entry(path))
    // what a token's exp or a cookie's Max-Age carries is whole seconds: 999ms would be 0
    if (wholeSeconds && ms % 1000 !== 0) return fail(path, 'must be a whole number of seconds (tokens and cookies carry seconds)', entry(path))
    return ms === 0 && !allowZero ? fail(path, 'must be a duration greater than 0', entry(path)) : ms
  }
  const size = (path: KeyPath): number => {
    const bytes = parsed(path, parseSize, 'must be a size like "16kb" (an integer followed by b, kb, mb or gb)')
    return bytes === 0 ? fail(path, 'must be a size greater than 0', entry(path)) : bytes
  }
  const rate = (path: KeyPath): RateRule => {
    const rule = parsed(path, parseRate, 'must be a rate "<count>/<duration>" with count >= 1, e.g. "5/15m"')
    return rule.windowMs > MAX_DURATION_MS ? fail(path, `must be a rate over a duration of at most ${MAX_DURATION}`, entry(path)) : rule
  }
  const list = (path: KeyPath, problem: string, normalise: (item: string) => string | null): string[] => {
    const at = entry(path)
    if (!Array.isArray(at.value)) return fail(path, 'must be a list of strings', at)
    return at.value.map((item: unknown) => {
      const normalised = typeof item === 'string' ? normalise(item) : null
      return normalised ?? fail(path, problem, at, item)
    })
  }

  const host = string('server.host', 'must be an IP address or host name', (h) => isIP(h) !== 0 || HOSTNAME.test(h))
  const port = integer('server.port', 0, 65535)
  const publicUrlEntry = layer.get('server.public_url')
  const publicUrl =
    publicUrlEntry === undefined
      ? derivePublicUrl(host, port)
      : string('server.public_url', 'must be an absolute http(s) URL without credentials', isPublicUrl)

  const secure = boolean('cookie.secure')
  const sameSite = oneOf('cookie.same_site', ['Strict', 'Lax', 'None'] as const)
  const cookiePath = string('cookie.path', 'must start with "/" and hold no spaces, ";" or control characters', (p) =>
    COOKIE_PATH.test(p),
  )
  const cookieName = string('cookie.name', 'must be a cookie name (letters, digits and !#$%&\'*+-.^_`|~)', (n) =>
    COOKIE_TOKEN.test(n),
  )
  // the device cookie's names (http/device-cookie.ts): a refresh cookie of the same name would be
  // written over by it on every login, and no refresh would ever work
  if (cookieName === 'authd_device' || cookieName === '__Host-authd_device') {
    fail('cookie.name', "must not be the device cookie's name (authd_device, __Host-authd_device)", entry('cookie.name'))
  }
  // Browsers drop such cookies outright, which would silently break refresh.
  if (sameSite === 'None' && !secure) conflict('cookie.same_site', 'None requires cookie.secure = true', 'cookie.secure')
  if (/^__(secure|host)-/i.test(cookieName) && !secure) {
    conflict('cookie.secure', 'must be true when cookie.name has a __Secure- or __Host- prefix', 'cookie.name')
  }
  if (/^__host-/i.test(cookieName) && cookiePath !== '/') {
    conflict('cookie.path', 'must be "/" when cookie.name has a __Host- prefix', 'cookie.name')
  }

  // "" (the default) listens on host and port; a path is resolved against the working directory
  const socketPath = (): string | null => {
    const at = entry('server.socket')
    if (typeof at.value !== 'string' || at.value.includes('\0')) return fail('server.socket', 'must be a file path, or "" for none', at)
    if (at.value === '') return null
    const path = resolve(options.cwd, at.value)
    // sun_path holds 108 bytes with its NUL (the daemon checks it again when it binds)
    if (Buffer.byteLength(path) > MAX_SOCKET_PATH) return fail('server.socket', `must be at most ${MAX_SOCKET_PATH} bytes as an absolute path (a Unix socket's limit)`, at)
    return path
  }

  // store.url is required with postgres, and is shown in messages with its password as ***
  const backend = oneOf('store.backend', ['lmdb', 'postgres'] as const)
  const storeUrl = (): string => {
    const at = entry('store.url')
    if (typeof at.value !== 'string') return fail('store.url', 'must be a PostgreSQL URL, or "" with store.backend = "lmdb"', at)
    const url = at.value
    if (url === '') {
      if (backend === 'postgres') conflict('store.url', 'is required when store.backend is "postgres" (e.g. "postgres://authd@db.internal:5432/authd")', 'store.backend')
      return url
    }
    if (!isPostgresUrl(url)) return fail('store.url', 'must be a URL like "postgres://authd@db.internal:5432/authd"', at, redactUrl(url))
    return url
  }

  const minLength = integer('passwords.min_length', 1, 4096)
  const maxLength = integer('passwords.max_length', 1, 4096)
  if (maxLength < minLength) conflict('passwords.max_length', 'must be >= passwords.min_length', 'passwords.min_length')

  return {
    server: {
      host,
      port,
      trustProxy: list('server.trust_proxy', 'entries must be IP addresses or CIDRs like "10.0.0.0/8"', normaliseCidr),
      bodyLimit: size('server.body_limit'),
      publicUrl,
      socket: socketPath(),
    },
    store: { path: resolve(options.cwd, string('store.path')), backend, url: storeUrl(), poolSize: integer('store.pool_size', 1, 1000) },
    tokens: {
      algorithm: oneOf('tokens.algorithm', ['ES256', 'RS256'] as const),
      accessTtlMs: duration('tokens.access_ttl', { wholeSeconds: true }),
      issuer: string('tokens.issuer'),
      audience: string('tokens.audience'),
      clockToleranceMs: duration('tokens.clock_tolerance', { allowZero: true }),
      keyLeadMs: duration('tokens.key_lead', { allowZero: true }),
    },
    sessions: {
      idleTtlMs: duration('sessions.idle_ttl'),
      absoluteTtlMs: duration('sessions.absolute_ttl', { wholeSeconds: true }),
      reuseGraceMs: duration('sessions.reuse_grace', { allowZero: true }),
      maxPerUser: integer('sessions.max_per_user', 1, 100000),
    },
    cookie: { name: cookieName, secure, sameSite, path: cookiePath },
    cors: {
      origins: list('cors.origins', 'entries must be origins like "https://app.example.com" (scheme, host, optional port; no path)', normaliseOrigin),
    },
    passwords: {
      minLength,
      maxLength,
      // The floor is OWASP's argon2id minimum (m=19 MiB, t=2, p=1); the caps keep a typo from
      // making every login take seconds or exhaust memory.
      memoryKib: integer('passwords.memory_kib', 19456, 1048576),
      timeCost: integer('passwords.time_cost', 2, 10),
      parallelism: integer('passwords.parallelism', 1, 16),
    },
    rateLimit: {
      login: {
        perIpEmail: rate('rate_limit.login.per_ip_email'),
        perEmail: rate('rate_limit.login.per_email'),
        perIp: rate('rate_limit.login.per_ip'),
        perDevice: rate('rate_limit.login.per_device'),
      },
      register: { perIp: rate('rate_limit.register.per_ip') },
      refresh: { perIp: rate('rate_limit.refresh.per_ip') },
      mfa: { perUser: rate('rate_limit.mfa.per_user') },
      maxKeys: integer('rate_limit.max_keys', 1000),
    },
    audit: { retentionMs: duration('audit.retention') },
    registration: { enabled: boolean('registration.enabled') },
    mfa: { issuer: layer.get('mfa.issuer') === undefined ? string('tokens.issuer') : string('mfa.issuer') },
    log: { level: oneOf('log.level', LOG_LEVELS) },
    metrics: { enabled: boolean('metrics.enabled') },
    dev: options.dev,
  }
}

/** postgres:// or postgresql://, as node-postgres and libpq take them */
function isPostgresUrl(text: string): boolean {
  // a URL node-postgres can take apart (a port past 65535 or a broken IPv6 host it cannot). Its
  // parser reads an empty host (`authd@/authd?host=/run/postgresql`, a Unix socket) as a dummy one
  return /^postgres(?:ql)?:\/\/[^\s]*$/.test(text) && (URL.canParse(text) || URL.canParse(text.replace('@/', '@___DUMMY___/')))
}

function isPublicUrl(text: string): boolean {
  if (!URL.canParse(text)) return false
  const url = new URL(text)
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === ''
}

/** A CIDR as written, or a bare IP as a one-address CIDR (/32, /128); null if neither. */
function normaliseCidr(text: string): string | null {
  const [address, bits, ...rest] = text.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return null
  if (bits === undefined) return `${address}/${family === 4 ? 32 : 128}`
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128)) return null
  try {
    ipaddr.parseCIDR(text)
    // the client-address resolver reads an IPv4-mapped address as IPv4: its prefix must lie within the mapped /96
    if (family === 6 && ipaddr.IPv6.parse(address).isIPv4MappedAddress() && Number(bits) < 96) return null
  } catch {
    return null
  }
  return text
}

/** "https://App.example.com:443/" → "https://app.example.com", the form browsers send in Origin. */
function normaliseOrigin(text: string): string | null {
  if (!URL.canParse(text)) return null
  const url = new URL(text)
  const plain = url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' && url.password === ''
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !plain) return null
  // new URL() also reads "https://a.com?" and "https://a.com#" as path "/"; refuse that junk
  if (/[?#]/.test(text)) return null
  return url.origin
}
