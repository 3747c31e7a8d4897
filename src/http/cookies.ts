/** The refresh cookie: its attributes come from config and are the same when set and cleared. */
import { parse, serialize } from 'cookie'
import type { Config } from '../config/types.js'

export interface RefreshCookie {
  read(header: string | undefined): string | undefined
  set(token: string): string
  clear(): string
}

export function createRefreshCookie(config: Config): RefreshCookie {
  const c = config.cookie
  const sameSite = c.sameSite.toLowerCase() as 'strict' | 'lax' | 'none'
  const attrs = { httpOnly: true, secure: c.secure, sameSite, path: c.path }
  const maxAge = Math.floor(config.sessions.absoluteTtlMs / 1000)
  return {
    read(header) {
      if (header === undefined || header === '') return undefined
      try {
        return parse(header)[c.name]
      } catch {
        return undefined
      }
    },
    set: (token) => serialize(c.name, token, { ...attrs, maxAge }),
    clear: () => serialize(c.name, '', { ...attrs, maxAge: 0 }),
  }
}
