import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

t.test('the limiter at small scale: exactly the limit under 50-way concurrency, bounded per account and in keys, 429s refused, stuffing in metrics and logs', async (t) => {
  const r = await runSmall(t, ['limiter'])
  const limiter = r.get('limiter')
  allPass(t, limiter)
  t.equal(figure(t, limiter, '50-way: evaluated').value, 5)
  t.equal(figure(t, limiter, 'verifications/account/h').value, 20)
  t.ok(Number(figure(t, limiter, 'keys held').value) <= 1000)
  allPass(t, r.get('hygiene'))
})
