/**
 * The device cookie's header (README, "Rate limits"): `__Host-authd_device`, or `authd_device`
 * when the cookie is not Secure (--dev) or not on Path=/ (a `__Host-` cookie must be both).
 * Same SameSite and Path as the refresh cookie, HttpOnly, kept a year.
 */
import { serialize } from 'cookie'
import type { Config } from '../config/types.js'

export interface DeviceCookie {
  readonly name: string
  /** every value of this cookie the header carries (a planted one may sit beside ours) */
  read(header: string | undefined): string[]
  set(value: string): string
}

const MAX_AGE_S = 31_536_000
/** the values of the cookie read at most (each is one HMAC to verify) */
export const MAX_VALUES = 32

export function createDeviceCookie(config: Config): DeviceCookie {
  const c = config.cookie
  const name = c.secure && c.path === '/' ? '__Host-authd_device' : 'authd_device'
  const attrs = { httpOnly: true, secure: c.secure, sameSite: c.sameSite.toLowerCase() as 'strict' | 'lax' | 'none', path: c.path, maxAge: MAX_AGE_S }
  return {
    name,
    read(header) {
      const out: string[] = []
      if (header === undefined || !header.includes(name)) return out
      for (const pair of header.split(';')) {
        const eq = pair.indexOf('=')
        if (eq === -1 || pair.slice(0, eq).trim() !== name) continue
        const value = pair.slice(eq + 1).trim()
        // our values are base64url and a dot: never quoted or escaped. Enough are read that a
        // sibling subdomain cannot hide the browser's own behind planted ones (browsers send the
        // longer Path first), without a header of thousands costing as many MACs
        if (value !== '' && out.length < MAX_VALUES) out.push(value)
      }
      return out
    },
    set: (value) => serialize(name, value, attrs),
  }
}
