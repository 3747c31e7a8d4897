import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

t.test('limiter fill at small scale: junk from more addresses than max_keys, and a new client is never refused', async (t) => {
  const r = await runSmall(t, ['limiter-fill'])
  const fill = r.get('limiter-fill')
  allPass(t, fill)
  t.equal(figure(t, fill, 'new clients refused').value, 0)
  t.equal(figure(t, fill, 'flood refused for room').value, 0)
  allPass(t, r.get('hygiene'))
})
