const UNIT_BYTES = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 } as const
type Unit = keyof typeof UNIT_BYTES

const FORMAT_UNITS: readonly Unit[] = ['gb', 'mb', 'kb']

/**
 * Parses "512b", "16kb", "1mb", "1gb" (unit case-insensitive, 1kb = 1024 bytes) into bytes.
 * The unit is required; throws a RangeError for anything else.
 */
export function parseSize(text: string): number {
  const match = /^(\d+)(b|kb|mb|gb)$/i.exec(text)
  if (match === null) throw new RangeError(`invalid size ${JSON.stringify(text)}`)
  const bytes = Number(match[1]) * UNIT_BYTES[match[2].toLowerCase() as Unit]
  if (!Number.isSafeInteger(bytes)) throw new RangeError(`size ${JSON.stringify(text)} is too large`)
  return bytes
}

/** The shortest exact text for `bytes` that parseSize reads back: 16384 → "16kb", 1000 → "1000b". */
export function formatSize(bytes: number): string {
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`cannot format size ${bytes}`)
  if (bytes === 0) return '0b'
  for (const unit of FORMAT_UNITS) {
    if (bytes % UNIT_BYTES[unit] === 0) return `${bytes / UNIT_BYTES[unit]}${unit}`
  }
  return `${bytes}b`
}
