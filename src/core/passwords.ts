/**
 * Password hashing: argon2id with the configured parameters, run through a small queue so that a
 * login flood cannot occupy libuv's thread pool, which LMDB commits share.
 */
import argon2 from 'argon2'
import { createHmac, randomBytes } from 'node:crypto'
import { AppError } from '../errors.js'

export interface HashParams {
  memoryKib: number
  timeCost: number
  parallelism: number
}

export interface PasswordHasher {
  hash(password: string): Promise<string>
  /** false for a wrong password and for a hash we refuse to run; never throws for bad input */
  verify(encoded: string, password: string): Promise<boolean>
  /**
   * Runs a verification that always fails, costing what a real one costs (unknown users): under
   * the parameters of one of the stored hashes, drawn in their proportions (`tally`), the same
   * set every time for the same `email` (see dummyParamsFor).
   */
  verifyDummy(password: string, email?: string): Promise<false>
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

const PARAMS_KEY = /^\$argon2id\$v=19\$m=(\d{1,8}),t=(\d{1,3}),p=(\d{1,3})$/

/**
 * The parameters an unknown email's dummy verification runs under. `tally` counts the stored
 * hashes per parameter set (the PHC string up to the salt, as Store.hashTally keys them); `u`, in
 * [0, 1), picks one in their proportions. Without this, raising the parameters made every unknown
 * email cost the new ones while the users not yet re-hashed (at their next login) cost the old:
 * the unknown ones stood out (249 ms against 36–49 ms). A hash we would not run (unreadable,
 * absurd parameters) is verified with the configured parameters, and counted as such.
 */
export function dummyParamsFor(tally: Readonly<Record<string, number>>, u: number, configured: HashParams): HashParams {
  const sets: Array<[HashParams, number]> = []
  let total = 0
  for (const key of Object.keys(tally).sort()) {
    const n = tally[key]!
    if (!(n > 0)) continue
    const m = PARAMS_KEY.exec(key)
    const parsed = m === null ? null : { memoryKib: Number(m[1]), timeCost: Number(m[2]), parallelism: Number(m[3]) }
    sets.push([parsed !== null && acceptable(parsed) ? parsed : configured, n])
    total += n
  }
  let x = u * total
  for (const [params, n] of sets) {
    if (x < n) return params
    x -= n
  }
  return sets.at(-1)?.[0] ?? configured
}

/** NFKC so that the same password typed on different keyboards/IMEs hashes the same */
const normalise = (password: string): string => password.normalize('NFKC')

export interface HasherOptions extends HashParams {
  /** hashes running at once (argon2 shares libuv's 4-thread pool with LMDB) */
  concurrency: number
  /** waiting hashes beyond which new ones are refused with 503 */
  maxQueue: number
  /** the stored hashes per parameter set (Store.hashTally); without it the dummy runs the configured parameters */
  tally?: () => Promise<Readonly<Record<string, number>>>
  /** [0, 1) for an email, fixed per email (tests inject their own); default a keyed hash of it */
  uniform?: (email: string | undefined) => number
  /**
   * The secret that key is derived from (the device-cookie key, kept in the store): the same draw
   * for an email on every instance and after a restart. Without it, a key of this process.
   */
  uniformSecret?: string
}

/**
 * A number in [0, 1) fixed for each email under a key: an unknown email probed again costs what
 * it cost before, as a user's own hash does. A fresh draw on every attempt would let a few probes
 * of one address tell a user with old-parameter hash (always slow) from an unknown one (slow only
 * now and then); so would a draw that changed with the process (a restart, another instance
 * behind the same balancer): an email whose cost changed is one without a user. So the key is
 * derived from a secret the store keeps (`secret`, base64url), under a label of its own.
 */
export function keyedUniform(secret?: string): (email: string | undefined) => number {
  const key = secret === undefined ? randomBytes(32) : createHmac('sha256', Buffer.from(secret, 'base64url')).update('authd: the dummy hash of an unknown email').digest()
  return (email) => (email === undefined ? randomBytes(6) : createHmac('sha256', key).update(email).digest()).readUIntBE(0, 6) / 2 ** 48
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

  // The dummies: encoded argon2id hashes, one per parameter set (made when first needed), whose
  // salt and digest are random, so no password matches and verifying against one costs exactly
  // what a wrong password costs under its parameters (the salt and parameters drive the work; the
  // digest is only compared). Made from random bytes rather than by hashing, which kept the
  // daemon from being ready for as long as one hash takes.
  const b64 = (n: number): string => randomBytes(n).toString('base64').replace(/=+$/, '')
  const dummies = new Map<string, string>()
  const dummyFor = (p: HashParams): string => {
    const params = `m=${p.memoryKib},t=${p.timeCost},p=${p.parallelism}`
    let d = dummies.get(params)
    if (d === undefined) {
      // a store holds a handful of sets; a hostile one could hold many
      if (dummies.size >= 64) dummies.clear()
      d = `$argon2id$v=19$${params}$${b64(16)}$${b64(32)}`
      dummies.set(params, d)
    }
    return d
  }
  const configured: HashParams = { memoryKib: opts.memoryKib, timeCost: opts.timeCost, parallelism: opts.parallelism }
  const dummy = dummyFor(configured)
  const uniform = opts.uniform ?? keyedUniform(opts.uniformSecret)

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
    async verifyDummy(password, email) {
      const params = opts.tally === undefined ? configured : dummyParamsFor(await opts.tally(), uniform(email), configured)
      await verifyEncoded(dummyFor(params), password)
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
