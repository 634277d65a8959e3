// discovery.dynamo in the config file, and the serve flags that set it (--dynamo-etcd,
// --dynamo-nats, --dynamo-namespaces merge over the file's discovery.dynamo).
import { parseConfigText } from '../../src/config/load';

const file = (over: Record<string, unknown> = {}) => JSON.stringify({ dcId: 'dc', ...over });

test('discovery.dynamo: etcd members, NATS servers and namespaces', () => {
  const c = parseConfigText(file({ discovery: { dynamo: { etcd: { endpoints: ['etcd:2379'] }, nats: { servers: ['nats://nats:4222'] }, namespaces: ['a', 'b'] } } }), 'relay.json');
  expect(c.discovery?.dynamo).toEqual({ etcd: { endpoints: ['etcd:2379'] }, nats: { servers: ['nats://nats:4222'] }, namespaces: ['a', 'b'] });
});

test.each([
  [{ discovery: { dynamo: { etcd: { endpoints: [] } } } }, 'relay.json: discovery.dynamo.etcd.endpoints: must list at least one etcd member'],
  [{ discovery: { dynamo: { etcd: { endpoints: ['e:1'] }, nats: { servers: ['http://x'] } } } }, 'relay.json: discovery.dynamo.nats.servers.0: must be nats://host:port'],
  [{ discovery: { dynamo: { etcd: { endpoints: ['e:1'] }, namespaces: ['a', 'a'] } } }, 'relay.json: discovery.dynamo.namespaces: must not repeat a namespace'],
  [{ discovery: { dynamo: { etcd: { endpoints: ['e:1'] } }, etcd: { endpoints: ['e:1'], prefix: 'p' } } }, 'relay.json: discovery: must have exactly one of etcd and dynamo'],
  [{ discovery: { dynamo: { etcd: { endpoints: ['e:1'] } } }, endpoints: [{ namespace: 'a', component: 'b', endpoint: 'c', model: { name: 'm', kvBlockSize: 16 } }] }, 'relay.json: endpoints: the deployment comes from discovery.dynamo; remove endpoints or discovery'],
])('%j is rejected', (cfg, message) => {
  expect(() => parseConfigText(file(cfg), 'relay.json')).toThrow(message);
});

test('the serve flags set discovery.dynamo over the file', () => {
  const c = parseConfigText(file({ discovery: { dynamo: { etcd: { endpoints: ['old:1'], auth: { username: 'u', password: 'p' } } } } }), 'relay.json', {
    dynamo: { etcd: ['etcd-0:2379', 'etcd-1:2379'], nats: ['nats://n:4222'], namespaces: ['prod'] },
  });
  expect(c.discovery?.dynamo).toEqual({ etcd: { endpoints: ['etcd-0:2379', 'etcd-1:2379'], auth: { username: 'u', password: 'p' } }, nats: { servers: ['nats://n:4222'] }, namespaces: ['prod'] });
  // A file with no discovery at all: the flags alone make it a Dynamo relay.
  expect(parseConfigText(file(), 'relay.json', { dynamo: { etcd: ['e:1'] } }).discovery?.dynamo?.etcd.endpoints).toEqual(['e:1']);
});
