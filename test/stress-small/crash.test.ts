import t from 'tap'
import { allPass, figure, runSmall } from './run-small.js'

t.test('kill -9 under load, three times: no acknowledged write lost, no partial record, no logged-out token back', async (t) => {
  const r = await runSmall(t, ['crash'])
  const crash = r.get('crash')
  allPass(t, crash)
  t.equal(figure(t, crash, 'lost').value, 0)
  t.equal(figure(t, crash, 'revoked working').value, 0)
  allPass(t, r.get('hygiene'))

  // the audit log after each crash: every acknowledged change has its event, none without its change
  t.ok(Number(figure(t, crash, 'audit events').value) > 0, 'the load left audit events')
  t.equal(figure(t, crash, 'events missing').value, 0, 'every acknowledged register, login, wrong login and logout has its event')
  t.equal(figure(t, crash, 'events without change').value, 0, 'no event without its change')
  t.equal(figure(t, crash, 'seq gaps').value, 0, 'seq counts 1..N')
  t.equal(figure(t, crash, 'verify failures').value, 0, 'authctl audit verify exits 0 after each crash')
})
