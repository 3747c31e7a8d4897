import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

// 20 pairs are too few for the statistical thresholds, which npm run stress judges at full scale
t.test('failed logins look alike over HTTP: identical 401s for unknown email and wrong password, also right after a parameter change; old-parameter hashes are re-hashed', async (t) => {
  const r = await runSmall(t, ['timing'])
  const timing = r.get('timing')
  allPass(t, timing)
  t.equal(figure(t, timing, 'differing 401s').value, 0)
  t.equal(figure(t, timing, 'old users re-hashed').value, 2)
  // measured after the parameter change over a store hashed at the old ones (judged at full scale)
  t.ok(figure(t, timing, 'before pairs').pass)
  t.equal(figure(t, timing, 'old-param user before re-hash: |Δ median|').op, '<=')
  allPass(t, r.get('hygiene'))
})
