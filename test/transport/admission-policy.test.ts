// The admission policy's numbers: a source's default share of the slots, and the reserved share.
import { DEFAULT_LIMITS } from '../../src/config/defaults';
import { parseConfigText } from '../../src/config/load';
import { connectionsPerIp, reservedConnections } from '../../src/transport/admission';

test.each([
  [256, undefined, 32],
  [16, undefined, 2],
  [8, undefined, 1],
  [4, undefined, 1],
  [4, 4, 4],
  [256, 1, 1],
])('maxConnections %d, maxConnectionsPerIp %p: %d per source', (maxConnections, maxConnectionsPerIp, expected) => {
  expect(connectionsPerIp({ maxConnections, maxConnectionsPerIp })).toBe(expected);
});

test('a quarter of the slots is reserved for known sources (none of a single slot)', () => {
  expect(reservedConnections(DEFAULT_LIMITS.maxConnections)).toBe(64);
  expect(reservedConnections(16)).toBe(4);
  expect(reservedConnections(3)).toBe(0);
});

test('config: maxConnectionsPerIp at least 1, unset by default; connectionFirstCallMs 5 s by default', () => {
  const parse = (limits: Record<string, unknown>) => parseConfigText(JSON.stringify({ dcId: 'dc', limits }), 'relay.json');
  expect(parse({}).limits.maxConnectionsPerIp).toBeUndefined();
  expect(parse({}).timing.connectionFirstCallMs).toBe(5_000);
  expect(parse({ maxConnectionsPerIp: 1 }).limits.maxConnectionsPerIp).toBe(1);
  expect(() => parse({ maxConnectionsPerIp: 0 })).toThrow('relay.json: limits.maxConnectionsPerIp: Too small: expected number to be >=1');
});
