/** One request in flight, as the route handlers and the replies see it. */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ClientContext } from '../core/auth-service.js'
import type { ClientIp } from './client-ip.js'
import { firstHeader } from './raw-headers.js'

const NO_PARAMS: Readonly<Record<string, string | undefined>> = Object.freeze({})

/**
 * A class rather than an object of closures: nothing is allocated per request beyond this, and
 * the client context (address parsing) is computed only by the handlers that ask for it.
 */
export class Exchange {
  private ctx: ClientContext | undefined
  /** the route's parameters (`:id`), as the router decoded them */
  params: Readonly<Record<string, string | undefined>> = NO_PARAMS
  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly id: string,
    /** the route template (`/api/auth/sessions/:id`), or `unknown`: the metrics and log label */
    readonly route: string,
    /** performance.now() when the request arrived */
    readonly started: number,
    private readonly clientIp: (req: IncomingMessage) => ClientIp,
  ) {}

  client(): ClientContext {
    if (this.ctx === undefined) {
      const c = this.clientIp(this.req)
      const ua = firstHeader(this.req, 'user-agent')
      this.ctx = { ip: c.ip, ipKey: c.key, userAgent: typeof ua === 'string' ? ua : '' }
    }
    return this.ctx
  }
}
