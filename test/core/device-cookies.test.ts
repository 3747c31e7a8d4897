import t from 'tap'
import { createHmac } from 'node:crypto'
import { createDeviceCookies, MAX_USERS, newDeviceKey } from '../../src/core/device-cookies.js'

t.test('a device cookie verifies to its device and user, and nothing else does', async (t) => {
  const devices = createDeviceCookies(newDeviceKey())
  const value = devices.issue('user-1')
  const d = devices.verify(value)
  t.match(d, { userIds: ['user-1'], deviceId: /^[A-Za-z0-9_-]{22}$/ })
  t.same(devices.verify(devices.issue('user-2', d)), { userIds: ['user-2', 'user-1'], deviceId: d!.deviceId }, 'the same device, another user first, the first kept')
  t.not(devices.verify(devices.issue('user-1'))!.deviceId, d!.deviceId, 'a new device each time unless given')

  const [payload, mac] = value.split('.') as [string, string]
  const other = Buffer.from(payload, 'base64url')
  other[other.length - 1] ^= 1
  t.equal(devices.verify(`${other.toString('base64url')}.${mac}`), null, 'another user id under the same MAC')
  t.equal(createDeviceCookies(newDeviceKey()).verify(value), null, 'another key')
  for (const junk of [undefined, '', '.', 'abc', `${payload}.`, `.${mac}`, `${payload}.${mac}x`, `${payload}.${mac}`.repeat(20)]) {
    t.equal(devices.verify(junk), null, `junk ${JSON.stringify(junk?.slice(0, 20))}`)
  }
})

t.test('one text per cookie: copies that decode the same (a `=`, a second dot) verify to null', async (t) => {
  const cookies = createDeviceCookies(newDeviceKey())
  const value = cookies.issue('user-1')
  t.ok(cookies.verify(value), 'the cookie as issued')
  for (const altered of [`${value}=`, value.replace('.', '..'), `${value.slice(0, 10)}=${value.slice(10)}`, `${value}!`]) {
    t.equal(cookies.verify(altered), null, JSON.stringify(altered.slice(0, 12)))
  }
})

t.test('one browser, several users: each sign-in names its user first, at most eight, the oldest left out', async (t) => {
  const devices = createDeviceCookies(newDeviceKey())
  let d = devices.verify(devices.issue('ann'))!
  d = devices.verify(devices.issue('bob', d))!
  t.same(d.userIds, ['bob', 'ann'])
  d = devices.verify(devices.issue('ann', d))!
  t.same(d.userIds, ['ann', 'bob'], 'signing in again moves the user first, once')
  for (let i = 0; i < 10; i++) d = devices.verify(devices.issue(`u${i}`, d))!
  t.equal(MAX_USERS, 8)
  t.same(d.userIds, ['u9', 'u8', 'u7', 'u6', 'u5', 'u4', 'u3', 'u2'])
  // ids far longer than ours (imported): the oldest are left out until the value is readable
  let long = devices.verify(devices.issue('x'.repeat(150)))!
  long = devices.verify(devices.issue('y'.repeat(150), long))!
  t.same(long.userIds.map((u) => u[0]), ['y', 'x'])
  const three = devices.verify(devices.issue('z'.repeat(150), long))
  t.same(three?.userIds.map((u) => u[0]), ['z', 'y'], 'three do not fit: the oldest left out, the value still verifies')
})

t.test('a value of the earlier form (device id and one user id) verifies to that user; a signed list of nothing does not', async (t) => {
  const key = newDeviceKey()
  const devices = createDeviceCookies(key)
  const sign = (payload: Buffer): string => `${payload.toString('base64url')}.${createHmac('sha256', Buffer.from(key, 'base64url')).update(payload).digest('base64url')}`
  const id = Buffer.alloc(16, 7)
  t.same(devices.verify(sign(Buffer.concat([id, Buffer.from('user-1')]))), { deviceId: id.toString('base64url'), userIds: ['user-1'] })
  for (const list of ['[]', '{}', '[1]', '[""]', 'not json']) {
    t.equal(devices.verify(sign(Buffer.concat([id, Buffer.from([0]), Buffer.from(list)]))), null, list)
  }
})
