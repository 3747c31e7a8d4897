import t from 'tap'
import { createDeviceCookies, newDeviceKey } from '../../src/core/device-cookies.js'

t.test('a device cookie verifies to its device and user, and nothing else does', async (t) => {
  const devices = createDeviceCookies(newDeviceKey())
  const value = devices.issue('user-1')
  const d = devices.verify(value)
  t.match(d, { userId: 'user-1', deviceId: /^[A-Za-z0-9_-]{22}$/ })
  t.same(devices.verify(devices.issue('user-2', d!.deviceId)), { userId: 'user-2', deviceId: d!.deviceId }, 'the same device, another user')
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
