import { randomBytes } from 'node:crypto'

/** An opaque, server-made user id: 128 random bits, base64url. */
export const newUserId = (): string => randomBytes(16).toString('base64url')
