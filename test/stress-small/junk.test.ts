import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

t.test('junk at small scale: absolute-form targets and unknown paths do not grow /metrics per request, a 404 flood writes a bounded number of log lines', async (t) => {
  const r = await runSmall(t, ['junk'])
  const junk = r.get('junk')
  allPass(t, junk)
  t.equal(figure(t, junk, 'absolute-form → 400').value, 200)
  t.ok(Number(figure(t, junk, '/metrics growth').value) <= 10)
  t.ok(Number(figure(t, junk, '404 log lines/s').value) <= 3)
  allPass(t, r.get('hygiene'))
})
