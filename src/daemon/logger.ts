/**
 * The pino logger. Secrets never reach the logs by configuration: whatever a call site logs,
 * these paths are censored (and no call site logs headers, bodies or tokens to begin with).
 */
import { pino, type DestinationStream, type Logger } from 'pino'

/**
 * Field names censored wherever they sit in a logged object, at the top and down to
 * NESTED_DEPTH levels below it: the API's secret fields (a login's, a password change's, a second
 * factor's), a stored user's, and the headers that carry credentials.
 */
export const SECRET_FIELDS = [
  'password',
  'currentPassword',
  'newPassword',
  'passwordHash',
  'accessToken',
  'refreshToken',
  'token',
  'mfaToken',
  'recoveryCode',
  'recoveryCodes',
  'secret',
  'otpauthUrl',
  'authorization',
  'cookie',
  'set-cookie',
] as const
const SECRET_SET: ReadonlySet<string> = new Set(SECRET_FIELDS)

/** levels below the top that censorNested looks into (a user record's `mfa.secret` is two) */
export const NESTED_DEPTH = 4

/**
 * Censored at the top level only: a second-factor `code`. One level down `code` is an error's
 * (`err.code`, e.g. ENOENT), which the log needs, and no call site logs a request body.
 */
export const TOP_LEVEL_SECRET_FIELDS = ['code'] as const

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  // a name that is no identifier in pino's path syntax is written as an index
  ...SECRET_FIELDS.map((f) => (/^[A-Za-z_$][\w$]*$/.test(f) ? f : `["${f}"]`)),
  ...TOP_LEVEL_SECRET_FIELDS,
  ...SECRET_FIELDS.map((f) => `*.${f}`),
]

const CENSOR = '[redacted]'

/**
 * The `*.<field>` paths, and the same names further down (to NESTED_DEPTH), applied before pino
 * serialises a line. pino's own wildcard redaction runs a redactor over every field of every line
 * (the largest cost of a line, measured), where this looks only inside the fields that hold
 * objects. A censored object is a copy (same prototype and properties, so an Error stays an
 * Error; an array stays an array); the caller's object is left as it was.
 */
export function censorNested(obj: Record<string, unknown>): Record<string, unknown> {
  return censorObject(obj, 0) as Record<string, unknown>
}

/**
 * `value` (at `depth` below the line's top) with its secret fields censored, down to
 * NESTED_DEPTH; itself when it holds none. At the top the names are pino's own paths' to censor.
 */
function censorObject(value: object, depth: number): object {
  let copy: Record<string, unknown> | unknown[] | undefined
  const own = (): Record<string, unknown> | unknown[] =>
    (copy ??= Array.isArray(value) ? [...value] : (Object.create(Object.getPrototypeOf(value), Object.getOwnPropertyDescriptors(value)) as Record<string, unknown>))
  for (const field in value) {
    if (!Object.prototype.hasOwnProperty.call(value, field)) continue
    if (depth > 0 && SECRET_SET.has(field)) {
      Object.defineProperty(own(), field, { value: CENSOR, enumerable: true, writable: true, configurable: true })
      continue
    }
    const inner = (value as Record<string, unknown>)[field]
    if (depth >= NESTED_DEPTH || typeof inner !== 'object' || inner === null) continue
    const censored = censorObject(inner, depth + 1)
    if (censored !== inner) Object.defineProperty(own(), field, { value: censored, enumerable: true, writable: true, configurable: true })
  }
  return copy ?? value
}

/**
 * pino's isoTime, built once per millisecond: lines written in the same one share it. The date
 * and time to the second are formatted once a second; each new millisecond only adds its digits.
 */
export function isoTimeOncePerMs(): () => string {
  let ms = -1
  let text = ''
  let second = NaN
  let head = ''
  return () => {
    const now = Date.now()
    if (now !== ms) {
      ms = now
      const s = Math.floor(now / 1000)
      if (s !== second) {
        second = s
        // "2026-11-21T19:45:12." of `,"time":"2026-11-21T19:45:12.345Z"`
        head = `,"time":"${new Date(s * 1000).toISOString().slice(0, 20)}`
      }
      const m = now - s * 1000
      text = `${head}${m < 10 ? '00' : m < 100 ? '0' : ''}${m}Z"`
    }
    return text
  }
}

/** the JSON text of a string, remembered: methods and routes come from small fixed sets */
function quotedOnce(): (s: string) => string {
  const memo = new Map<string, string>()
  return (s) => {
    let q = memo.get(s)
    if (q === undefined) {
      q = JSON.stringify(s)
      if (memo.size < 256) memo.set(s, q)
    }
    return q
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
  const stream = streamOf(logger) as { write(line: string): unknown }
  const time = isoTimeOncePerMs()
  const quoted = quotedOnce()
  return (reqId, method, route, status, ms) => {
    stream.write(
      `{"level":"info"${time()},"service":"authd","reqId":${plainId(reqId) ? `"${reqId}"` : JSON.stringify(reqId)},` +
        `"method":${quoted(method)},"route":${quoted(route)},"status":${status},"ms":${hundredths(ms)},"msg":"request"}\n`,
    )
  }
}

/** an id of digits, lower-case letters and dashes (the server's request ids): JSON-quoted as it is */
function plainId(id: string): boolean {
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i)
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 122) || c === 45)) return false
  }
  return true
}

