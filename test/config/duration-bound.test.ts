/**
 * Durations and rate windows are bounded (README, "Configure"): at most 36500d. Longer ones put a
 * key's start or a session's end past the last date a Date holds, and authctl's listings failed.
 */
import t, { type Test } from 'tap'
import { loadConfig } from '../../src/config/load.js'
import { isAppError } from '../../src/errors.js'

const load = (cwd: string, env: Record<string, string>) => loadConfig({ flags: {}, env, cwd }).config

function refusal(t: Test, fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    t.ok(isAppError(err) && err.code === 'CONFIG_INVALID', 'a CONFIG_INVALID error')
    return (err as Error).message
  }
  t.fail('expected a CONFIG_INVALID error')
  return ''
}

t.test('a duration over 36500d is refused naming the key; 36500d is taken', async (t) => {
  for (const [env, key] of [
    ['AUTHD_TOKENS_KEY_LEAD', 'tokens.key_lead'],
    ['AUTHD_TOKENS_ACCESS_TTL', 'tokens.access_ttl'],
    ['AUTHD_SESSIONS_ABSOLUTE_TTL', 'sessions.absolute_ttl'],
    ['AUTHD_AUDIT_RETENTION', 'audit.retention'],
  ] as const) {
    const message = refusal(t, () => load(t.testdir({}), { [env]: '99999999d' }))
    t.match(message, `config: ${key} must be a duration of at most 36500d (got "99999999d"`, key)
    t.match(refusal(t, () => load(t.testdir({}), { [env]: '36501d' })), `${key} must be a duration of at most 36500d`, `${key}: a day over`)
  }
  const config = load(t.testdir({}), { AUTHD_TOKENS_KEY_LEAD: '36500d', AUTHD_SESSIONS_IDLE_TTL: '36500d', AUTHD_SESSIONS_ABSOLUTE_TTL: '36500d' })
  t.equal(config.tokens.keyLeadMs, 36500 * 86_400_000, 'the bound itself is taken')
})

t.test("a rate's window over 36500d is refused naming the key", async (t) => {
  t.match(refusal(t, () => load(t.testdir({}), { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '5/99999999d' })), 'config: rate_limit.login.per_ip must be a rate over a duration of at most 36500d (got "5/99999999d"')
  t.equal(load(t.testdir({}), { AUTHD_RATE_LIMIT_LOGIN_PER_IP: '5/36500d' }).rateLimit.login.perIp.count, 5)
})
