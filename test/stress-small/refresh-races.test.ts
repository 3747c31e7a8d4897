import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

t.test('refresh races: logout ∥ refresh leaves nothing working; 20 parallel refreshes leave one live successor', async (t) => {
  const r = await runSmall(t, ['races'])
  const races = r.get('races')
  allPass(t, races)
  t.equal(figure(t, races, 'two live successors').value, 0)
  t.equal(figure(t, races, 'working after logout').value, 0)
  allPass(t, r.get('hygiene'))
})
