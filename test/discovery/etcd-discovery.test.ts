// The deployment from a real etcd: endpoint entries and workers registered under leases build the
// pools; an invalid value is rejected alone; a worker whose lease expires leaves (its blocks are
// removed, the pool's producer stays); etcd lost while running keeps the last deployment (stale
// metric) and a restart resyncs it as a diff; etcd unreachable at start is retried.
import * as fs from 'fs';
import { PassThrough } from 'stream';
import { Etcd3 } from 'etcd3';
import { startRelay } from '../../src/server';
import { endpointKey, workerKey } from '../../src/discovery/keys';
import { registerWorker, type WorkerRegistration } from '../../src/discovery/register';
import { createLogger } from '../../src/log';
import { producerKey } from '../../src/wire/producer-key';
import { describeWithEtcd, EtcdServer } from '../support/etcd';
import { waitFor, waitForValue } from '../support/waitFor';
import { BS, DEADLINE_MS, E2e, endpointConfig, expectedHashes, metricValue, relayConfig, tokenRange, workerConfig } from '../e2e/harness';

const PREFIX = 'kv-dc-relay/test/';
const TTL_S = 2;
const TRIPLE = { namespace: 'prod', component: 'backend', endpoint: 'generate' };

describeWithEtcd('deployment from etcd', () => {
  let etcd: EtcdServer;
  let kv: Etcd3;
  let run: E2e;
  const registrations: WorkerRegistration[] = [];

  beforeEach(async () => {
    etcd = await new EtcdServer().start();
    kv = new Etcd3({ hosts: etcd.endpoint });
    run = new E2e();
  });
  afterEach(async () => {
    await Promise.all(registrations.splice(0).map((r) => r.close()));
    await run.close();
    kv.close();
    await etcd.stop();
  });

  const discoveryConfig = (over: Record<string, unknown> = {}): Record<string, unknown> =>
    relayConfig([], { discovery: { etcd: { endpoints: [etcd.endpoint], prefix: PREFIX, leaseTtlSeconds: TTL_S, ...over } } });

  async function putEndpoint(component = 'backend'): Promise<void> {
    await kv.put(endpointKey(PREFIX, { ...TRIPLE, component })).value(JSON.stringify(endpointConfig([], { component })));
  }

  async function register(worker: Record<string, unknown>, ttlSeconds = TTL_S): Promise<WorkerRegistration> {
    const r = await registerWorker({ etcd: { endpoints: [etcd.endpoint] }, prefix: PREFIX, endpoint: TRIPLE, worker, ttlSeconds });
    registrations.push(r);
    return r;
  }

  test('leased workers build the pool, a bad value is rejected alone, an expired lease removes its worker', async () => {
    const [e1, e2] = [await run.engine(), await run.engine()];
    await putEndpoint();
    // An invalid endpoint value and an invalid worker value: each is rejected, nothing else is.
    await kv.put(endpointKey(PREFIX, { ...TRIPLE, component: 'broken' })).value('{"namespace":"prod","component":"broken","endpoint":"generate","model":{"name":"x","kvBlockSize":"four"}}');
    await kv.put(workerKey(PREFIX, TRIPLE, 9n)).value('{"id":9,"dpSize":0}');
    await run.start(discoveryConfig(), []);
    await register(workerConfig(7, e1));
    const crashed = await register(workerConfig(8, e2));
    await Promise.all([e1.waitForSubscribers(), e2.waitForSubscribers()]);

    const key = await run.poolKey();
    const producer = producerKey(run.client.catalog()!.pools[0].descriptor.producer!);
    const [p1, p2] = [tokenRange(100, 2 * BS), tokenRange(300, 2 * BS)];
    await e1.publish([{ type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: p1, blockSize: BS }]);
    await e2.publish([{ type: 'BlockStored', blockHashes: [3n, 4n], parentBlockHash: null, tokenIds: p2, blockSize: BS }]);
    await run.awaitHeld(key, [...expectedHashes(p1), ...expectedHashes(p2)], 'both workers’ blocks');
    expect(metricValue(await run.metricsText(), 'kv_dc_relay_discovery_rejected_entries', '')).toBe(2);
    expect(run.client.catalog()!.pools).toHaveLength(1);

    // Worker 8's process dies: its lease is no longer kept alive and expires.
    const diedAt = Date.now();
    await crashed.close({ revoke: false });
    await run.awaitGone(key, expectedHashes(p2), 'the expired worker’s blocks to be removed');
    expect(Date.now() - diedAt).toBeLessThan(TTL_S * 1000 + 3_000);
    expect(await kv.get(workerKey(PREFIX, TRIPLE, 8n)).string()).toBeNull();
    // Same pool generation; the surviving worker's blocks are kept.
    expect(producerKey(run.client.catalog()!.pools[0].descriptor.producer!)).toBe(producer);
    await run.awaitHeld(key, expectedHashes(p1), 'the live worker’s blocks');
  });

  test('etcd lost while running: the last deployment is served (stale); a restart resyncs it as a diff', async () => {
    const e1 = await run.engine();
    await putEndpoint();
    // A lone relay that opted to serve through an outage (by default a shard that cannot confirm its
    // lease stops serving: test/chaos/shard-fencing.test.ts).
    await run.start(discoveryConfig({ loneShardKeepsServing: true }), []);
    // A lease long enough to outlive the outage (etcd restores leases with their full TTL).
    await register(workerConfig(7, e1), 30);
    await e1.waitForSubscribers();
    const key = await run.poolKey();
    const producer = producerKey(run.client.catalog()!.pools[0].descriptor.producer!);
    const prompt = tokenRange(100, 2 * BS);
    await e1.publish([{ type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: prompt, blockSize: BS }]);
    await run.awaitHeld(key, expectedHashes(prompt), 'the blocks');
    expect(metricValue(await run.metricsText(), 'kv_dc_relay_discovery_stale', '')).toBe(0);

    await etcd.kill();
    await waitFor(async () => metricValue(await run.metricsText(), 'kv_dc_relay_discovery_stale', '') === 1, 'the stale mark', DEADLINE_MS, 50);
    // Still served, and still live: new events reach the replica.
    const more = tokenRange(500, BS);
    await e1.publish([{ type: 'BlockStored', blockHashes: [5n], parentBlockHash: null, tokenIds: more, blockSize: BS }]);
    await run.awaitHeld(key, expectedHashes(more), 'a block published during the outage');

    await etcd.start();
    await waitFor(async () => metricValue(await run.metricsText(), 'kv_dc_relay_discovery_stale', '') === 0, 'the resync', 20_000, 50);
    // The resync changed nothing: same producer generation, blocks kept; later changes apply again.
    expect(producerKey(run.client.catalog()!.pools[0].descriptor.producer!)).toBe(producer);
    await putEndpoint('second');
    const e2 = await run.engine();
    await registerWorker({ etcd: { endpoints: [etcd.endpoint] }, prefix: PREFIX, endpoint: { ...TRIPLE, component: 'second' }, worker: workerConfig(8, e2), ttlSeconds: 30 }).then((r) => registrations.push(r));
    await waitFor(() => run.client.catalog()?.pools.length === 2, 'the pool registered after the restart', 20_000);
    expect(run.client.catalog()!.pools.some((p) => producerKey(p.descriptor.producer!) === producer)).toBe(true);
    await run.awaitHeld(key, [...expectedHashes(prompt), ...expectedHashes(more)], 'the blocks after the resync');
  });

  test('etcd unreachable at start: a clear error, retried with backoff until it answers', async () => {
    await etcd.kill();
    const logs = new PassThrough();
    let text = '';
    logs.on('data', (b: Buffer) => (text += b.toString()));
    fs.writeFileSync(run.file, JSON.stringify(discoveryConfig()));
    const relay = await startRelay({ configFile: run.file, logger: createLogger({ destination: logs }) });
    try {
      await waitFor(() => text.includes('etcd is unreachable; retrying'), 'the unreachable error', DEADLINE_MS, 20);
      expect(relay.producer.catalog().snapshot.pools).toHaveLength(0);
      await etcd.start();
      const e1 = await run.engine();
      await putEndpoint();
      await register(workerConfig(7, e1));
      await waitForValue(() => relay.producer.catalog().snapshot.pools.length === 1, 'the pool once etcd answers', 20_000);
    } finally {
      await relay.shutdown();
    }
  });
});

