// Failure behaviour of a relay on a Dynamo deployment (docs/incoming/dynamo-plane.md, failure rows),
// with a real etcd and nats-server: NATS lost and back, etcd lost and back, the JetStream consumer
// deleted, a worker's lease expiring, duplicate and reordered envelopes. Each ends with the pool
// holding exactly what the spec says it holds.
import { Etcd3 } from 'etcd3';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstreamManager } from '@nats-io/jetstream';
import { kvStreamName } from '../../src/dynamo/discovery/project';
import { ServingReadinessState } from '../../src/wire/enums';
import { E2e, expectedHashes, metricValue, relayConfig, tokenRange } from '../e2e/harness';
import { DynamoWorker } from '../support/dynamo-worker';
import { EtcdServer } from '../support/etcd';
import { runAlone } from '../support/exclusive';
import { describeWithNatsAndEtcd, NatsServer } from '../support/nats';
import { waitFor } from '../support/waitFor';

const BS = 4;
const TTL_S = 2;
runAlone();

describeWithNatsAndEtcd('Dynamo event plane and discovery faults', () => {
  let etcd: EtcdServer;
  let nats: NatsServer;
  let kv: Etcd3;
  let nc: NatsConnection;
  let run: E2e;
  let natsWorker: DynamoWorker;
  let second: DynamoWorker;
  let jsWorker: DynamoWorker;
  let aggKey: string;
  let jsKey: string;

  const card = { display_name: 'llama', kv_cache_block_size: BS, worker_type: 'aggregated', needs: [], runtime_config: { total_kv_blocks: 10 } };
  const metric = async (name: string): Promise<number> => metricValue(await run.metricsText(), name, '');

  beforeAll(async () => {
    [etcd, nats] = await Promise.all([new EtcdServer().start(), new NatsServer().start()]);
    kv = new Etcd3({ hosts: etcd.endpoint });
    nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    natsWorker = await new DynamoWorker(kv, { namespace: 'ns', component: 'backend', card, transport: 'nats', nats: nc, ttlSeconds: TTL_S }).register();
    second = await new DynamoWorker(kv, { namespace: 'ns', component: 'backend', card, transport: 'nats', nats: nc, ttlSeconds: TTL_S }).register();
    jsWorker = await new DynamoWorker(kv, { namespace: 'ns', component: 'prefill', card: { ...card, worker_type: 'prefill', needs: [['decode']] }, transport: 'jetstream', nats: nc, ttlSeconds: TTL_S }).register();
    run = new E2e();
    await run.start(relayConfig([], { discovery: { dynamo: { etcd: { endpoints: [etcd.endpoint] }, nats: { servers: [nats.url] } } } }), []);
    await waitFor(() => run.client.catalog()?.pools.length === 2, 'two pools', 15_000);
    aggKey = await run.poolKey('backend');
    jsKey = await run.poolKey('prefill');
  }, 60_000);
  afterAll(async () => {
    await run.close();
    await Promise.all([natsWorker, second, jsWorker].map((w) => w.close()));
    await nc.close();
    kv.close();
    await Promise.all([etcd.stop(), nats.stop()]);
  });

  test('duplicate envelopes are dropped; a reordered one resets its source (gap) and is dropped', async () => {
    const t = tokenRange(1000, 2 * BS);
    await natsWorker.store([1n, 2n], t, BS);
    await run.awaitHeld(aggKey, expectedHashes(t, null, BS), 'the first blocks');
    const duplicates = await metric('kv_dc_relay_dynamo_duplicates_total');
    // The same sequence again (a redelivered envelope) carrying a removal: dropped, the blocks stay.
    await natsWorker.republish({ removed: { blockHashes: [2n] } }, 0, 0n);
    await waitFor(async () => (await metric('kv_dc_relay_dynamo_duplicates_total')) === duplicates + 1, 'the duplicate to be counted');
    expect(expectedHashes(t, null, BS).every((h) => run.holds(aggKey, h))).toBe(true);

    // Sequence n+2 arrives before n+1: a gap (its source is reset), then n+1 is late and dropped.
    const gaps = await metric('kv_dc_relay_dynamo_gaps_total');
    const u = tokenRange(1100, BS);
    await natsWorker.publish({ stored: { parentHash: null, blocks: [{ blockHash: 3n, tokensHash: DynamoWorker.tokensHashes(u, BS)[0] }] } }, 0, { skip: 1 });
    await run.awaitGone(aggKey, expectedHashes(t, null, BS), 'the reset source’s blocks');
    await run.awaitHeld(aggKey, expectedHashes(u, null, BS), 'the block after the gap');
    // The plane's counters reach /metrics with its next stats report.
    await waitFor(async () => (await metric('kv_dc_relay_dynamo_gaps_total')) === gaps + 1, 'the gap to be counted');
    await natsWorker.republish({ removed: { blockHashes: [3n] } }, 0, 1n);
    await waitFor(async () => (await metric('kv_dc_relay_dynamo_duplicates_total')) === duplicates + 2, 'the late envelope to be dropped');
    expect(run.holds(aggKey, expectedHashes(u, null, BS)[0])).toBe(true);
  }, 30_000);

  test('NATS lost and back: the relay reconnects and resubscribes; a publisher that lost messages meanwhile is reset', async () => {
    const before = tokenRange(2000, BS);
    await second.store([10n], before, BS);
    await run.awaitHeld(aggKey, expectedHashes(before, null, BS), 'blocks before the loss');
    const reconnects = await metric('kv_dc_relay_dynamo_nats_reconnects_total');
    await nats.kill();
    await waitFor(async () => (await metric('kv_dc_relay_dynamo_nats_connected')) === 0, 'the relay to notice the loss', 10_000);
    // Served from the state it has meanwhile.
    expect(run.holds(aggKey, expectedHashes(before, null, BS)[0])).toBe(true);
    await nats.start();
    await waitFor(async () => (await metric('kv_dc_relay_dynamo_nats_reconnects_total')) === reconnects + 1, 'the relay to reconnect', 20_000, 50);
    // The worker published two messages the relay never saw (lost with the server).
    const after = tokenRange(2100, BS);
    await waitFor(async () => {
      // The worker's own client may still be reconnecting: its flush then fails, and it tries again.
      await second.publish({ stored: { parentHash: null, blocks: [{ blockHash: 11n, tokensHash: DynamoWorker.tokensHashes(after, BS)[0] }] } }, 0, { skip: 2 }).catch(() => undefined);
      return expectedHashes(after, null, BS).every((h) => run.holds(aggKey, h));
    }, 'events after the reconnect', 20_000, 300);
    // The gap reset the source: what it held before the loss is gone.
    await run.awaitGone(aggKey, expectedHashes(before, null, BS), 'the lost publisher’s earlier blocks');
  }, 60_000);

  test('the JetStream consumer deleted: the ordered consumer is recreated where it was; nothing is applied twice', async () => {
    const t = tokenRange(3000, 2 * BS);
    await jsWorker.store([100n, 101n], t, BS);
    await run.awaitHeld(jsKey, expectedHashes(t, null, BS), 'the stream’s blocks');
    await jsWorker.remove([101n]);
    await run.awaitGone(jsKey, [expectedHashes(t, null, BS)[1]], 'the removed block');
    const jsm = await jetstreamManager(nc);
    const stream = kvStreamName({ namespace: 'ns', component: 'prefill' });
    const consumers = await jsm.consumers.list(stream).next();
    expect(consumers.length).toBeGreaterThan(0);
    for (const c of consumers) await jsm.consumers.delete(stream, c.name);
    const u = tokenRange(3100, BS);
    await jsWorker.store([102n], u, BS);
    await run.awaitHeld(jsKey, expectedHashes(u, null, BS), 'a block published after the deletion');
    // The earlier store was not re-applied over the removal.
    expect(run.holds(jsKey, expectedHashes(t, null, BS)[1])).toBe(false);
  }, 30_000);

  test("a worker's lease expiring removes its blocks; the pool and the other worker's blocks stay", async () => {
    const mine = tokenRange(5000, BS);
    const other = tokenRange(5100, BS);
    await second.store([300n], mine, BS);
    await natsWorker.store([301n], other, BS);
    await run.awaitHeld(aggKey, [...expectedHashes(mine, null, BS), ...expectedHashes(other, null, BS)], 'both workers’ blocks');
    const producer = run.client.catalog()!.pools.find((p) => p.poolKey === aggKey)!.descriptor.producer;
    await second.crash();
    await run.awaitGone(aggKey, expectedHashes(mine, null, BS), 'the expired worker’s blocks');
    expect(run.holds(aggKey, expectedHashes(other, null, BS)[0])).toBe(true);
    expect(run.client.catalog()!.pools.find((p) => p.poolKey === aggKey)!.descriptor.producer).toEqual(producer);
    await waitFor(async () => (await metric('kv_dc_relay_dynamo_workers')) === 2, 'the worker to leave discovery', 10_000);
  }, 30_000);
  test('etcd lost and back: the last known deployment is served (stale), then resynced', async () => {
    await etcd.kill();
    await waitFor(async () => (await metric('kv_dc_relay_dynamo_discovery_stale')) === 1, 'discovery to go stale', 20_000, 50);
    expect(run.client.catalog()?.pools.length).toBe(2);
    // Availability is the instance watch (§3.1): lost with it, every entry is UNKNOWN.
    await waitFor(() => run.client.readiness()!.entries.every((e) => e.state === ServingReadinessState.UNKNOWN), 'readiness UNKNOWN while etcd is lost');
    const t = tokenRange(4000, BS);
    await natsWorker.store([200n], t, BS);
    await run.awaitHeld(aggKey, expectedHashes(t, null, BS), 'events while etcd is down');
    await etcd.start();
    await waitFor(async () => (await metric('kv_dc_relay_dynamo_discovery_stale')) === 0, 'discovery to resync', 30_000, 50);
    // Resynced to what etcd holds now (workers whose leases ran out while it was down are gone, as in Dynamo).
    const keys = (await kv.getAll().prefix('v1/mdc/').keys()).length;
    await waitFor(async () => (await metric('kv_dc_relay_dynamo_workers')) === keys, 'the workers etcd holds', 10_000);
    await waitFor(() => run.client.readiness()!.entries.every((e) => e.state !== ServingReadinessState.UNKNOWN), 'readiness known again');
  }, 60_000);

});
