import { isIP } from 'node:net'

/**
 * The config as written in TOML: snake_case keys, durations, sizes and rates as strings.
 * `auth.example.toml` parses to exactly `builtInDefaults()` (a test holds them together).
 */
export interface RawConfig {
  server: {
    host: string
    port: number
    trust_proxy: string[]
    body_limit: string
    /** absent by default: derived from host and port (derivePublicUrl) */
    public_url?: string
    /** a Unix socket path to listen on instead of host and port; "" = none */
    socket: string
  }
  store: { path: string; backend: string; url: string; pool_size: number }
  tokens: { algorithm: string; access_ttl: string; issuer: string; audience: string; clock_tolerance: string; key_lead: string }
  sessions: { idle_ttl: string; absolute_ttl: string; reuse_grace: string; max_per_user: number }
  cookie: { name: string; secure: boolean; same_site: string; path: string }
  cors: { origins: string[] }
  passwords: { min_length: number; max_length: number; memory_kib: number; time_cost: number; parallelism: number }
  rate_limit: {
    login: { per_ip_email: string; per_email: string; per_ip: string; per_device: string }
    register: { per_ip: string }
    refresh: { per_ip: string }
    mfa: { per_user: string }
    max_keys: number
  }
  audit: { retention: string }
  registration: { enabled: boolean }
  /** issuer absent by default: tokens.issuer's value */
  mfa: { issuer?: string }
  log: { level: string }
  metrics: { enabled: boolean }
}

/**
 * The built-in defaults (README, "Configure" and "Rate limits"), a fresh object per call. `dev` (--dev, a
 * laptop on plain HTTP) drops the cookie's Secure attribute, and with it the `__Host-` prefix
 * that browsers only accept on Secure cookies.
 */
export function builtInDefaults(options: { dev?: boolean } = {}): RawConfig {
  const dev = options.dev === true
  return {
    server: { host: '127.0.0.1', port: 8080, trust_proxy: [], body_limit: '16kb', socket: '' },
    store: { path: './data', backend: 'lmdb', url: '', pool_size: 10 },
    tokens: { algorithm: 'ES256', access_ttl: '15m', issuer: 'authd', audience: 'authd', clock_tolerance: '5s', key_lead: '5m' },
    sessions: { idle_ttl: '7d', absolute_ttl: '30d', reuse_grace: '10s', max_per_user: 50 },
    cookie: {
      // __Host-: Secure, Path=/ and no Domain, so no sibling subdomain can plant a cookie of this name
      name: dev ? 'authd_rt' : '__Host-authd_rt',
      secure: !dev,
      same_site: 'Strict',
      path: '/',
    },
    cors: { origins: [] },
    passwords: { min_length: 8, max_length: 256, memory_kib: 19456, time_cost: 2, parallelism: 1 },
    rate_limit: {
      login: { per_ip_email: '5/15m', per_email: '20/1h', per_ip: '50/15m', per_device: '10/15m' },
      register: { per_ip: '10/1h' },
      refresh: { per_ip: '150/5m' },
      mfa: { per_user: '5/15m' },
      max_keys: 100000,
    },
    audit: { retention: '90d' },
    registration: { enabled: true },
    mfa: {},
    log: { level: 'info' },
    metrics: { enabled: true },
  }
}

/**
 * The default server.public_url, `http://<host>:<port>`. With port 0 the daemon knows the real
 * port only after listening, so it should call this again with it when public_url was not set.
 */
export function derivePublicUrl(host: string, port: number): string {
  return `http://${isIP(host) === 6 ? `[${host}]` : host}:${port}`
}
