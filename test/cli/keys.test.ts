import t from 'tap'
import { ctlFor } from './run.js'

const KID = /^[A-Za-z0-9_-]{16}$/

t.test('keys list, rotate and revoke on a store, in table and JSON forms', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  // a store with a user but no key yet (authd creates the first key on its first start)
  t.equal((await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: 'correct horse battery\n' })).code, 0)
  const none = await ctl(['keys', 'list'])
  t.equal(none.stdout, 'No keys (authd creates the first one on its first start).\n')

  const first = await ctl(['keys', 'rotate', '--json'])
  t.equal(first.code, 0, first.stderr)
  const k1 = first.json().active
  t.match(first.json(), { active: { kid: KID, alg: 'ES256', state: 'active', retiringAt: null, verifiesUntil: null }, retiring: [] })

  const second = await ctl(['keys', 'rotate', '--algorithm', 'RS256', '--now'])
  t.equal(second.code, 0, second.stderr)
  const [line1, line2] = second.stdout.trimEnd().split('\n')
  const k2kid = /^New active key (\S+) \(RS256\) signs from now on\.$/.exec(line1!)?.[1]
  t.match(k2kid, KID)
  t.match(line2, new RegExp(`^Key ${k1.kid} is retiring: it verifies tokens until \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ, then retires\\.$`))

  const listed = await ctl(['keys', 'list', '--json'])
  const keys = listed.json().keys
  t.same(keys.map((k: { kid: string; state: string; alg: string }) => [k.kid, k.state, k.alg]), [
    [k2kid, 'active', 'RS256'],
    [k1.kid, 'retiring', 'ES256'],
  ])
  const retiring = keys[1]
  // verifies for one access-token lifetime (15m) plus the clock tolerance (5s) after it stopped signing
  t.equal(Date.parse(retiring.verifiesUntil) - Date.parse(retiring.retiringAt), 15 * 60_000 + 5_000)
  t.notOk('privateKeyPem' in retiring || 'publicKeyPem' in retiring, 'no key material is shown')

  const table = await ctl(['keys', 'list'])
  const rows = table.stdout.trimEnd().split('\n')
  t.match(rows[0], /^KID +ALG +STATE +CREATED +SIGNS FROM +RETIRING +RETIRED$/)
  t.match(rows[1], new RegExp(`^${k2kid} +RS256 +active +\\S+Z +\\S+Z +- +-$`))
  t.match(rows[2], new RegExp(`^${k1.kid} +ES256 +retiring +\\S+Z +\\S+Z +\\S+Z +-$`))

  const unknown = await ctl(['keys', 'revoke', 'no-such-kid', '--yes'])
  t.equal(unknown.code, 1)
  t.equal(unknown.stderr, 'authctl: No key with kid "no-such-kid".\n')

  const unasked = await ctl(['keys', 'revoke', k1.kid], { input: 'yes\n' })
  t.equal(unasked.code, 2, 'without --yes and without a terminal it refuses')
  t.match(unasked.stderr, /^authctl: Will not revoke key \S+ without confirmation: pass --yes/)

  const revoked = await ctl(['keys', 'revoke', k1.kid, '--yes'])
  t.equal(revoked.code, 0)
  t.equal(revoked.stdout, `Revoked key ${k1.kid}: tokens signed with it no longer verify.\n`)
  t.same((await ctl(['keys', 'list', '--json'])).json().keys.map((k: { kid: string }) => k.kid), [k2kid])

  // the active key (a compromised one, say): it goes at once, and a new one of the same
  // algorithm replaces it first, so the daemon always has a key to sign with
  const replaced = await ctl(['keys', 'revoke', k2kid!, '--yes', '--json'])
  t.equal(replaced.code, 0, replaced.stderr)
  const doc = replaced.json()
  t.match(doc, { revoked: { kid: k2kid }, active: { kid: KID, alg: 'RS256', state: 'active' } })
  t.same((await ctl(['keys', 'list', '--json'])).json().keys.map((k: { kid: string; state: string }) => [k.kid, k.state]), [[doc.active.kid, 'active']])
  const text = await ctl(['keys', 'revoke', doc.active.kid, '--yes'])
  t.equal(text.code, 0)
  t.match(text.stdout, new RegExp(`^New active key \\S+ \\(RS256\\) signs from now on\\.\nRevoked key ${doc.active.kid}: tokens signed with it no longer verify\\.\n$`))

  // a key still next goes with the active key's replacement: the question names it, the answer reports it
  const next = (await ctl(['keys', 'rotate', '--algorithm', 'ES256', '--json'], { env: { AUTHD_TOKENS_KEY_LEAD: '10m' } })).json().key as { kid: string; state: string }
  t.equal(next.state, 'next')
  const activeNow = (await ctl(['keys', 'list', '--json'])).json().keys.find((k: { state: string }) => k.state === 'active') as { kid: string }
  const asked = await ctl(['keys', 'revoke', activeNow.kid])
  t.equal(asked.code, 2)
  t.equal(asked.stderr, `authctl: Will not revoke key ${activeNow.kid} (the active key: a new key replaces it first, and replaces the next key ${next.kid}) without confirmation: pass --yes (standard input is not a terminal).\n`)
  const withNext = await ctl(['keys', 'revoke', activeNow.kid, '--yes', '--json'])
  t.match(withNext.json(), { revoked: { kid: activeNow.kid }, replaced: [{ kid: next.kid, state: 'next' }] })
  t.notOk((await ctl(['keys', 'list', '--json'])).json().keys.some((k: { kid: string }) => k.kid === next.kid), 'the next key is gone')

  const bad = await ctl(['keys', 'rotate', '--algorithm', 'HS256'])
  t.equal(bad.code, 2)
  t.equal(bad.stderr, "authctl: Option '--algorithm <alg>' argument 'HS256' is invalid. Allowed choices are ES256, RS256.\n")
})

