import { AppError } from '../errors.js'
import { redactSecrets } from './redact-url.js'

/**
 * A bad config: unknown key, bad value, unreadable or unparsable file. `message` is one plain
 * line naming the key (or file) and the offending value; `key` (params.key), the dotted key
 * ("server.port") or environment variable when it is about one. authd and authctl print it and
 * exit 2.
 */
export function configError(message: string, key?: string): AppError {
  return new AppError('CONFIG_INVALID', { message, params: key === undefined ? undefined : { key } })
}

/**
 * A value as it appears in messages: strings and lists quoted like JSON, the rest as-is. A URL's
 * password in any string of it shows as `***` (README, "Configure": store.url), whatever key the
 * value was given for: a PostgreSQL URL under a misspelled key, or given as a list, is still one.
 */
export function showValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(redactSecrets(value))
  if (Array.isArray(value)) return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' ? redactSecrets(v) : v))
  if (value instanceof Date) return JSON.stringify(String(value))
  if (typeof value === 'object' && value !== null) return 'a table'
  return String(value)
}
