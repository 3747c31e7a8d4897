/** Plain store records for the store's own tests, and the pause that stands for "the next request". */
import { generateKey } from '../../src/core/keys.js'
import type { KeyRecord, SessionRecord, UserRecord } from '../../src/store/store.js'

const pairs = new Map<string, KeyRecord>()
/** a real ES256 pair for `kid`, the same each time it is asked for (an import checks that a key's PEMs are one usable pair) */
export const keyPairOf = (kid: string): Pick<KeyRecord, 'privateKeyPem' | 'publicKeyPem'> => {
  let pair = pairs.get(kid)
  if (pair === undefined) pairs.set(kid, (pair = generateKey('ES256', 0)))
  return { privateKeyPem: pair.privateKeyPem, publicKeyPem: pair.publicKeyPem }
}

export const user = (id: string, email: string): UserRecord => ({ id, email, passwordHash: 'x', createdAt: 1, updatedAt: 1, disabled: false })

export const session = (id: string, userId: string): SessionRecord => ({
  id,
  userId,
  createdAt: 1,
  lastUsedAt: 1,
  expiresAt: 10,
  ip: '127.0.0.1',
  userAgent: 'ua',
  refreshHash: `h-${id}`,
  previousHash: null,
  rotatedAt: null,
  generation: 0,
  familyHash: `f-${id}`,
  amr: ['pwd'],
})

/** lmdb renews a handle's read snapshot by a timer: a read in the next turn sees every commit */
export const nextRequest = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 5))
