// The source a connection counts against: an IPv4 address (also when IPv4-mapped), an IPv6 /64.
import { peerGroup } from '../../src/transport/peer-group';

test.each([
  ['10.0.0.7', '10.0.0.7'],
  ['::ffff:10.0.0.7', '10.0.0.7'],
  ['::FFFF:127.0.0.2', '127.0.0.2'],
  ['::1', '0:0:0:0::/64'],
  ['2001:db8:1:2::5', '2001:db8:1:2::/64'],
  ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
  ['2001:0db8:0001:0002:0:0:0:1', '2001:db8:1:2::/64'],
  ['2001:db8::', '2001:db8:0:0::/64'],
  ['fe80::1:2:3:4', 'fe80:0:0:0::/64'],
  ['2001:db8:1::1.2.3.4', '2001:db8:1:0::/64'],
  ['::', '0:0:0:0::/64'],
])('%s counts as %s', (address, group) => {
  expect(peerGroup(address)).toBe(group);
});

test('two addresses of one /64 are one source; the next /64 is another', () => {
  expect(peerGroup('2001:db8:a:b::1')).toBe(peerGroup('2001:db8:a:b:dead:beef:0:2'));
  expect(peerGroup('2001:db8:a:c::1')).not.toBe(peerGroup('2001:db8:a:b::1'));
});
