import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

t.test('hostile input at small scale: no 5xx, no exit, every body the envelope, no token attack accepted, no secret logged', async (t) => {
  const r = await runSmall(t, ['fuzz'])
  const fuzz = r.get('fuzz')
  allPass(t, fuzz)
  t.ok(Number(figure(t, fuzz, 'requests').value) >= 300, 'a few hundred requests')
  t.equal(figure(t, fuzz, 'attacks accepted').value, 0)
  t.equal(figure(t, fuzz, 'control token').value, 200, 'a hand-signed token with the real claims is accepted: the attacks are real')
  allPass(t, r.get('hygiene'))
})
