/** Plain store records for the store's own tests, and the pause that stands for "the next request". */
import type { SessionRecord, UserRecord } from '../../src/store/store.js'

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
