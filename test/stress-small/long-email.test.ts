import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

t.test('long-email memory at small scale: logins with 16 KB U+FDFA emails are unknown emails and leave nothing in the live heap', async (t) => {
  const r = await runSmall(t, ['long-email'])
  const long = r.get('long-email')
  allPass(t, long)
  t.ok(Number(figure(t, long, 'live heap growth').value) <= 5)
  allPass(t, r.get('hygiene'))
})
