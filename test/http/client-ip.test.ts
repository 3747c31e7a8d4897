import t from 'tap'
import type { IncomingMessage } from 'node:http'
import { createClientIp, createRequestClientIp, UNKNOWN_CLIENT } from '../../src/http/client-ip.js'

t.test('without trusted proxies the socket address is the client, whatever X-Forwarded-For says', async (t) => {
  const clientIp = createClientIp([])
  t.same(clientIp('203.0.113.7', '1.1.1.1'), { ip: '203.0.113.7', key: '203.0.113.7' })
  t.same(clientIp('::ffff:203.0.113.7', ['1.1.1.1', '2.2.2.2']), { ip: '203.0.113.7', key: '203.0.113.7' })
  t.same(clientIp('2001:db8::1', '1.1.1.1').ip, '2001:db8::1')
})

t.test('a peer outside trust_proxy is the client even when some proxies are trusted', async (t) => {
  const clientIp = createClientIp(['10.0.0.0/8'])
  t.same(clientIp('203.0.113.7', '1.1.1.1').ip, '203.0.113.7', 'a spoofed header from an untrusted peer is ignored')
})

t.test('behind a trusted proxy: the right-most X-Forwarded-For entry', async (t) => {
  const clientIp = createClientIp(['10.0.0.0/8'])
  t.same(clientIp('10.0.0.2', '198.51.100.9'), { ip: '198.51.100.9', key: '198.51.100.9' })
  t.equal(clientIp('10.0.0.2', '6.6.6.6, 198.51.100.9').ip, '198.51.100.9', 'entries the client sent (left) are not believed')
  t.equal(clientIp('10.0.0.2', undefined).ip, '10.0.0.2', 'no header: the proxy itself')
  t.equal(clientIp('10.0.0.2', '').ip, '10.0.0.2', 'empty header: the proxy itself')
})

t.test('a chain of several trusted proxies is walked past', async (t) => {
  const clientIp = createClientIp(['10.0.0.0/8', '192.0.2.1', '2001:db8:ffff::/48'])
  t.equal(clientIp('10.0.0.2', '6.6.6.6, 198.51.100.9, 192.0.2.1, 10.1.1.1').ip, '198.51.100.9')
  t.equal(clientIp('2001:db8:ffff::5', '198.51.100.9, 10.9.9.9').ip, '198.51.100.9', 'IPv6 proxy in front')
  t.equal(clientIp('192.0.2.1', '2001:db8:1::1, 10.0.0.3').ip, '2001:db8:1::1')
  t.equal(clientIp('10.0.0.2', '10.0.0.9, 192.0.2.1, 10.0.0.3').ip, '10.0.0.9', 'all trusted: the left-most')
  t.equal(clientIp('192.0.2.2', '198.51.100.9').ip, '192.0.2.2', 'a bare address trusts only that host')
})

t.test('several X-Forwarded-For headers are read as one list, in order', async (t) => {
  const clientIp = createClientIp(['10.0.0.0/8'])
  t.equal(clientIp('10.0.0.2', ['6.6.6.6', '198.51.100.9, 10.0.0.5']).ip, '198.51.100.9')
  t.equal(clientIp('10.0.0.2', ['6.6.6.6, 198.51.100.9', '10.0.0.5']).ip, '198.51.100.9')
  t.equal(clientIp('10.0.0.2', ['198.51.100.9', '']).ip, '198.51.100.9', 'empty values are skipped')
  t.equal(clientIp('10.0.0.2', ' 198.51.100.9 ,, 10.0.0.5 ,').ip, '198.51.100.9', 'spaces and empty entries')
})

t.test('IPv4-mapped IPv6 is normalised, for the socket and for entries and trust ranges', async (t) => {
  const clientIp = createClientIp(['10.0.0.0/8'])
  t.same(clientIp('::ffff:10.0.0.2', '::ffff:198.51.100.9'), { ip: '198.51.100.9', key: '198.51.100.9' })
  t.equal(clientIp('10.0.0.2', '::FFFF:c633:6409').ip, '198.51.100.9', 'hex form too')
  t.equal(clientIp('10.0.0.2', '6.6.6.6, ::ffff:10.0.0.7').ip, '6.6.6.6', 'a mapped proxy address is trusted')
  const mapped = createClientIp(['::ffff:10.0.0.0/104'])
  t.equal(mapped('10.0.0.2', '198.51.100.9').ip, '198.51.100.9', 'a mapped trust range covers the IPv4 addresses')
  t.equal(mapped('11.0.0.2', '198.51.100.9').ip, '11.0.0.2')
})

t.test('IPv6 clients are keyed per /64', async (t) => {
  const clientIp = createClientIp([])
  const a = clientIp('2001:db8:1:2::1', undefined)
  const b = clientIp('2001:0DB8:0001:0002:ffff:1:2:3', undefined)
  const c = clientIp('2001:db8:1:3::1', undefined)
  t.same(a, { ip: '2001:db8:1:2::1', key: '2001:db8:1:2::/64' })
  t.equal(b.ip, '2001:db8:1:2:ffff:1:2:3', 'display form is RFC 5952')
  t.equal(a.key, b.key, 'same /64, same key')
  t.not(a.key, c.key, 'different /64, different key')
  t.equal(clientIp('::1', undefined).key, '::/64')
  t.equal(clientIp('fe80::1%eth0', undefined).key, 'fe80::/64', 'a zone id is not part of the key')
  const proxied = createClientIp(['10.0.0.0/8'])
  t.same(proxied('10.0.0.2', '2001:db8:1:2:aaaa::9'), { ip: '2001:db8:1:2:aaaa::9', key: '2001:db8:1:2::/64' })
})

