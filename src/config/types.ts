/** A rate limit: at most `count` events in any sliding window of `windowMs`. */
export interface RateRule {
  count: number
  windowMs: number
  /** the configured text, e.g. "5/15m", for printing */
  text: string
}

export type Algorithm = 'ES256' | 'RS256'

/** Where the store is (store/open.ts opens it): LMDB in a directory, or a PostgreSQL database. */
export interface StoreConfig {
  /** the LMDB data directory, absolute */
  path: string
  backend: 'lmdb' | 'postgres'
  /** the PostgreSQL connection URL ("" with LMDB); its password, if any, is a secret (redactUrl) */
  url: string
  /** PostgreSQL connections per process */
  poolSize: number
}
export type SameSite = 'Strict' | 'Lax' | 'None'

/** The validated, typed configuration. Inner code trusts it and never re-checks. */
export interface Config {
  server: {
    host: string
    port: number
    /** CIDRs, validated, as written; a bare IP is given its /32 or /128 */
    trustProxy: string[]
    /** bytes */
    bodyLimit: number
    /** absolute URL; defaults to http://<host>:<port> */
    publicUrl: string
    /** absolute path of a Unix socket to listen on instead of host:port, or null */
    socket: string | null
  }
  store: StoreConfig
  tokens: {
    algorithm: Algorithm
    accessTtlMs: number
    issuer: string
    audience: string
    clockToleranceMs: number
    /** how long a rotated-in key is published (next) before it signs */
    keyLeadMs: number
  }
  sessions: { idleTtlMs: number; absoluteTtlMs: number; reuseGraceMs: number; maxPerUser: number }
  cookie: { name: string; secure: boolean; sameSite: SameSite; path: string }
  cors: { origins: string[] }
  passwords: { minLength: number; maxLength: number; memoryKib: number; timeCost: number; parallelism: number }
  rateLimit: {
    login: { perIpEmail: RateRule; perEmail: RateRule; perIp: RateRule; perDevice: RateRule }
    register: { perIp: RateRule }
    refresh: { perIp: RateRule }
    /** failed second-factor codes per user */
    mfa: { perUser: RateRule }
    maxKeys: number
  }
  /** how long audit events are kept */
  audit: { retentionMs: number }
  registration: { enabled: boolean }
  /** the issuer authenticator apps show (defaults to tokens.issuer) */
  mfa: { issuer: string }
  log: { level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent' }
  metrics: { enabled: boolean }
  /** --dev: plain-HTTP laptop mode */
  dev: boolean
}
