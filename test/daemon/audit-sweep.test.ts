/**
 * The daemon's audit retention (README, "Audit log"): events older than audit.retention are
 * removed by the periodic sweep, the last removed one's hash becomes the anchor, and what remains
 * still verifies.
 */
import t from 'tap'
import { verifyChain } from '../../src/core/audit.js'
import { addUser, buildApp, call, startServer } from '../helpers/app.js'

const PASSWORD = 'correct horse battery'

t.test('events past audit.retention go at the next sweep; the rest verifies from the anchor', async (t) => {
  const clock = { at: Date.UTC(2026, 0, 1) }
  const app = await startServer(t, { now: () => clock.at, env: { AUTHD_AUDIT_RETENTION: '1h' }, auditSweepMs: 20 })
  await addUser(app, 'ann@example.com', PASSWORD)
  for (let i = 0; i < 3; i++) await call(app.url, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: `wrong ${i}` } })
  clock.at += 2 * 3600_000
  t.equal((await call(app.url, 'POST', '/api/auth/login', { json: { email: 'ann@example.com', password: PASSWORD } })).status, 200)
  const seqs = async (): Promise<number[]> => (await app.store.auditEvents({ limit: 100 })).map((e) => e.seq)
  for (let i = 0; i < 200 && (await seqs()).length > 1; i++) await new Promise((r) => setTimeout(r, 20))
  t.same(await seqs(), [4], 'the three failures of two hours ago are gone, the login of now stays')
  await app.store.auditChain(async (anchor, events) => {
    t.equal(anchor.seq, 3)
    t.same(await verifyChain(anchor, events), { ok: true, events: 1 })
  })
})

t.test('without anything old enough, the sweep removes nothing', async (t) => {
  const app = await buildApp(t, { auditSweepMs: 20 })
  await addUser(app, 'ann@example.com', PASSWORD)
  await app.auth.login({ email: 'ann@example.com', password: 'wrong one' }, { ip: '203.0.113.1', ipKey: '203.0.113.1', userAgent: '' }).catch(() => {})
  await new Promise((r) => setTimeout(r, 100))
  t.equal((await app.store.auditEvents({ limit: 10 })).length, 1)
})
