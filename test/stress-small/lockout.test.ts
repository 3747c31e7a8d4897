import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

t.test('lockout at small scale: an attacker spending per_email from 50 addresses never refuses the victim’s own browser', async (t) => {
  const r = await runSmall(t, ['lockout'])
  const lockout = r.get('lockout')
  allPass(t, lockout)
  t.equal(figure(t, lockout, 'victim refusals').value, 0)
  t.equal(figure(t, lockout, 'stranger with the right password').value, 429)
  allPass(t, r.get('hygiene'))
})
