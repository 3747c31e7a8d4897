import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

// regression: a trickled body was closed only after 15–16 s (request timeout 15 s, checked every second)
t.test('slow clients: every slowloris, slow-body and silent socket is closed within 15 s, and others are served meanwhile', async (t) => {
  const r = await runSmall(t, ['slow'])
  const slow = r.get('slow')
  allPass(t, slow)
  t.ok(Number(figure(t, slow, 'slowest close').value) <= 15, 'closed within 15 s of opening')
  t.equal(figure(t, slow, 'left open').value, 0)
  allPass(t, r.get('hygiene'))
})
