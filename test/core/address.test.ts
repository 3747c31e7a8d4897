/**
 * Client addresses as authd counts and records them (src/core/address.ts): the strict parse, the
 * forms for logs and for the limiter, and addressKey, which authctl limits clear and the HTTP
 * layer share so that an admin's address names the key its requests are counted under.
 */
import t from 'tap'
import { addressKey, clientIpOf, parseAddress } from '../../src/core/address.js'
import { createClientIp } from '../../src/http/client-ip.js'

t.test('parseAddress: four-part IPv4 and RFC 4291 IPv6 only; IPv4-mapped IPv6 is IPv4', async (t) => {
  t.equal(parseAddress('203.0.113.7')?.toString(), '203.0.113.7')
  t.equal(parseAddress('::ffff:203.0.113.7')?.kind(), 'ipv4')
  t.equal(parseAddress('2001:DB8::1')?.toString(), '2001:db8::1')
  for (const text of ['', '127.1', '0x7f.0.0.1', '203.0.113.7:8080', '[2001:db8::1]', ' 203.0.113.7', '2001:db8::1/64', 'example.com']) t.equal(parseAddress(text), null, JSON.stringify(text))
})

t.test('clientIpOf: IPv4 as it is; IPv6 shown in RFC 5952 form and counted per /64', async (t) => {
  t.same(clientIpOf(parseAddress('203.0.113.7')!), { ip: '203.0.113.7', key: '203.0.113.7' })
  t.same(clientIpOf(parseAddress('2001:DB8:0:0:1::1')!), { ip: '2001:db8::1:0:0:1', key: '2001:db8::/64' })
  t.same(clientIpOf(parseAddress('2001:db8:1:2:3:4:5:6')!), { ip: '2001:db8:1:2:3:4:5:6', key: '2001:db8:1:2::/64' })
})

t.test('addressKey: the key an address typed by an admin is counted under, the one the HTTP layer gives its requests', async (t) => {
  const resolve = createClientIp([])
  for (const text of ['203.0.113.7', '::ffff:203.0.113.7', '2001:db8:1:2::abcd', '2001:DB8:1:2:ffff::1']) {
    t.equal(addressKey(text), resolve(text, undefined).key, text)
  }
  t.equal(addressKey('2001:db8:1:2::abcd'), '2001:db8:1:2::/64')
  t.equal(addressKey('not an address'), null)
})
