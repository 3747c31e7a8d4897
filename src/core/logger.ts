/**
 * The pino logger. Secrets never reach the logs by configuration: whatever a call site logs,
 * these paths are censored (and no call site logs headers, bodies or tokens to begin with).
 */
import { pino, type DestinationStream, type Logger } from 'pino'

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  'password',
  'accessToken',
  'refreshToken',
  'token',
  '*.password',
  '*.accessToken',
  '*.refreshToken',
  '*.token',
]

export function createLogger(opts: { level: string; destination?: DestinationStream }): Logger {
  return pino(
    {
      level: opts.level,
      base: { service: 'authd' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    opts.destination ?? pino.destination({ sync: false }),
  )
}
