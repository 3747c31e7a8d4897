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

  // the audit log after each crash, read from the database with authctl
  t.ok(Number(figure(t, crash, 'audit events').value) > 0, 'the load left audit events')
  t.equal(figure(t, crash, 'events missing').value, 0, 'every acknowledged register, login, wrong login and logout has its event')
  t.equal(figure(t, crash, 'events without change').value, 0, 'no event without its change')
  t.equal(figure(t, crash, 'seq gaps').value, 0, 'seq counts 1..N')
  t.equal(figure(t, crash, 'verify failures').value, 0, 'authctl audit verify exits 0 after each crash')
})
