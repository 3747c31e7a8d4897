/**
 * Password hashing: argon2id with the configured parameters, run through a small queue so that a
 * login flood cannot occupy libuv's thread pool, which LMDB commits share.
 */
import argon2 from 'argon2'
import { randomBytes } from 'node:crypto'
import { AppError } from './errors.js'

export interface HashParams {
  memoryKib: number
  timeCost: number
  parallelism: number
}

export interface PasswordHasher {
  hash(password: string): Promise<string>
  /** false for a wrong password and for a hash we refuse to run; never throws for bad input */
  verify(encoded: string, password: string): Promise<boolean>
  /** runs a verification that always fails, costing what a real one costs (unknown users) */
  verifyDummy(password: string): Promise<false>
  /** whether a stored hash was made under other parameters than the configured ones */
  needsRehash(encoded: string): boolean
  /** hashes started so far (for tests and metrics) */
  readonly runs: number
  /** waiting + running */
  readonly pending: number
}

// Stored hashes with parameters past these are refused without running: a tampered or hostile
// record must not be able to make one login cost gigabytes or minutes.
const MAX_MEMORY_KIB = 1024 * 1024
const MAX_TIME_COST = 10
const MAX_PARALLELISM = 16
const ENCODED = /^\$argon2id\$v=19\$m=(\d{1,8}),t=(\d{1,3}),p=(\d{1,3})\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/

export function parseHashParams(encoded: string): HashParams | null {
  const m = ENCODED.exec(encoded)
  if (m === null) return null
  return { memoryKib: Number(m[1]), timeCost: Number(m[2]), parallelism: Number(m[3]) }
}

function acceptable(p: HashParams): boolean {
  return p.memoryKib <= MAX_MEMORY_KIB && p.timeCost <= MAX_TIME_COST && p.parallelism <= MAX_PARALLELISM
}

/** NFKC so that the same password typed on different keyboards/IMEs hashes the same */
const normalise = (password: string): string => password.normalize('NFKC')

export interface HasherOptions extends HashParams {
  /** hashes running at once (argon2 shares libuv's 4-thread pool with LMDB) */
  concurrency: number
  /** waiting hashes beyond which new ones are refused with 503 */
  maxQueue: number
}

export async function createPasswordHasher(opts: HasherOptions): Promise<PasswordHasher> {
  const options = {
    type: argon2.argon2id,
    memoryCost: opts.memoryKib,
    timeCost: opts.timeCost,
    parallelism: opts.parallelism,
  } as const
  let running = 0
  let runs = 0
  // Two lanes. New hashes (register, the re-hash after a login, passwd) start before queued
  // verifications: a login flood, from as many addresses as an attacker has, would otherwise
  // put every sign-up behind it, while new hashes are rate-limited at their source.
  const verifications: Array<() => void> = []
  const newHashes: Array<() => void> = []

  const slot = async <T>(lane: Array<() => void>, work: () => Promise<T>): Promise<T> => {
    if (running >= opts.concurrency) {
      if (verifications.length + newHashes.length >= opts.maxQueue) throw new AppError('BUSY', { retryAfterS: 1 })
      await new Promise<void>((resolve) => lane.push(resolve))
    } else running++
    runs++
    try {
      return await work()
    } finally {
      const next = newHashes.shift() ?? verifications.shift()
      if (next !== undefined) next()
      else running--
    }
  }

  // The dummy: an encoded argon2id hash at the configured parameters whose salt and digest are
  // random, so no password matches it and verifying against it costs exactly what a wrong
  // password costs (the salt and parameters drive the work; the digest is only compared). Made
  // from random bytes rather than by hashing, which kept the daemon from being ready for as long
  // as one hash takes.
  const b64 = (n: number): string => randomBytes(n).toString('base64').replace(/=+$/, '')
  const dummy = `$argon2id$v=19$m=${opts.memoryKib},t=${opts.timeCost},p=${opts.parallelism}$${b64(16)}$${b64(32)}`

  const verifyEncoded = (encoded: string, password: string): Promise<boolean> =>
    slot(verifications, () => argon2.verify(encoded, normalise(password)).catch(() => false))

  return {
    hash: (password) => slot(newHashes, () => argon2.hash(normalise(password), options)),
    async verify(encoded, password) {
      const params = parseHashParams(encoded)
      if (params === null || !acceptable(params)) {
        await verifyEncoded(dummy, password)
        return false
      }
      return verifyEncoded(encoded, password)
    },
    async verifyDummy(password) {
      await verifyEncoded(dummy, password)
      return false
    },
    needsRehash(encoded) {
      const p = parseHashParams(encoded)
      return p === null || p.memoryKib !== opts.memoryKib || p.timeCost !== opts.timeCost || p.parallelism !== opts.parallelism
    },
    get runs() {
      return runs
    },
    get pending() {
      return running + verifications.length + newHashes.length
    },
  }
}
