/**
 * The argon2id hasher with real argon2: parameters, verification, the dummy, hashes refused
 * without running, re-hash detection, and the queue (at most `concurrency` at once, 503 beyond).
 */
import { randomBytes } from 'node:crypto'
import argon2 from 'argon2'
import t, { type Test } from 'tap'
import { createPasswordHasher, dummyParamsFor, parseHashParams } from '../../src/core/passwords.js'
import { openLmdbStore } from '../../src/store/lmdb-store.js'
import { buildApp } from '../helpers/app.js'
import { newUserId } from '../../src/core/users.js'
import { isAppError } from '../../src/errors.js'

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

const set = (m: number, t: number, p = 1): string => `$argon2id$v=19$m=${m},t=${t},p=${p}`
const params = (m: number, t: number, p = 1) => ({ memoryKib: m, timeCost: t, parallelism: p })

/** argon2.verify watched: the parameters of every digest verified, in order */
function watchVerify(t: Test): string[] {
  const realVerify = argon2.verify
  const ran: string[] = []
  argon2.verify = (digest: string, ...rest: unknown[]) => {
    ran.push(/\$(m=\d+,t=\d+,p=\d+)\$/.exec(digest)?.[1] ?? digest)
    return (realVerify as (...a: unknown[]) => Promise<boolean>)(digest, ...rest)
  }
  t.teardown(() => {
    argon2.verify = realVerify
  })
  return ran
}

t.test('the dummy parameters follow the stored hashes in their proportions', async (t) => {
  const tally = { [set(19456, 2)]: 3, [set(65536, 3)]: 1, [set(8192, 4)]: 0 }
  const counts = new Map<string, number>()
  for (let i = 0; i < 1000; i++) {
    const p = dummyParamsFor(tally, (i + 0.5) / 1000, params(1, 1))
    const k = `m=${p.memoryKib},t=${p.timeCost}`
    counts.set(k, (counts.get(k) ?? 0) + 1)
  }
  t.same(Object.fromEntries(counts), { 'm=19456,t=2': 750, 'm=65536,t=3': 250 }, 'evenly spread draws land 3 : 1; a set with no hash never')
  t.same(dummyParamsFor({}, 0.5, params(19456, 2)), params(19456, 2), 'an empty store: the configured parameters')
  t.same(dummyParamsFor({ [set(19456, 2)]: 1 }, 0.999999, params(1, 1)), params(19456, 2))
  // hashes the hasher will not run are verified with the dummy at the configured parameters
  const odd = { '$2b$10': 1, [set(2097152, 2)]: 1, [set(19456, 3)]: 2 }
  const oddCounts = [0, 0.3, 0.6, 0.9].map((u) => dummyParamsFor(odd, u, params(19456, 2)).timeCost)
  t.same(oddCounts.sort(), [2, 2, 3, 3], 'unreadable and absurd sets count as the configured parameters')
})

t.test('an unknown email\'s dummy runs under the parameters drawn from the tally, one dummy per set, the tally read at each call', async (t) => {
  const ran = watchVerify(t)
  let tally: Record<string, number> = { [set(1024, 1)]: 1, [set(2048, 2)]: 3 }
  let i = 0
  const hasher = await createPasswordHasher({ ...PARAMS, concurrency: 2, maxQueue: 100, tally: async () => tally, uniform: () => (i++ % 4) / 4 + 0.01 })
  for (let n = 0; n < 8; n++) t.equal(await hasher.verifyDummy('pw', `nobody${n}@example.com`), false)
  const round = ['m=1024,t=1,p=1', 'm=2048,t=2,p=1', 'm=2048,t=2,p=1', 'm=2048,t=2,p=1']
  t.same(ran, [...round, ...round], 'draws at 0, 1/4, 2/4, 3/4 of a 1 : 3 tally')
  ran.length = 0
  tally = { [set(1024, 1)]: 4 } // every user re-hashed
  await hasher.verifyDummy('pw', 'nobody@example.com')
  t.same(ran, ['m=1024,t=1,p=1'])
})

