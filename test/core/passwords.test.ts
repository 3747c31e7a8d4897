/**
 * The argon2id hasher with real argon2: parameters, verification, the dummy, hashes refused
 * without running, re-hash detection, and the queue (at most `concurrency` at once, 503 beyond).
 */
import argon2 from 'argon2'
import t from 'tap'
import { createPasswordHasher, parseHashParams } from '../../src/core/passwords.js'
import { isAppError } from '../../src/core/errors.js'

const PARAMS = { memoryKib: 19456, timeCost: 2, parallelism: 1 }

t.test('hashes with argon2id at the configured parameters and verifies', async (t) => {
  const hasher = await createPasswordHasher({ ...PARAMS, concurrency: 2, maxQueue: 10 })
  const encoded = await hasher.hash('correct horse battery')
  t.match(encoded, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/)
  t.same(parseHashParams(encoded), PARAMS)
  t.equal(await hasher.verify(encoded, 'correct horse battery'), true)
  t.equal(await hasher.verify(encoded, 'correct horse batterY'), false)
  t.equal(await hasher.verify(encoded, ''), false)
  t.not(await hasher.hash('correct horse battery'), encoded, 'a fresh salt every time')
})

t.test('verifies the NFKC form of a password, so compatibility forms of it match', async (t) => {
  const hasher = await createPasswordHasher({ ...PARAMS, concurrency: 2, maxQueue: 10 })
  const encoded = await hasher.hash('pass\uff37ord-\u212a')
  t.equal(await hasher.verify(encoded, 'passWord-K'), true)
})

t.test('answers false, without throwing, for stored hashes it cannot read, and runs the dummy instead', async (t) => {
  const hasher = await createPasswordHasher({ ...PARAMS, concurrency: 2, maxQueue: 10 })
  const argon2i = await argon2.hash('pw', { type: argon2.argon2i, memoryCost: 19456, timeCost: 2, parallelism: 1 })
  for (const encoded of ['', 'not a hash', '$2b$10$abcdefghijklmnopqrstuu5Fz1k3mGz3Zc6v4Kk2Qp9QyZyq1S6e', argon2i, '$argon2id$v=19$m=19456,t=2,p=1$$', '$argon2id$v=16$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaA']) {
    const before = hasher.runs
    t.equal(await hasher.verify(encoded, 'pw'), false, JSON.stringify(encoded.slice(0, 20)))
    t.equal(hasher.runs, before + 1, 'one hash ran: the dummy, so the answer takes the usual time')
  }
})

t.test('refuses a stored hash with absurd parameters without running it', async (t) => {
  const hasher = await createPasswordHasher({ ...PARAMS, concurrency: 2, maxQueue: 10 })
  const real = await hasher.hash('pw')
  const absurd = [
    real.replace('m=19456', 'm=2097152'), // 2 GiB
    real.replace('m=19456', 'm=1048577'), // 1 GiB + 1 KiB
    real.replace('m=19456', 'm=99999999'),
    real.replace('m=19456', 'm=999999999'),
    real.replace('t=2', 't=1000'),
    real.replace('t=2', 't=11'),
    real.replace('p=1', 'p=255'),
  ]
  const realVerify = argon2.verify
  const ran: string[] = []
  argon2.verify = (digest: string, ...rest: unknown[]) => {
    ran.push(digest)
    return (realVerify as (...a: unknown[]) => Promise<boolean>)(digest, ...rest)
  }
  t.teardown(() => {
    argon2.verify = realVerify
  })
  for (const encoded of absurd) {
    ran.length = 0
    const before = hasher.runs
    const started = performance.now()
    t.equal(await hasher.verify(encoded, 'pw'), false, encoded.slice(0, 40))
    const ms = performance.now() - started
    t.equal(hasher.runs, before + 1, 'exactly one hash ran (the dummy)')
    t.ok(ms < 1500, `answered in ${Math.round(ms)} ms`)
    t.equal(ran.length, 1)
    t.not(ran[0], encoded, 'argon2 never saw the absurd hash')
    t.same(parseHashParams(ran[0]!), PARAMS, 'it ran the dummy, at the configured parameters')
  }
})

t.test('says a hash needs re-hashing when its parameters differ from the configured ones', async (t) => {
  const hasher = await createPasswordHasher({ ...PARAMS, concurrency: 2, maxQueue: 10 })
  t.equal(hasher.needsRehash(await hasher.hash('pw')), false)
  const stronger = await argon2.hash('pw', { type: argon2.argon2id, memoryCost: 32768, timeCost: 3, parallelism: 1 })
  t.equal(hasher.needsRehash(stronger), true)
  t.equal(await hasher.verify(stronger, 'pw'), true, 'a hash under other acceptable parameters still verifies')
  const weaker = await argon2.hash('pw', { type: argon2.argon2id, memoryCost: 8192, timeCost: 1, parallelism: 1 })
  t.equal(hasher.needsRehash(weaker), true)
  t.equal(hasher.needsRehash('garbage'), true)
})

t.test('runs at most `concurrency` hashes at once and queues the rest', async (t) => {
  const hasher = await createPasswordHasher({ ...PARAMS, concurrency: 2, maxQueue: 10 })
  const encoded = await hasher.hash('pw')
  // count argon2 verifications in flight (the real ones still run underneath)
  const realVerify = argon2.verify
  let inFlight = 0
  let maxInFlight = 0
  argon2.verify = async (...args: Parameters<typeof realVerify>) => {
    maxInFlight = Math.max(maxInFlight, ++inFlight)
    try {
      return await realVerify(...args)
    } finally {
      inFlight--
    }
  }
  t.teardown(() => {
    argon2.verify = realVerify
  })
  const base = hasher.runs
  const all = Array.from({ length: 7 }, (_, i) => hasher.verify(encoded, i === 0 ? 'pw' : `wrong${i}`))
  t.equal(hasher.runs - base, 2, 'two started at once')
  t.equal(hasher.pending, 7, 'and five wait')
  t.same(await Promise.all(all), [true, false, false, false, false, false, false])
  t.equal(hasher.runs - base, 7)
  t.equal(hasher.pending, 0)
  t.equal(maxInFlight, 2, 'never more than two argon2 runs at once')
})

t.test('refuses with BUSY (503, retry after 1 s) when the queue is full, and recovers', async (t) => {
  const hasher = await createPasswordHasher({ ...PARAMS, concurrency: 1, maxQueue: 2 })
  const encoded = await hasher.hash('pw')
  const accepted = [hasher.verify(encoded, 'pw'), hasher.verify(encoded, 'x'), hasher.verify(encoded, 'y')]
  const refused = await hasher.verifyDummy('z').then(
    () => null,
    (err: unknown) => err,
  )
  t.ok(isAppError(refused), 'an AppError, not a library error')
  t.match(refused, { code: 'BUSY', status: 503, retryAfterS: 1, message: 'Server busy, try again shortly' })
  t.same(await Promise.all(accepted), [true, false, false])
  t.equal(await hasher.verify(encoded, 'pw'), true, 'room again once the queue drains')
})