/**
 * The JSON text of a duration the server rounded to hundredths of a millisecond, as
 * JSON.stringify writes it (`3`, `12.5`, `0.12`), from integers: formatting a fraction is most
 * of the cost of the line otherwise. Anything else (never passed) goes to JSON.stringify.
 */
export function hundredths(ms: number): string {
  const h = Math.round(ms * 100)
  if (!(h >= 0 && h < 1e12) || h / 100 !== ms) return JSON.stringify(ms)
  const whole = Math.floor(h / 100)
  const frac = h - whole * 100
  if (frac === 0) return `${whole}`
  if (frac % 10 === 0) return `${whole}.${frac / 10}`
  return `${whole}.${frac < 10 ? '0' : ''}${frac}`
}

/**
 * The daemon's log destination: lines are encoded into a buffer as they come and handed to the
 * output in batches of about 12 KB, or 100 ms after the first line of a batch. Handing over each
 * line (sonic-boom measures and queues every write) cost a /me more than building its line; so
 * did gathering the lines into one string (a rope of hundreds of pieces, flattened, measured and
 * copied again on its way to the file: about 100 µs a batch under load), hence bytes. The output
 * takes each batch's buffer as its own (sonic-boom in buffer mode): a new one is started.
 * The daemon writes whatever is gathered at exit, even by process.exit (the uncaught-exception
 * path: flushLogSync); a kill -9 loses at most the last 100 ms of lines.
 */
/** room past a batch's size for the line that fills it (a longer line is handed over alone) */
const LINE_ROOM = 8_192

export class LineBatch implements DestinationStream {
  private buf: Buffer
  private used = 0
  private timer: NodeJS.Timeout | undefined
  private readonly onTimer = (): void => {
    this.timer = undefined
    this.drain()
  }

  constructor(
    private readonly out: { write(chunk: Buffer): unknown; flush(cb?: (err?: Error) => void): void; flushSync(): void },
    private readonly batchBytes = 12_288,
    private readonly delayMs = 100,
  ) {
    this.buf = Buffer.allocUnsafeSlow(this.capacity)
  }

  /** a batch's room: its size, and then some, so that the line that fills it fits whole */
  private get capacity(): number {
    return this.batchBytes + LINE_ROOM
  }

  write(line: string): void {
    const free = this.buf.length - this.used
    // UTF-8 takes at most 3 bytes per UTF-16 unit: measured only when that bound does not fit
    if (line.length * 3 > free && Buffer.byteLength(line) > free) {
      this.drain()
      // longer than a whole batch: handed over alone, after what came before it
      if (Buffer.byteLength(line) > this.buf.length) {
        this.out.write(Buffer.from(line, 'utf8'))
        return
      }
    }
    this.used += this.buf.write(line, this.used)
    if (this.used >= this.batchBytes) this.drain()
    // not unref'd: a daemon on its way out waits for the last lines (at most delayMs)
    else this.timer ??= setTimeout(this.onTimer, this.delayMs)
  }

  private drain(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
    if (this.used === 0) return
    const chunk = this.buf.subarray(0, this.used)
    this.buf = Buffer.allocUnsafeSlow(this.capacity)
    this.used = 0
    this.out.write(chunk)
  }

  /** hands over what is gathered; `cb` once the output has written it */
  flush(cb?: (err?: Error) => void): void {
    this.drain()
    this.out.flush(cb)
  }

  flushSync(): void {
    this.drain()
    this.out.flushSync()
  }
}

/**
 * Writes what the logger's batch has gathered, synchronously (nothing asynchronous runs at exit):
 * the daemon calls it on `exit`. Other destinations write as they go.
 */
export function flushLogSync(logger: Logger): void {
  const out = streamOf(logger)
  if (!(out instanceof LineBatch)) return
  try {
    out.flushSync()
  } catch {
    // the output is gone (a closed pipe): nothing more can be written
  }
}

function streamOf(logger: Logger): unknown {
  return (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym]
}

/** stdout through sonic-boom in buffer mode (its types know only the string mode's write) */
function bufferDestination(): ConstructorParameters<typeof LineBatch>[0] {
  return pino.destination({ sync: false, contentMode: 'buffer' }) as unknown as ConstructorParameters<typeof LineBatch>[0]
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
    opts.destination ?? new LineBatch(bufferDestination()),
  )
}