t.test('keys rotate publishes a next key that signs tokens.key_lead later; list shows it and when it starts signing', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  t.equal((await ctl(['user', 'add', 'ann@example.com', '--password-stdin'], { input: 'correct horse battery\n' })).code, 0)
  const first = (await ctl(['keys', 'rotate', '--json'])).json()
  t.match(first, { key: { kid: KID, state: 'active' }, active: { kid: first.key.kid }, retiring: [] }, 'the first key signs at once: no other key could')

  const rotated = await ctl(['keys', 'rotate', '--json'], { env: { AUTHD_TOKENS_KEY_LEAD: '10m' } })
  t.equal(rotated.code, 0, rotated.stderr)
  const doc = rotated.json()
  t.match(doc, { key: { kid: KID, alg: 'ES256', state: 'next', retiringAt: null }, active: { kid: first.key.kid, state: 'active' }, retiring: [], replaced: [] })
  t.equal(Date.parse(doc.key.activatedAt) - Date.parse(doc.key.createdAt), 10 * 60_000, 'signs tokens.key_lead after it was made')

  const text = await ctl(['keys', 'rotate'])
  t.equal(text.code, 0, text.stderr)
  const [line0, line1, line2] = text.stdout.trimEnd().split('\n')
  t.equal(line0, `Key ${doc.key.kid} was still next and is replaced: it never signed.`)
  const kid = /^New key (\S+) \(ES256\) is in the JWKS now and signs from \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(tokens\.key_lead\)\.$/.exec(line1!)?.[1]
  t.match(kid, KID)
  t.equal(line2, `Key ${first.key.kid} signs until then, then is retiring: it verifies its tokens until they expire.`)

  const listed = (await ctl(['keys', 'list', '--json'])).json().keys
  t.same(listed.map((k: { kid: string; state: string }) => [k.kid, k.state]), [[kid, 'next'], [first.key.kid, 'active']], 'a rotation replaces a key still next')
  const rows = (await ctl(['keys', 'list'])).stdout.trimEnd().split('\n')
  t.match(rows[0], /^KID +ALG +STATE +CREATED +SIGNS FROM +RETIRING +RETIRED$/, 'a next key\'s time to come is when it signs from, not an activation')
  const [, created, signsFrom] = new RegExp(`^${kid} +ES256 +next +(\\S+Z) +(\\S+Z) +- +-$`).exec(rows[1]!) ?? []
  t.ok(Date.parse(signsFrom!) > Date.parse(created!), `it signs from ${signsFrom}, after it was made (${created})`)

  const now = (await ctl(['keys', 'rotate', '--now', '--json'])).json()
  t.match(now, { key: { state: 'active' }, retiring: [{ kid: first.key.kid, state: 'retiring' }] })
  t.equal(now.active.kid, now.key.kid, '--now: the new key signs at once')
  t.same((await ctl(['keys', 'list', '--json'])).json().keys.map((k: { state: string }) => k.state), ['active', 'retiring'])
})
