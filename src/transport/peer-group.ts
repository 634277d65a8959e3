// The source a connection counts against for per-source limits. Pure.
//
// An IPv4 peer is its address (an IPv4-mapped IPv6 address, as a dual-stack listener reports IPv4
// peers, is the same IPv4 address). An IPv6 peer is its /64: a host is routinely given a whole /64
// and can pick any address in it, so counting single IPv6 addresses would not limit anyone.
import * as net from 'net';

const MAPPED_IPV4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

export function peerGroup(address: string): string {
  const mapped = MAPPED_IPV4.exec(address);
  if (mapped) return mapped[1];
  if (net.isIPv6(address)) return `${ipv6Groups(address).slice(0, 4).join(':')}::/64`;
  return address;
}

/** The eight 16-bit groups of an IPv6 address, as lowercase hex without leading zeros. */
function ipv6Groups(address: string): string[] {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  // An embedded IPv4 tail (a.b.c.d) is the last two groups.
  const last = right.length > 0 ? right : left;
  if (last.length > 0 && last[last.length - 1].includes('.')) {
    const [a, b, c, d] = last.pop()!.split('.').map(Number);
    last.push(((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
  }
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => parseInt(g, 16).toString(16));
}
