/** How a key's value is written; decides how an environment string is read. */
export type KeyKind = 'string' | 'integer' | 'boolean' | 'duration' | 'size' | 'rate' | 'list'

/** Every config key, as a dotted TOML path, with its kind. A key not listed here is an error. */
export const KEYS = {
  'server.host': 'string',
  'server.port': 'integer',
  'server.trust_proxy': 'list',
  'server.body_limit': 'size',
  'server.public_url': 'string',
  'server.socket': 'string',
  'store.path': 'string',
  'store.backend': 'string',
  'store.url': 'string',
  'store.pool_size': 'integer',
  'tokens.algorithm': 'string',
  'tokens.access_ttl': 'duration',
  'tokens.issuer': 'string',
  'tokens.audience': 'string',
  'tokens.clock_tolerance': 'duration',
  'tokens.key_lead': 'duration',
  'sessions.idle_ttl': 'duration',
  'sessions.absolute_ttl': 'duration',
  'sessions.reuse_grace': 'duration',
  'sessions.max_per_user': 'integer',
  'cookie.name': 'string',
  'cookie.secure': 'boolean',
  'cookie.same_site': 'string',
  'cookie.path': 'string',
  'cors.origins': 'list',
  'passwords.min_length': 'integer',
  'passwords.max_length': 'integer',
  'passwords.memory_kib': 'integer',
  'passwords.time_cost': 'integer',
  'passwords.parallelism': 'integer',
  'rate_limit.login.per_ip_email': 'rate',
  'rate_limit.login.per_email': 'rate',
  'rate_limit.login.per_ip': 'rate',
  'rate_limit.login.per_device': 'rate',
  'rate_limit.register.per_ip': 'rate',
  'rate_limit.refresh.per_ip': 'rate',
  'rate_limit.mfa.per_user': 'rate',
  'rate_limit.max_keys': 'integer',
  'audit.retention': 'duration',
  'registration.enabled': 'boolean',
  'mfa.issuer': 'string',
  'log.level': 'string',
  'metrics.enabled': 'boolean',
} as const satisfies Record<string, KeyKind>

export type KeyPath = keyof typeof KEYS

export function isKeyPath(path: string): path is KeyPath {
  return Object.hasOwn(KEYS, path)
}

/** Tables that may appear in a file: every proper prefix of a key ("server", "rate_limit.login"). */
export function isTablePath(path: string): boolean {
  return Object.keys(KEYS).some((key) => key.startsWith(`${path}.`))
}

/** "tokens.access_ttl" → "AUTHD_TOKENS_ACCESS_TTL". Keys are snake_case, so the map is one-to-one. */
export function envName(path: KeyPath): string {
  return `AUTHD_${path.replace(/\./g, '_').toUpperCase()}`
}
