/**
 * Client addresses as authd counts and records them (docs/api.md, "Rate limits"): parsed strictly,
 * IPv4-mapped IPv6 as IPv4, shown in RFC 5952 form, and keyed for the rate limiter per address
 * (IPv6 per /64). The HTTP layer resolves a request's client with these (http/client-ip.ts);
 * `authctl limits clear <ip>` keys an address an admin types with them (core/limit-clears.ts).
 */
import ipaddr from 'ipaddr.js'

export type Address = ipaddr.IPv4 | ipaddr.IPv6

export interface ClientIp {
  /** for logs and sessions: IPv4 dotted, IPv6 in RFC 5952 form (IPv4-mapped IPv6 shown as IPv4) */
  ip: string
  /** for the rate limiter: IPv4 as is, IPv6 as its /64 (`2001:db8:1:2::/64`), since one host usually holds a whole /64 */
  key: string
}

/**
 * Strict parse: IPv4 only in four-part decimal (no `127.1`, hex or octal forms, which are
 * ambiguous and never written by a proxy), IPv6 per RFC 4291; IPv4-mapped IPv6 becomes IPv4 so
 * `::ffff:1.2.3.4` and `1.2.3.4` are one client. No ports, brackets or whitespace.
 */
export function parseAddress(text: string): Address | null {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text)
  if (!ipaddr.IPv6.isValid(text)) return null
  const v6 = ipaddr.IPv6.parse(text)
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address() : v6
}

/** an address as logs and sessions show it, and as the rate limiter counts it */
export function clientIpOf(addr: Address): ClientIp {
  if (addr.kind() === 'ipv4') {
    const ip = addr.toString()
    return { ip, key: ip }
  }
  const v6 = addr as ipaddr.IPv6
  const p = v6.parts
  const prefix = new ipaddr.IPv6([p[0], p[1], p[2], p[3], 0, 0, 0, 0])
  return { ip: v6.toString(), key: `${prefix.toString()}/64` }
}

/**
 * The rate-limiter key of an address as an admin types it (`authctl limits clear 2001:db8::1`):
 * the same form requests from it are counted under, or null when it is not an address.
 */
export function addressKey(text: string): string | null {
  const addr = parseAddress(text)
  return addr === null ? null : clientIpOf(addr).key
}
