/**
 * The device cookie's value: which browser this is and which users signed in on it, signed by a
 * key kept in the store (docs/api.md, "Rate limits"). It proves that this client signed in as
 * these users before, so a login from it is counted per device rather than per email: an attacker
 * who spends an email's budget cannot lock the user out of their own browser. It grants nothing
 * else. A browser keeps one cookie of the name: every login names its user first and keeps the
 * others (at most MAX_USERS), so signing in to a second account does not take the first one's
 * device away.
 *
 * Value: base64url(device id (16 random bytes) ‖ 0x00 ‖ the user ids as a JSON array, the latest
 * first) "." base64url(HMAC-SHA256(key, that)). A value of the first form, device id ‖ one user
 * id, still verifies to that user.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

export interface Device {
  /** 128 random bits, base64url; with the user, the rate limiter's per-device key */
  deviceId: string
  /** the users who signed in on it, the latest first */
  userIds: readonly string[]
}

export interface DeviceCookies {
  /**
   * a value naming `userId` first on the device `prior` names, with the users it names after
   * (a new device when there is none)
   */
  issue(userId: string, prior?: Device | null): string
  /**
   * The device and users a value names, or null when it does not verify (a forged, altered or
   * foreign value). The same work whatever the value holds, so a login costs the same with a
   * cookie, without one, or with a bad one.
   */
  verify(value: string | undefined): Device | null
}

const ID_BYTES = 16
const MAC_BYTES = 32
/** the users one browser's cookie names at most: the latest sign-ins */
export const MAX_USERS = 8
// a value far longer than any we issue is not read at all (user ids are 22 characters: eight
// of them make a value of about 330)
const MAX_VALUE = 512
/** the byte after the device id that starts the list form (a user id never starts with it) */
const LIST = 0
/** what verify() checks when there is no value, so both cost one HMAC */
const NOTHING = Buffer.alloc(ID_BYTES)

/** A new device-cookie key (32 random bytes, base64url), for the store to keep. */
export const newDeviceKey = (): string => randomBytes(32).toString('base64url')

export function createDeviceCookies(key: string): DeviceCookies {
  const secret = Buffer.from(key, 'base64url')
  const mac = (payload: Buffer): Buffer => createHmac('sha256', secret).update(payload).digest()
  return {
    issue(userId, prior) {
      const id = prior != null ? Buffer.from(prior.deviceId, 'base64url') : randomBytes(ID_BYTES)
      const users = [userId, ...(prior?.userIds ?? []).filter((u) => u !== userId)].slice(0, MAX_USERS)
      const sign = (payload: Buffer): string => `${payload.toString('base64url')}.${mac(payload).toString('base64url')}`
      let value = ''
      // the oldest left out while the value is over what verify reads (long imported ids)
      for (let n = users.length; n >= 1; n--) {
        value = sign(Buffer.concat([id, Buffer.from([LIST]), Buffer.from(JSON.stringify(users.slice(0, n)), 'utf8')]))
        if (value.length <= MAX_VALUE) break
      }
      return value
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
      const deviceId = payload.subarray(0, ID_BYTES).toString('base64url')
      if (payload[ID_BYTES] !== LIST) return { deviceId, userIds: [payload.subarray(ID_BYTES).toString('utf8')] }
      const userIds = parseUsers(payload.subarray(ID_BYTES + 1).toString('utf8'))
      return userIds === null ? null : { deviceId, userIds }
    },
  }
}

/** the list a value we signed holds (null for one we could not have: nothing in it) */
function parseUsers(text: string): string[] | null {
  try {
    const list = JSON.parse(text) as unknown
    return Array.isArray(list) && list.length > 0 && list.every((u) => typeof u === 'string' && u !== '') ? (list as string[]) : null
  } catch {
    return null
  }
}
