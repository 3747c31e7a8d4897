import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

t.test('long-email memory at small scale: logins with 16 KB U+FDFA emails are unknown emails and do not grow RSS', async (t) => {
  const r = await runSmall(t, ['long-email'])
  const long = r.get('long-email')
  allPass(t, long)
  t.ok(Number(figure(t, long, 'RSS growth').value) <= 20)
  allPass(t, r.get('hygiene'))
})
