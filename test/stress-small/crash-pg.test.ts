import t from 'tap'
import { allPass, figure, runSmall, withPostgres } from './run-small.js'

t.test('on PostgreSQL, kill -9 of authd under load, three times: no acknowledged write lost, no partial record, no logged-out token back', async (t) => {
  if (!withPostgres(t)) return
  const r = await runSmall(t, ['crash-pg'])
  const crash = r.get('crash-pg')
  allPass(t, crash)
  t.equal(figure(t, crash, 'lost').value, 0)
  t.equal(figure(t, crash, 'partial records').value, 0)
  t.equal(figure(t, crash, 'revoked working').value, 0)
  allPass(t, r.get('hygiene'))
})