t.test('the same unknown email costs the same parameter set on every attempt (a fresh draw would tell it from a user)', async (t) => {
  const ran = watchVerify(t)
  const hasher = await createPasswordHasher({ ...PARAMS, concurrency: 2, maxQueue: 100, tally: async () => ({ [set(1024, 1)]: 1, [set(2048, 1)]: 1 }) })
  const seen = new Set<string>()
  for (let n = 0; n < 24; n++) {
    ran.length = 0
    for (let k = 0; k < 3; k++) await hasher.verifyDummy('pw', `nobody${n}@example.com`)
    t.equal(new Set(ran).size, 1, `nobody${n}: one set on every attempt`)
    seen.add(ran[0]!)
  }
  t.equal(seen.size, 2, 'and across emails both sets occur')
})

t.test('after the parameters are raised over a store hashed at the old ones, an unknown email costs the old ones (login, real store)', async (t) => {
  const dir = t.testdir()
  // users hashed at t=2 (the default) by an earlier configuration
  const store = await openLmdbStore({ path: dir })
  t.teardown(() => store.close())
  const old = await createPasswordHasher({ ...PARAMS, concurrency: 1, maxQueue: 10 })
  for (let n = 0; n < 3; n++) {
    const at = Date.now()
    await store.createUser({ id: newUserId(), email: `u${n}@example.com`, passwordHash: await old.hash('pw-pw-pw-pw-pw'), createdAt: at, updatedAt: at, disabled: false })
  }
  const app = await buildApp(t, { dir, store, env: { AUTHD_PASSWORDS_TIME_COST: '3' } })
  const ran = watchVerify(t)
  const client = { ip: '127.0.0.1', ipKey: '127.0.0.1', userAgent: 'test' }
  for (const email of ['nobody@example.com', 'u0@example.com', 'ghost@example.com']) {
    await t.rejects(app.auth.login({ email, password: 'wrong-password-1' }, client), { code: 'INVALID_CREDENTIALS' })
  }
  t.same(ran, ['m=19456,t=2,p=1', 'm=19456,t=2,p=1', 'm=19456,t=2,p=1'], 'unknown and known alike, at the stored parameters (not t=3)')
})

t.test('the draw of an unknown email is fixed by a secret, not by the process: the same secret draws alike, another differs', async (t) => {
  const ran = watchVerify(t)
  const tally = async () => ({ [set(1024, 1)]: 1, [set(2048, 1)]: 1 })
  const draws = async (uniformSecret: string): Promise<string[]> => {
    const hasher = await createPasswordHasher({ ...PARAMS, concurrency: 1, maxQueue: 100, tally, uniformSecret })
    ran.length = 0
    for (let n = 0; n < 24; n++) await hasher.verifyDummy('pw', `nobody${n}@example.com`)
    return [...ran]
  }
  const secret = randomBytes(32).toString('base64url')
  const first = await draws(secret)
  t.same(await draws(secret), first, 'a second hasher (a restart, another instance) under the same secret: the same set for each email')
  t.equal(new Set(first).size, 2, 'both sets occur')
  t.not((await draws(randomBytes(32).toString('base64url'))).join(), first.join(), 'another secret draws otherwise')
})

t.test('an unknown email costs the same parameter set after a restart (the key comes from the store, real LMDB)', async (t) => {
  const dir = t.testdir()
  const store = await openLmdbStore({ path: dir })
  t.teardown(() => store.close())
  // half the users at t=2, half at t=3: each unknown email draws one of the two
  for (const [n, timeCost] of [2, 2, 3, 3].entries()) {
    const h = await createPasswordHasher({ ...PARAMS, timeCost, concurrency: 1, maxQueue: 10 })
    const at = Date.now()
    await store.createUser({ id: newUserId(), email: `u${n}@example.com`, passwordHash: await h.hash('pw-pw-pw-pw-pw'), createdAt: at, updatedAt: at, disabled: false })
  }
  const ran = watchVerify(t)
  const client = { ip: '127.0.0.1', ipKey: '127.0.0.1', userAgent: 'test' }
  const probe = async (): Promise<string[]> => {
    // a daemon's services on that store, started afresh each time
    const app = await buildApp(t, { dir, store })
    ran.length = 0
    for (let n = 0; n < 16; n++) {
      await t.rejects(app.auth.login({ email: `nobody${n}@example.com`, password: 'wrong-password-1' }, { ...client, ip: `127.0.0.${n + 1}`, ipKey: `127.0.0.${n + 1}` }), { code: 'INVALID_CREDENTIALS' })
    }
    return [...ran]
  }
  const before = await probe()
  t.equal(new Set(before).size, 2, 'both sets occur')
  t.same(await probe(), before, 'each email costs what it cost before the restart')
})
