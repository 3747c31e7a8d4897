/** CORS for /api/auth/* and the origin check of the cookie endpoints. */
import type { Config } from '../config/types.js'

export interface OriginPolicy {
  /** an Origin allowed to read responses with credentials */
  corsAllowed(origin: string): boolean
  /**
   * Whether a cookie endpoint may act for this request. No Origin (curl, servers) is fine; a
   * browser's Origin must be ours or listed, because a browser stores cookies even from
   * responses that CORS hides from the page.
   */
  cookieAllowed(origin: string | undefined): boolean
}

export function createOriginPolicy(config: Config): OriginPolicy {
  const listed = new Set(config.cors.origins.map((o) => new URL(o).origin))
  // read per call: with --port 0 the daemon learns its own URL only once it listens
  let ownUrl = ''
  let own = ''
  const ownOrigin = (): string => {
    if (ownUrl !== config.server.publicUrl) {
      ownUrl = config.server.publicUrl
      own = new URL(ownUrl).origin
    }
    return own
  }
  return {
    corsAllowed: (origin) => listed.has(origin),
    cookieAllowed: (origin) => origin === undefined || origin === ownOrigin() || listed.has(origin),
  }
}
