import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

t.test('sessions on a seeded store at small scale: the list is whole, the sweep takes every expired one in chunks, logins keep a user at max_per_user', async (t) => {
  const r = await runSmall(t, ['sessions'])
  const sessions = r.get('sessions')
  allPass(t, sessions)
  t.equal(figure(t, sessions, 'listed').value, 200)
  t.equal(figure(t, sessions, 'swept').value, 2000)
  t.equal(figure(t, sessions, 'sessions after logins').value, 5)
  t.equal(figure(t, sessions, 'after concurrent logins').value, 5)
  t.equal(figure(t, sessions, 'evicted refresh').value, 401)
  allPass(t, r.get('hygiene'))
})
