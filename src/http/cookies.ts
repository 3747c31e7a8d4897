/** The refresh cookie: its attributes come from config and are the same when set and cleared. */
import { parse, serialize } from 'cookie'
import type { Config } from '../config/types.js'

export interface RefreshCookie {
  read(header: string | undefined): string | undefined
  /**
   * Whether the Cookie header holds more than one cookie of this name. A sibling subdomain (or a
   * page on plain HTTP) can plant a cookie of the name that browsers send before ours: such a
   * request carries none that can be trusted to be ours, so it is refused without touching any
   * session and without clearing anything (clearing would clear ours, not the planted one).
   */
  ambiguous(header: string | undefined): boolean
  /** the cookie holding `token`, kept `maxAgeS` seconds (the session's time left) */
  set(token: string, maxAgeS: number): string
  clear(): string
}

export function createRefreshCookie(config: Config): RefreshCookie {
  const c = config.cookie
  const sameSite = c.sameSite.toLowerCase() as 'strict' | 'lax' | 'none'
  const attrs = { httpOnly: true, secure: c.secure, sameSite, path: c.path }
  return {
    read(header) {
      if (header === undefined || header === '') return undefined
      try {
        return parse(header)[c.name]
      } catch {
        return undefined
      }
    },
    ambiguous(header) {
      if (header === undefined || !header.includes(c.name)) return false
      let seen = 0
      for (const pair of header.split(';')) {
        const eq = pair.indexOf('=')
        if ((eq === -1 ? pair : pair.slice(0, eq)).trim() === c.name && ++seen > 1) return true
      }
      return false
    },
    set: (token, maxAge) => serialize(c.name, token, { ...attrs, maxAge }),
    clear: () => serialize(c.name, '', { ...attrs, maxAge: 0 }),
  }
}
