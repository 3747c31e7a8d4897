import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

// the latency thresholds are judged by npm run stress (60 s, 32 clients); here the flood is short
t.test('a short login flood: every probe (me, refresh, register) succeeds, no 5xx, the daemon stays up', async (t) => {
  const r = await runSmall(t, ['flood'])
  const flood = r.get('flood')
  allPass(t, flood)
  t.equal(figure(t, flood, 'probe failures').value, 0)
  allPass(t, r.get('hygiene'))
})