t.test('garbage in X-Forwarded-For: the socket address is used', async (t) => {
  const clientIp = createClientIp(['10.0.0.0/8'])
  for (const bad of ['garbage', 'unknown', '1.2.3.4:', '1.2.3.4:123456', '[2001:db8::1', '[garbage]:80', '[1.2.3.4.5]', '127.1:80', '127.1', '0x7f.0.0.1', '01.2.3.4', '1.2.3.4.5', '<script>']) {
    t.equal(clientIp('10.0.0.2', bad).ip, '10.0.0.2', `'${bad}' as the right-most entry`)
  }
  t.equal(clientIp('10.0.0.2', '198.51.100.9, garbage').ip, '10.0.0.2', 'garbage stops the walk: nothing left of it is believed')
  t.equal(clientIp('10.0.0.2', 'garbage, 10.0.0.3').ip, '10.0.0.2', 'also behind trusted hops')
  t.equal(clientIp('10.0.0.2', 'garbage, 198.51.100.9').ip, '198.51.100.9', 'garbage left of the client is never reached')
})

t.test('an entry with a port, or an IPv6 address in brackets, names that address (as some proxies write it)', async (t) => {
  const clientIp = createClientIp(['10.0.0.0/8'])
  t.equal(clientIp('10.0.0.2', '192.0.2.7:1234').ip, '192.0.2.7')
  t.equal(clientIp('10.0.0.2', '[2001:db8::5]:443').key, clientIp('10.0.0.2', '2001:db8::5').key)
  t.equal(clientIp('10.0.0.2', '[2001:db8::5]').ip, clientIp('10.0.0.2', '2001:db8::5').ip)
  t.equal(clientIp('10.0.0.2', '[::ffff:192.0.2.8]:80').ip, '192.0.2.8', 'mapped: IPv4')
  t.equal(clientIp('10.0.0.2', '198.51.100.9:5555, 10.0.0.3:80').ip, '198.51.100.9', 'a trusted hop with a port is walked past')
  t.not(clientIp('10.0.0.2', '192.0.2.7:1234').key, clientIp('10.0.0.2', '198.51.100.9:5555').key, 'two clients, two keys (not the proxy\'s one)')
})

t.test('a missing or unreadable socket address is one shared "unknown" client', async (t) => {
  const clientIp = createClientIp(['10.0.0.0/8'])
  t.same(clientIp(undefined, '198.51.100.9'), UNKNOWN_CLIENT)
  t.same(clientIp('nonsense', '198.51.100.9'), UNKNOWN_CLIENT)
  t.same(createClientIp([])(undefined, undefined), UNKNOWN_CLIENT)
})

t.test('invalid trust_proxy entries throw when the resolver is built', async (t) => {
  for (const bad of ['10.0.0.0/33', 'nonsense', '10.0.0.0/', '10.0.0.0/x', '::/129', '::ffff:10.0.0.0/64']) {
    t.throws(() => createClientIp([bad]), { message: `invalid trust_proxy entry: ${bad}` }, bad)
  }
  t.doesNotThrow(() => createClientIp(['0.0.0.0/0', '::/0', '2001:db8::/32', '127.0.0.1']))
})

t.test('a long spoofed chain behind a trusted proxy costs one entry', async (t) => {
  const clientIp = createClientIp(['10.0.0.0/8'])
  const chain = Array.from({ length: 2000 }, (_, i) => `6.6.${i >> 8}.${i & 255}`).join(', ') + ', 198.51.100.9'
  t.equal(clientIp('10.0.0.2', chain).ip, '198.51.100.9')
})

t.test("a request's client: the socket address's parse remembered, X-Forwarded-For worked out every time", async (t) => {
  const request = (address: string | undefined, forwarded?: string): IncomingMessage =>
    ({ socket: { remoteAddress: address }, rawHeaders: forwarded === undefined ? [] : ['X-Forwarded-For', forwarded] }) as unknown as IncomingMessage
  const clientOf = createRequestClientIp(['10.0.0.0/8'])
  const first = clientOf(request('2001:db8:1:2::7'))
  t.same(first, { ip: '2001:db8:1:2::7', key: '2001:db8:1:2::/64' })
  t.equal(clientOf(request('2001:db8:1:2::7')), first, 'the same address: the remembered parse')
  t.same(clientOf(request('10.0.0.2', '198.51.100.9')), { ip: '198.51.100.9', key: '198.51.100.9' }, 'a trusted proxy: the header names the client')
  t.same(clientOf(request('10.0.0.2', '198.51.100.10')), { ip: '198.51.100.10', key: '198.51.100.10' }, 'another header from the same proxy: another client')
  t.same(clientOf(request('10.0.0.2')), { ip: '10.0.0.2', key: '10.0.0.2' }, 'the proxy without the header: itself')
  t.same(clientOf(request(undefined)), UNKNOWN_CLIENT, 'a socket already gone')
  for (let i = 0; i < 5000; i++) clientOf(request(`192.0.${i >> 8}.${i & 255}`))
  t.same(clientOf(request('2001:db8:1:2::7')), first, 'past the memo size: still right')
})
