/**
 * A bad config: unknown key, bad value, unreadable or unparsable file. The message is one plain
 * line naming the key (or file) and the offending value; callers print it and exit 2.
 */
export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID'
  /** dotted key ("server.port") or environment variable, when the error is about one */
  readonly key: string | undefined

  constructor(message: string, key?: string) {
    super(message)
    this.name = 'ConfigError'
    this.key = key
  }
}

/** A value as it appears in messages: strings and lists quoted like JSON, the rest as-is. */
export function showValue(value: unknown): string {
  if (typeof value === 'string' || Array.isArray(value)) return JSON.stringify(value)
  if (value instanceof Date) return JSON.stringify(String(value))
  if (typeof value === 'object' && value !== null) return 'a table'
  return String(value)
}
