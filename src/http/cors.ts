/** CORS for /api/auth/* and the origin check of the cookie endpoints. */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Config } from '../config/types.js'
import { joinedHeader } from './raw-headers.js'

export interface OriginPolicy {
  /** an Origin allowed to read responses with credentials */
  corsAllowed(origin: string): boolean
  /**
   * Whether a cookie endpoint may act for this request. No Origin (curl, servers) is fine; a
   * browser's Origin must be ours or listed, because a browser stores cookies even from
   * responses that CORS hides from the page.
   */
  cookieAllowed(origin: string | undefined): boolean
  /**
   * Sets the CORS headers of an /api/auth/* answer (a 404 under it too, so a page can read what
   * went wrong), before the answer is written: `Vary: Origin` when origins are listed, and the
   * allow headers when the request's Origin is one of them.
   */
  addHeaders(req: IncomingMessage, res: ServerResponse): void
}

/** what the preflight of an /api/auth/* endpoint allows (README, "Browsers") */
export const PREFLIGHT_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'access-control-allow-methods': 'GET, POST, DELETE',
  'access-control-allow-headers': 'Content-Type, Authorization',
  'access-control-max-age': '600',
})

export function createOriginPolicy(config: Config): OriginPolicy {
  const listed = new Set(config.cors.origins.map((o) => new URL(o).origin))
  // final here: with --port 0 the daemon builds the app once it knows its port (daemon/main.ts)
  const own = new URL(config.server.publicUrl).origin
  const corsAllowed = (origin: string): boolean => listed.has(origin)
  return {
    corsAllowed,
    cookieAllowed: (origin) => origin === undefined || origin === own || listed.has(origin),
    addHeaders(req, res) {
      if (listed.size === 0) return
      res.setHeader('vary', 'Origin')
      const origin = joinedHeader(req, 'origin')
      if (origin !== undefined && corsAllowed(origin)) {
        res.setHeader('access-control-allow-origin', origin)
        res.setHeader('access-control-allow-credentials', 'true')
      }
    },
  }
}
