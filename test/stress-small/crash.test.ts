import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

t.test('kill -9 under load, three times: no acknowledged write lost, no partial record, no logged-out token back', async (t) => {
  const r = await runSmall(t, ['crash'])
  const crash = r.get('crash')
  allPass(t, crash)
  t.equal(figure(t, crash, 'lost').value, 0)
  t.equal(figure(t, crash, 'revoked working').value, 0)
  allPass(t, r.get('hygiene'))
})
