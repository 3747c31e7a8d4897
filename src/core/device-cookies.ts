/**
 * The device cookie's value: which browser this is and which user signed in on it, signed by a
 * key kept in the store (docs/api.md, "Rate limits"). It proves that this client signed in as this
 * user before, so a login from it is counted per device rather than per email: an attacker who
 * spends an email's budget cannot lock the user out of their own browser. It grants nothing else.
 *
 * Value: base64url(device id (16 random bytes) ‖ user id) "." base64url(HMAC-SHA256(key, that)).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

export interface Device {
  /** 128 random bits, base64url; the rate limiter's per-device key */
  deviceId: string
  userId: string
}

export interface DeviceCookies {
  /** a value naming `userId` on the device `deviceId` (a new device when undefined) */
  issue(userId: string, deviceId?: string): string
  /**
   * The device and user a value names, or null when it does not verify (a forged, altered or
   * foreign value). The same work whatever the value holds, so a login costs the same with a
   * cookie, without one, or with a bad one.
   */
  verify(value: string | undefined): Device | null
}

const ID_BYTES = 16
const MAC_BYTES = 32
// a value far longer than any we issue is not read at all (user ids are 22 characters)
const MAX_VALUE = 512
/** what verify() checks when there is no value, so both cost one HMAC */
const NOTHING = Buffer.alloc(ID_BYTES)

/** A new device-cookie key (32 random bytes, base64url), for the store to keep. */
export const newDeviceKey = (): string => randomBytes(32).toString('base64url')

export function createDeviceCookies(key: string): DeviceCookies {
  const secret = Buffer.from(key, 'base64url')
  const mac = (payload: Buffer): Buffer => createHmac('sha256', secret).update(payload).digest()
  return {
    issue(userId, deviceId) {
      const id = deviceId !== undefined ? Buffer.from(deviceId, 'base64url') : randomBytes(ID_BYTES)
      const payload = Buffer.concat([id, Buffer.from(userId, 'utf8')])
      return `${payload.toString('base64url')}.${mac(payload).toString('base64url')}`
    },
    verify(value) {
      const dot = value === undefined || value.length > MAX_VALUE ? -1 : value.indexOf('.')
      const payload = dot === -1 ? NOTHING : Buffer.from(value!.slice(0, dot), 'base64url')
      const given = dot === -1 ? NOTHING : Buffer.from(value!.slice(dot + 1), 'base64url')
      const expected = mac(payload)
      // constant-time: the comparison must not tell a forger how much of the MAC was right
      const valid = given.length === MAC_BYTES && timingSafeEqual(given, expected)
      if (!valid || dot === -1 || payload.length <= ID_BYTES) return null
      // one text per cookie: base64url decoding skips what is not of its alphabet, so a copy
      // altered that way (a `=`, a second dot) decodes the same and is refused here
      if (value !== `${payload.toString('base64url')}.${given.toString('base64url')}`) return null
      return { deviceId: payload.subarray(0, ID_BYTES).toString('base64url'), userId: payload.subarray(ID_BYTES).toString('utf8') }
    },
  }
}
