import t from 'tap'
import { addUser, call, startServer } from '../helpers/app.js'

t.test('logs in and reads /me over a real socket', async (t) => {
  const app = await startServer(t)
  await addUser(app, 'ann@example.com', 'correct horse battery')
  const login = await call(app.url, 'POST', '/api/auth/login', { json: { email: ' Ann@Example.com ', password: 'correct horse battery' } })
  t.equal(login.status, 200)
  const me = await call(app.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${login.body.data.accessToken}` } })
  t.same(me.body, { success: true, data: { id: login.body.data.user.id, email: 'ann@example.com' } })
})
