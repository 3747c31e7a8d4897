import t from 'tap'
import { allPass, figure, runSmall, withPostgres } from './run-small.js'

t.test('the limiter on PostgreSQL at small scale: exactly the limit under 50-way concurrency over two daemons, bounded per account across both, 429s refused, no key refused for room', async (t) => {
  if (!withPostgres(t)) return
  const r = await runSmall(t, ['limiter-pg'])
  const limiter = r.get('limiter-pg')
  allPass(t, limiter)
  t.equal(figure(t, limiter, '50-way: evaluated').value, 5)
  t.equal(figure(t, limiter, 'verifications/account/h').value, 20)
  t.equal(figure(t, limiter, 'refused for room').value, 0)
  allPass(t, r.get('hygiene'))
})
