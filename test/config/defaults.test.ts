import { readFileSync } from 'node:fs'
import { parse } from 'smol-toml'
import t from 'tap'
import { builtInDefaults, derivePublicUrl } from '../../src/config/defaults.js'
import { envName, KEYS, type KeyPath } from '../../src/config/keys.js'
import { flattenTable } from '../../src/config/layer.js'

t.test('auth.example.toml parses and equals the built-in defaults', async (t) => {
  const example = parse(readFileSync(new URL('../../auth.example.toml', import.meta.url), 'utf8'))
  // smol-toml builds null-prototype tables; compare plain copies, strictly
  t.strictSame(structuredClone(example), builtInDefaults())
})

t.test('auth.example.toml mentions every key, public_url and mfa.issuer commented out', async (t) => {
  const text = readFileSync(new URL('../../auth.example.toml', import.meta.url), 'utf8')
  t.match(text, /^# public_url = /m)
  t.match(text, /^# issuer = /m)
  for (const path of Object.keys(KEYS)) {
    const key = path.split('.').at(-1)!
    t.match(text, new RegExp(`^#? ?${key} = `, 'm'), path)
  }
})

t.test('every key has a default except the derived server.public_url and mfa.issuer', async (t) => {
  const defaults = [...flattenTable(builtInDefaults(), 'by default').keys()].sort()
  const keys = Object.keys(KEYS).filter((key) => key !== 'server.public_url' && key !== 'mfa.issuer').sort()
  t.strictSame(defaults, keys)
})

t.test('every key has its own environment variable', async (t) => {
  const names = Object.keys(KEYS).map((path) => envName(path as KeyPath))
  t.equal(new Set(names).size, names.length)
  t.equal(envName('rate_limit.login.per_ip'), 'AUTHD_RATE_LIMIT_LOGIN_PER_IP')
  t.equal(envName('tokens.access_ttl'), 'AUTHD_TOKENS_ACCESS_TTL')
})

t.test('builtInDefaults returns a fresh object each call', async (t) => {
  const a = builtInDefaults()
  a.server.trust_proxy.push('10.0.0.0/8')
  t.same(builtInDefaults().server.trust_proxy, [])
})

t.test('the derived public URL brackets IPv6 hosts', async (t) => {
  t.equal(derivePublicUrl('127.0.0.1', 8080), 'http://127.0.0.1:8080')
  t.equal(derivePublicUrl('::', 0), 'http://[::]:0')
  t.equal(derivePublicUrl('auth.local', 80), 'http://auth.local:80')
})
