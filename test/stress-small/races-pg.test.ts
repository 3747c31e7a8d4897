import t from 'tap'
import { allPass, figure, runSmall, withPostgres } from './run-small.js'

t.test('on PostgreSQL over two daemons: logout on one ∥ refresh on the other leaves nothing working; 20 parallel refreshes over both leave one live successor', async (t) => {
  if (!withPostgres(t)) return
  const r = await runSmall(t, ['races-pg'])
  const races = r.get('races-pg')
  allPass(t, races)
  t.equal(figure(t, races, 'two live successors').value, 0)
  t.equal(figure(t, races, 'working after logout').value, 0)
  allPass(t, r.get('hygiene'))
})
