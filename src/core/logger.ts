/**
 * The pino logger. Secrets never reach the logs by configuration: whatever a call site logs,
 * these paths are censored (and no call site logs headers, bodies or tokens to begin with).
 */
import { pino, type DestinationStream, type Logger } from 'pino'

/** Field names censored at the top of a logged object and one level down (`*.password`, …) */
export const SECRET_FIELDS = ['password', 'accessToken', 'refreshToken', 'token'] as const

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  ...SECRET_FIELDS,
  ...SECRET_FIELDS.map((f) => `*.${f}`),
]

const CENSOR = '[redacted]'

/**
 * The `*.<field>` paths, applied before pino serialises a line. pino's own wildcard redaction
 * runs a redactor over every field of every line (the largest cost of a line, measured), where
 * this looks only inside the fields that hold objects. A censored object is a copy (same
 * prototype and properties, so an Error stays an Error); the caller's object is left as it was.
 */
export function censorNested(obj: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined
  for (const key in obj) {
    const value = obj[key]
    if (typeof value !== 'object' || value === null || !Object.prototype.hasOwnProperty.call(obj, key)) continue
    let copy: Record<string, unknown> | undefined
    for (const field of SECRET_FIELDS) {
      if (!Object.prototype.hasOwnProperty.call(value, field)) continue
      copy ??= Object.create(Object.getPrototypeOf(value), Object.getOwnPropertyDescriptors(value)) as Record<string, unknown>
      Object.defineProperty(copy, field, { value: CENSOR, enumerable: true, writable: true, configurable: true })
    }
    if (copy !== undefined) (out ??= { ...obj })[key] = copy
  }
  return out ?? obj
}

/** pino's isoTime, built once per millisecond: lines written in the same one share it */
function isoTimeOncePerMs(): () => string {
  let ms = -1
  let text = ''
  return () => {
    const now = Date.now()
    if (now !== ms) {
      ms = now
      text = `,"time":"${new Date(now).toISOString()}"`
    }
    return text
  }
}

/**
 * The one line per finished request, built by hand: exactly what `logger.info({ reqId, method,
 * route, status, ms }, 'request')` writes, at a fraction of the cost (that line, through pino,
 * was the largest cost of a /me after the signature check). Every value in it is made by the
 * server (a request id, a method node's parser accepted, a route template, numbers), so nothing
 * in it can be a secret; strings are JSON-quoted all the same. A no-op below level info.
 */
export function requestLineWriter(logger: Logger): (reqId: string, method: string, route: string, status: number, ms: number) => void {
  if (!logger.isLevelEnabled('info')) return () => {}
  const stream = (logger as unknown as Record<symbol, { write(line: string): unknown }>)[pino.symbols.streamSym]!
  const time = isoTimeOncePerMs()
  return (reqId, method, route, status, ms) => {
    stream.write(
      `{"level":"info"${time()},"service":"authd","reqId":${JSON.stringify(reqId)},"method":${JSON.stringify(method)},` +
        `"route":${JSON.stringify(route)},"status":${status},"ms":${ms},"msg":"request"}\n`,
    )
  }
}

export function createLogger(opts: { level: string; destination?: DestinationStream }): Logger {
  return pino(
    {
      level: opts.level,
      base: { service: 'authd' },
      // the literal paths here; the `*.` ones in censorNested (see there)
      redact: { paths: REDACT_PATHS.filter((p) => !p.startsWith('*.')), censor: CENSOR },
      timestamp: isoTimeOncePerMs(),
      formatters: { level: (label) => ({ level: label }), log: censorNested },
    },
    // Lines are written in batches of 12 KB, or every 100 ms when fewer come: one write per line
    // (each a round trip through libuv's thread pool) cost /me more than building the line.
    // Whatever is buffered is written on exit; a kill -9 loses at most the last 100 ms of lines.
    opts.destination ?? pino.destination({ sync: false, minLength: 12_288, periodicFlush: 100 }),
  )
}
