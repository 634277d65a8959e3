// The one spelling of a peer IP address that the bind-mode allow-list compares: libzmq reports a
// peer as inet_ntop writes it (RFC 5952: lowercase, the longest run of zero groups compressed) and
// an IPv4 peer of a dual-stack socket as ::ffff:a.b.c.d, which the native side compares as
// a.b.c.d. An entry written otherwise ('0:0:0:0:0:0:0:1', 'FE80::0001', '::ffff:7f00:1') would
// never match (issue 26 item 11), so entries are brought to that form when the config is loaded.
import { isIP } from 'net';

/** `address` (an IP address) in the form libzmq reports peers in; anything else unchanged. */
export function canonicalPeerAddress(address: string): string {
  if (isIP(address) !== 6) return address;
  let host: string;
  try {
    // The WHATWG URL serializer writes IPv6 hosts in RFC 5952 form.
    host = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address.toLowerCase(); // e.g. a zone index, which URLs do not take
  }
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (!mapped) return host;
  const hi = parseInt(mapped[1], 16);
  const lo = parseInt(mapped[2], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}
