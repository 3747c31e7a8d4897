/**
 * The store's shared helpers (src/store/store.ts) that both backends use: hashParamsKey, what a
 * stored password hash is counted under in Store.hashTally (the dummy hash of an unknown email
 * is drawn from that tally: README, "Failed logins look alike").
 */
import t from 'tap'
import { hashParamsKey } from '../../src/store/store.js'

t.test('hashParamsKey: an argon2 PHC string up to its salt, the algorithm and the parameters that set its cost', async (t) => {
  t.equal(hashParamsKey('$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$ZmFrZWhhc2hmYWtlaGFzaA'), '$argon2id$v=19$m=19456,t=2,p=1')
  t.equal(hashParamsKey('$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA'), '$argon2id$v=19$m=65536,t=3,p=4', 'other parameters, another key')
  t.equal(
    hashParamsKey('$argon2id$v=19$m=19456,t=2,p=1$b3RoZXJzYWx0$b3RoZXJoYXNo'),
    hashParamsKey('$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA'),
    'salt and hash do not count: one key for every hash of those parameters',
  )
  t.equal(hashParamsKey('$argon2i$m=4096,t=3,p=1$c2FsdA$aGFzaA'), '$argon2i$m=4096,t=3,p=1', 'without a version field')
})

t.test('hashParamsKey: anything that is no PHC string with a salt and a hash counts under the empty key', async (t) => {
  for (const text of ['', 'not a hash', '$argon2id', '$argon2id$v=19', 'plain$text']) t.equal(hashParamsKey(text), '', JSON.stringify(text))
  t.equal(hashParamsKey('$argon2id$v=19$m=19456,t=2,p=1'), '$argon2id', 'a PHC string cut short loses its parameters with its last two fields')
})
