import type { IncomingMessage } from 'node:http'
import ipaddr from 'ipaddr.js'
import { clientIpOf, parseAddress, type Address, type ClientIp } from '../core/address.js'
import { joinedHeader } from './raw-headers.js'

export type { ClientIp } from '../core/address.js'

export type ClientIpResolver = (
  remoteAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
) => ClientIp

/** What a request whose socket address is missing or unreadable (a socket already gone) is counted as. */
export const UNKNOWN_CLIENT: ClientIp = Object.freeze({ ip: 'unknown', key: 'unknown' })

/**
 * The address of a peer on the Unix socket (server.socket) that sent no X-Forwarded-For: a process
 * on this machine, so loopback (one limiter key for all of them, and `authctl limits clear
 * 127.0.0.1` clears it).
 */
export const UNIX_SOCKET_PEER = '127.0.0.1'

function parseRange(cidr: string): [Address, number] {
  const slash = cidr.indexOf('/')
  const addr = parseAddress(slash === -1 ? cidr : cidr.slice(0, slash))
  if (addr === null) throw new Error(`invalid trust_proxy entry: ${cidr}`)
  const maxBits = addr.kind() === 'ipv4' ? 32 : 128
  let bits = maxBits
  if (slash !== -1) {
    const text = cidr.slice(slash + 1)
    bits = /^\d{1,3}$/.test(text) ? Number(text) : NaN
    // parseAddress turned an IPv4-mapped network into IPv4: shift its prefix to match
    if (addr.kind() === 'ipv4' && cidr.includes(':')) bits -= 96
    if (!(bits >= 0 && bits <= maxBits)) throw new Error(`invalid trust_proxy entry: ${cidr}`)
  }
  return [addr, bits]
}

/**
 * Returns the resolver of the client address (README, "Rate limits"), with `trustProxy` (CIDRs, or bare
 * addresses meaning one host) parsed once here. Throws on an invalid entry.
 *
 * The client is the socket peer, unless that peer is a trusted proxy: then `X-Forwarded-For`
 * (every header value, joined by commas) is walked from the right, past trusted proxies, and the
 * first entry that is not one is the client. Each proxy appends the peer it saw, so entries left
 * of the first untrusted one were written by the client and are never believed. If every entry
 * is trusted, the left-most is taken. Empty entries are skipped.
 *
 * An entry with a port, as some proxies write it (`192.0.2.7:1234`, `[2001:db8::5]:443`), or an
 * IPv6 address in brackets, names that address.
 *
 * Choice for an unparseable entry met during the walk: the whole header is ignored and the
 * socket address is used. The entry was written by a trusted proxy that is misconfigured (or
 * passes the client's header through), so nothing in it can be believed; counting the request
 * against the proxy's own address is the conservative answer (it can never mint a fresh limiter
 * key, as taking the garbage, or something to its left, could).
 */
export function createClientIp(trustProxy: readonly string[], opts: { unixSocket?: boolean } = {}): ClientIpResolver {
  const ranges = trustProxy.map(parseRange)
  const unixPeer = opts.unixSocket === true ? parseAddress(UNIX_SOCKET_PEER)! : null

  function trusted(addr: Address): boolean {
    for (const range of ranges) {
      if (range[0].kind() === addr.kind() && addr.match(range)) return true
    }
    return false
  }

  /** the client named by `forwardedFor` as a proxy at `peer` passed it on (see above) */
  function forwarded(peer: Address, forwardedFor: string | string[]): ClientIp {
    const header = typeof forwardedFor === 'string' ? forwardedFor : forwardedFor.join(',')
    let client = peer
    // right to left with lastIndexOf: no array for a long (possibly spoofed) chain, and the walk
    // stops at the first untrusted entry without touching the rest
    let end = header.length
    while (end > 0) {
      const comma = header.lastIndexOf(',', end - 1)
      const entry = header.slice(comma + 1, end).trim()
      end = comma
      if (entry === '') continue
      const addr = entryAddress(entry)
      if (addr === null) return clientIpOf(peer)
      client = addr
      if (!trusted(addr)) break
    }
    return clientIpOf(client)
  }

  return (remoteAddress, forwardedFor) => {
    // A Unix socket peer has no address. When authd listens on server.socket instead of a port,
    // only the processes that may open the socket file (the proxy's group, mode 0660) reach it:
    // every peer is a trusted proxy, so its X-Forwarded-For is believed.
    if (remoteAddress === undefined) {
      if (unixPeer === null) return UNKNOWN_CLIENT
      return forwardedFor === undefined ? clientIpOf(unixPeer) : forwarded(unixPeer, forwardedFor)
    }
    // hottest case first: plain IPv4 peer and no proxies — no parsing beyond the check
    if (ranges.length === 0 && ipaddr.IPv4.isValidFourPartDecimal(remoteAddress)) {
      return { ip: remoteAddress, key: remoteAddress }
    }
    const socket = parseAddress(remoteAddress)
    if (socket === null) return UNKNOWN_CLIENT
    // fast path: no proxies configured, or the peer is not one — the header is not even read
    if (ranges.length === 0 || forwardedFor === undefined || !trusted(socket)) return clientIpOf(socket)
    return forwarded(socket, forwardedFor)
  }
}

/** an X-Forwarded-For entry's address: a bare one, or one with a port or in brackets (above) */
function entryAddress(entry: string): Address | null {
  const bare = parseAddress(entry)
  if (bare !== null) return bare
  const ported = /^\[([0-9A-Fa-f:.]+)\](?::\d{1,5})?$/.exec(entry) ?? /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(entry)
  return ported === null ? null : parseAddress(ported[1]!)
}

/** addresses whose parse is remembered at most (a keep-alive client sends many requests) */
const MEMO_ADDRESSES = 4096

/**
 * The client address of a request (createClientIp, with the same `trustProxy` and options).
 * Without an X-Forwarded-For header it depends on the socket address alone, so that parse is
 * remembered per address, for at most MEMO_ADDRESSES of them; with one, it is worked out every
 * time.
 */
export function createRequestClientIp(trustProxy: readonly string[], opts: { unixSocket?: boolean } = {}): (req: IncomingMessage) => ClientIp {
  const resolve = createClientIp(trustProxy, opts)
  const byAddress = new Map<string, ClientIp>()
  return (req) => {
    const forwarded = joinedHeader(req, 'x-forwarded-for')
    const address = req.socket.remoteAddress
    if (forwarded !== undefined || address === undefined) return resolve(address, forwarded)
    let c = byAddress.get(address)
    if (c === undefined) {
      c = resolve(address, undefined)
      if (byAddress.size >= MEMO_ADDRESSES) byAddress.clear()
      byAddress.set(address, c)
    }
    return c
  }
}
