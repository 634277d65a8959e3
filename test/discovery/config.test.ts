// The `discovery.etcd` config block: an alternative to `endpoints`, validated like the rest.
import { parseConfigText } from '../../src/config/load';

const parse = (cfg: Record<string, unknown>) => parseConfigText(JSON.stringify({ dcId: 'dc-a', ...cfg }), 'relay.json');
const etcd = (over: Record<string, unknown> = {}) => ({ discovery: { etcd: { endpoints: ['127.0.0.1:2379'], prefix: 'kv-dc-relay/dc-a', ...over } } });

test('defaults: lease TTL 10 s, a lone shard fences like any other, no TLS or auth', () => {
  expect(parse(etcd()).discovery?.etcd).toEqual({ endpoints: ['127.0.0.1:2379'], prefix: 'kv-dc-relay/dc-a', leaseTtlSeconds: 10, loneShardKeepsServing: false });
});

test.each([
  [{ ...etcd(), endpoints: [{ namespace: 'a', component: 'b', endpoint: 'c', model: { name: 'm', kvBlockSize: 16 } }] }, 'relay.json: endpoints: the deployment comes from discovery.etcd; remove endpoints or discovery'],
  [etcd({ endpoints: [] }), 'relay.json: discovery.etcd.endpoints: must list at least one etcd member'],
  [etcd({ endpoints: ['not a host'] }), 'relay.json: discovery.etcd.endpoints.0: must be host:port or http(s)://host:port'],
  [etcd({ leaseTtlSeconds: 1 }), 'relay.json: discovery.etcd.leaseTtlSeconds: Too small: expected number to be >=2'],
  [etcd({ tls: { caFile: 'ca.pem', certFile: 'c.pem' } }), 'relay.json: discovery.etcd.tls: certFile and keyFile go together'],
  [etcd({ advertise: 'relay:5561' }), 'relay.json: discovery.etcd.advertise: must be a numeric IP:port'],
  [etcd({ extra: 1 }), 'relay.json: discovery.etcd.extra: unknown field'],
  [etcd({ loneShardKeepsServing: 'yes' }), 'relay.json: discovery.etcd.loneShardKeepsServing: Invalid input: expected boolean, received string'],
])('%j is rejected', (cfg, message) => {
  expect(() => parse(cfg)).toThrow(message);
});

test('members may be DNS names with a scheme', () => {
  expect(parse(etcd({ endpoints: ['https://etcd-0.etcd:2379', 'etcd-1:2379'] })).discovery?.etcd?.endpoints).toHaveLength(2);
});
