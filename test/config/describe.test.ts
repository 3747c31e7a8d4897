import { join } from 'node:path'
import { stringify } from 'smol-toml'
import t from 'tap'
import { builtInDefaults } from '../../src/config/defaults.js'
import { describeConfig } from '../../src/config/describe.js'
import { envName, KEYS, type KeyPath } from '../../src/config/keys.js'
import { flattenTable } from '../../src/config/layer.js'
import { loadConfig } from '../../src/config/load.js'

t.test('describes the defaults in TOML shape, public_url and store.path made explicit', async (t) => {
  const cwd = t.testdir({})
  const { config } = loadConfig({ flags: {}, env: {}, cwd })
  const expected = builtInDefaults()
  expected.server.public_url = 'http://127.0.0.1:8080'
  expected.mfa.issuer = 'authd'
  expected.store.path = join(cwd, 'data')
  t.strictSame(describeConfig(config), expected)
})

t.test('a described config read back as a file gives the same config', async (t) => {
  const first = loadConfig({
    flags: { port: 9001 },
    env: { AUTHD_TOKENS_ACCESS_TTL: '90s', AUTHD_SERVER_BODY_LIMIT: '1000b', AUTHD_CORS_ORIGINS: 'https://a.example' },
    cwd: t.testdir({}),
  }).config
  const cwd = t.testdir({ 'auth.toml': stringify(describeConfig(first)) })
  t.strictSame(loadConfig({ flags: {}, env: {}, cwd }).config, first)
})

t.test('every described value is accepted back from its environment variable', async (t) => {
  const cwd = t.testdir({})
  const { config } = loadConfig({ flags: {}, env: {}, cwd })
  const env: Record<string, string> = {}
  for (const [path, { value }] of flattenTable(describeConfig(config), 'described')) {
    env[envName(path)] = Array.isArray(value) ? JSON.stringify(value) : String(value)
  }
  t.equal(Object.keys(env).length, Object.keys(KEYS).length)
  t.strictSame(loadConfig({ flags: {}, env, cwd }).config, config)
})
