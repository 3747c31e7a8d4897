import { formatDuration } from './duration.js'
import { formatSize } from './size.js'
import { redactUrl } from './redact-url.js'
import type { Config } from './types.js'

/**
 * Dotted keys whose values `describeConfig` prints as "[redacted]". No config key is a secret
 * as a whole today (keys and hashes live in the store); store.url may hold a password, which is
 * shown as `***` (redactUrl). Add a key here the day one is.
 */
const SECRET_KEYS: readonly string[] = []

/**
 * The effective config in TOML key shape (snake_case, durations like "15m", sizes like "16kb",
 * rates as written), for `authd check-config`. server.public_url is always present (derived or
 * set) and store.path is absolute. --dev is a flag, not a key, so it is not included.
 */
export function describeConfig(config: Config): Record<string, unknown> {
  const { server, tokens, sessions, cookie, passwords, rateLimit } = config
  const described = {
    server: {
      host: server.host,
      port: server.port,
      trust_proxy: [...server.trustProxy],
      body_limit: formatSize(server.bodyLimit),
      public_url: server.publicUrl,
      socket: server.socket ?? '',
    },
    store: { path: config.store.path, backend: config.store.backend, url: redactUrl(config.store.url), pool_size: config.store.poolSize },
    tokens: {
      algorithm: tokens.algorithm,
      access_ttl: formatDuration(tokens.accessTtlMs),
      issuer: tokens.issuer,
      audience: tokens.audience,
      clock_tolerance: formatDuration(tokens.clockToleranceMs),
      key_lead: formatDuration(tokens.keyLeadMs),
    },
    sessions: {
      idle_ttl: formatDuration(sessions.idleTtlMs),
      absolute_ttl: formatDuration(sessions.absoluteTtlMs),
      reuse_grace: formatDuration(sessions.reuseGraceMs),
      max_per_user: sessions.maxPerUser,
    },
    cookie: { name: cookie.name, secure: cookie.secure, same_site: cookie.sameSite, path: cookie.path },
    cors: { origins: [...config.cors.origins] },
    passwords: {
      min_length: passwords.minLength,
      max_length: passwords.maxLength,
      memory_kib: passwords.memoryKib,
      time_cost: passwords.timeCost,
      parallelism: passwords.parallelism,
    },
    rate_limit: {
      login: {
        per_ip_email: rateLimit.login.perIpEmail.text,
        per_email: rateLimit.login.perEmail.text,
        per_ip: rateLimit.login.perIp.text,
        per_device: rateLimit.login.perDevice.text,
      },
      register: { per_ip: rateLimit.register.perIp.text },
      refresh: { per_ip: rateLimit.refresh.perIp.text },
      mfa: { per_user: rateLimit.mfa.perUser.text },
      max_keys: rateLimit.maxKeys,
    },
    audit: { retention: formatDuration(config.audit.retentionMs) },
    registration: { enabled: config.registration.enabled },
    mfa: { issuer: config.mfa.issuer },
    log: { level: config.log.level },
    metrics: { enabled: config.metrics.enabled },
  }
  return redact(described, '')
}

function redact(table: Record<string, unknown>, prefix: string): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(table)) {
    const path = prefix === '' ? key : `${prefix}.${key}`
    if (SECRET_KEYS.includes(path)) out[key] = '[redacted]'
    else if (typeof value === 'object' && value !== null && !Array.isArray(value)) out[key] = redact(value as Record<string, unknown>, path)
    else out[key] = value
  }
  return out
}
