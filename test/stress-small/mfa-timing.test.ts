import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

// 20 pairs are too few for the statistical thresholds, which npm run stress judges at full scale
t.test('wrong-password logins look alike whether a second factor is on or not; the second step completes; no second-factor secret reaches the logs', async (t) => {
  const r = await runSmall(t, ['mfa-timing'])
  const mfa = r.get('mfa-timing')
  allPass(t, mfa)
  t.equal(figure(t, mfa, 'differing 401s').value, 0, 'the same 401, factor or not')
  t.equal(figure(t, mfa, 'factors on').value, 4, 'half the users had the factor on')
  t.equal(figure(t, mfa, 'second steps ok').value, 2, 'a TOTP code and a recovery code each completed a login')
  t.ok(Number(figure(t, mfa, 'pairs').value) >= 20)
  t.equal(figure(t, mfa, '|Δ median|').op, '<=')

  const hygiene = r.get('hygiene')
  allPass(t, hygiene)
  // judged only when the run handled second-factor secrets: this one did
  for (const label of ['TOTP secrets', 'TOTP codes', 'recovery codes', 'mfaTokens']) t.equal(figure(t, hygiene, label).value, 0, `no ${label} in the logs`)
})
