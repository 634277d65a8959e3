// RelayClient against the real gRPC server over loopback, driven through a TestSource.
import type { RelayClient } from '../../src/client/relay-client';
import type { RelayServer } from '../../src/transport/server';
import { RELAY_CONTRACT_MARKER } from '../../src/wire/constants';
import { ServingReadinessState, WorkerRole } from '../../src/wire/enums';
import { poolKey, producerKey } from '../../src/wire/producer-key';
import { makeClient } from '../../src/wire/service';
import { TestSource, testDescriptor, testPoolId, testProducer } from '../support/test-source';
import { waitFor } from '../support/waitFor';
import { record, startRelay, testClient } from './helpers';
import { queryFixture } from './query-fixture';

const KEY1 = poolKey(testPoolId(1));
const KEY2 = poolKey(testPoolId(2));

describe('RelayClient over loopback gRPC', () => {
  let server: RelayServer | undefined;
  let client: RelayClient | undefined;

  afterEach(async () => {
    client?.close();
    client = undefined;
    await server?.shutdown();
    server = undefined;
  });

  it('installs a replica from the snapshot and follows deltas', async () => {
    const source = new TestSource();
    const feed = source.attachPool(testProducer({ pool: 1 }));
    feed.publish([[2, 0x0000_0000_0000_0042n]]);
    server = await startRelay(source);
    client = testClient(server.address);
    const events = record(client);
    client.start();

    await waitFor(() => client!.replica(KEY1) !== undefined, 'replica installed');
    expect(events.replicaInstalled.map((e) => e.args[0])).toEqual([{ poolKey: KEY1, producerKey: producerKey(feed.producer), sequence: 0n }]);
    expect(client.replica(KEY1)!.words![2]).toBe(0x42n);

    feed.publish([[3, 0x0001_0002_0003_0004n]]);
    feed.publish([[3, 0n], [5, 0x7n]]);
    await waitFor(() => client!.replica(KEY1)?.sequence === 2n, 'two deltas applied');
    const words = client.replica(KEY1)!.words!;
    expect([words[2], words[3], words[5]]).toEqual([0x42n, 0n, 0x7n]);
    expect(events.delta.map((e) => [e.args[0].sequence, e.args[0].imageCount])).toEqual([
      [1n, 1],
      [2n, 2],
    ]);
    const [state] = client.poolStates();
    expect(state.stream).toBe('open');
    expect(state.stats).toMatchObject({ ready: true, sequence: 2n, filledSlots: 2, totalSlots: 64 });
    expect(state.stats!.deltasPerSecond).toBeGreaterThan(0);
    expect(events.replicaInvalidated).toEqual([]);
  });

  it('follows readiness and load windows', async () => {
    const source = new TestSource();
    const feed = source.attachPool(testProducer({ pool: 1 }));
    source.poolLoadState = { pools: [{ producer: feed.producer, kvUsedBlocks: 40n, totalKvBlocks: 100n, kvObservedRanks: 1, kvExpectedRanks: 1 }] };
    server = await startRelay(source, { timing: { loadWindowMs: 20 } });
    client = testClient(server.address);
    client.start();
    source.setReadiness([
      {
        namespace: 'dynamo',
        canonicalModelId: 'llama',
        state: ServingReadinessState.READY,
        presentRoles: [WorkerRole.LEGACY],
        missingRoles: [],
        members: [{ endpoint: { namespace: 'dynamo', component: 'backend', endpoint: 'generate' }, roles: [WorkerRole.LEGACY], poolId: testPoolId(1) }],
        duplicateRoleEndpoints: [],
        legacyFallbackActive: true,
        adapters: [],
      },
    ]);
    await waitFor(() => client!.readiness()?.entries.length === 1, 'readiness entry');
    await waitFor(() => client!.load()?.pools.get(producerKey(feed.producer))?.kvUsedBlocks === 40n, 'load window');
    const first = client.load()!.windowSequence;
    await waitFor(() => client!.load()!.windowSequence > first, 'a later load window');
  });

  it('quarantines an unsupported pool while the others stay', async () => {
    const source = new TestSource();
    source.attachPool(testProducer({ pool: 1 }));
    const future = testProducer({ pool: 2 });
    source.attachPool(future, { ...testDescriptor(future), querySemantics: { kvBlockSize: 64, hashFormat: 7 } });
    server = await startRelay(source);
    client = testClient(server.address);
    client.start();
    await waitFor(() => client!.replica(KEY1) !== undefined, 'supported pool replica');
    const catalog = client.catalog()!;
    expect(catalog.pools.map((p) => p.poolKey)).toEqual([KEY1]);
    expect(catalog.quarantined).toHaveLength(1);
    expect(client.poolStates().map((s) => s.pool.poolKey)).toEqual([KEY1]);
    expect(client.replica(KEY2)).toBeUndefined();
  });

  it('invalidates the replica when the server restarts mid-stream and reinstalls a fresh snapshot', async () => {
    const source = new TestSource();
    const feed = source.attachPool(testProducer({ pool: 1 }));
    server = await startRelay(source);
    const port = server.port;
    client = testClient(server.address);
    const events = record(client);
    client.start();
    await waitFor(() => client!.replica(KEY1) !== undefined, 'first install');
    feed.publish([[1, 0x11n]]);
    await waitFor(() => client!.replica(KEY1)?.sequence === 1n, 'first delta');

    await server.shutdown();
    await waitFor(() => events.replicaInvalidated.length === 1, 'invalidation');
    expect(client.replica(KEY1)).toBeUndefined();
    expect(client.catalog()).toBeUndefined();
    // Changes made while the relay is down arrive with the next snapshot, never as a delta.
    feed.publish([[4, 0x44n]]);

    server = await startRelay(source, {}, port);
    await waitFor(() => client!.replica(KEY1)?.words?.[4] === 0x44n, 'reinstalled replica', 10_000);
    expect(client.replica(KEY1)!.words![1]).toBe(0x11n);
    expect(events.replicaInstalled).toHaveLength(2);
    expect(events.delta).toHaveLength(1);
  });

  it('resubscribes to the new producer when the catalog shows a new generation', async () => {
    const source = new TestSource();
    const gen1 = source.attachPool(testProducer({ pool: 1 }));
    gen1.publish([[6, 0x66n]]);
    server = await startRelay(source);
    client = testClient(server.address);
    const events = record(client);
    client.start();
    await waitFor(() => client!.replica(KEY1) !== undefined, 'generation 1 replica');

    const gen2 = source.attachPool(testProducer({ pool: 1, layoutGeneration: 2n }));
    await waitFor(() => client!.replica(KEY1)?.producerKey === producerKey(gen2.producer), 'generation 2 replica');
    expect(client.replica(KEY1)!.sequence).toBe(0n);
    expect(client.replica(KEY1)!.words![6]).toBe(0n);
    expect(events.replicaInvalidated.map((e) => e.args[0].producerKey)).toEqual([producerKey(gen1.producer)]);
    expect(events.replicaInstalled.map((e) => e.args[0].producerKey)).toEqual([producerKey(gen1.producer), producerKey(gen2.producer)]);
  });

  const depthOf = (c: RelayClient): Array<string | number | null> | string => {
    const r = c.query({ model: 'llama', tokens: Array.from({ length: 64 }, (_, i) => i) });
    return r.kind === 'ok' ? [r.pools[0].replica, r.pools[0].matchedBlocks] : r.kind;
  };

  it('stays fresh on heartbeats alone', async () => {
    const source = new TestSource();
    source.attachPool(testProducer({ pool: 1 }));
    server = await startRelay(source, { timing: { poolHeartbeatMs: 20 } });
    // The age bound is 15 heartbeats: a loaded CI machine can stall the loop for ~100 ms.
    client = testClient(server.address, { maxReplicaAgeMs: 300 });
    const events = record(client);
    client.start();
    await waitFor(() => client!.replica(KEY1) !== undefined, 'replica');
    const seen: Array<ReturnType<typeof depthOf>> = [];
    const t0 = Date.now();
    await waitFor(() => {
      seen.push(depthOf(client!));
      return Date.now() - t0 > 1200;
    }, 'four freshness periods');
    expect(seen.every((d) => Array.isArray(d) && d[0] === 'ready')).toBe(true);
    expect(events.replicaInvalidated).toEqual([]);
    expect(events.replicaInstalled).toHaveLength(1);
  });

  it('subscribes only to the pools the filter selects', async () => {
    const source = new TestSource();
    source.attachPool(testProducer({ pool: 1 }));
    source.attachPool(testProducer({ pool: 2 }));
    server = await startRelay(source);
    client = testClient(server.address, { pools: (pool) => pool.poolKey === KEY2 });
    client.start();
    await waitFor(() => client!.replica(KEY2) !== undefined, 'selected replica');
    expect(client.catalog()!.pools).toHaveLength(2);
    expect(client.poolStates().map((s) => s.pool.poolKey)).toEqual([KEY2]);
  });

  it('drops the replica of a pool withdrawn from the catalog', async () => {
    const source = new TestSource();
    source.attachPool(testProducer({ pool: 1 }));
    source.attachPool(testProducer({ pool: 2 }));
    server = await startRelay(source);
    client = testClient(server.address);
    const events = record(client);
    client.start();
    await waitFor(() => client!.replica(KEY1) !== undefined && client!.replica(KEY2) !== undefined, 'both replicas');
    source.withdrawPool(testPoolId(2));
    await waitFor(() => client!.replica(KEY2) === undefined, 'pool 2 dropped');
    expect(client.replica(KEY1)).toBeDefined();
    expect(events.replicaInvalidated.some((e) => e.args[0].poolKey === KEY2)).toBe(true);
    expect(client.poolStates().map((s) => s.pool.poolKey)).toEqual([KEY1]);
  });

  it('backs off on RESOURCE_EXHAUSTED and subscribes once a stream slot frees', async () => {
    const source = new TestSource();
    const feed = source.attachPool(testProducer({ pool: 1 }));
    server = await startRelay(source, { limits: { maxPoolStreamsTotal: 1 } });
    const holder = makeClient(server.address, { channelOptions: { 'grpc.max_receive_message_length': 8 << 20 } });
    const held = holder.subscribeKvPool({ subscriberId: 'holder', expectedProducer: feed.producer, contractMarker: RELAY_CONTRACT_MARKER });
    held.on('error', () => undefined); // its cancellation below is expected
    await new Promise<void>((resolve) => held.once('data', () => resolve()));

    client = testClient(server.address);
    const events = record(client);
    client.start();
    const poolErrors = () => events.error.filter((e) => e.args[0].plane === 'pool');
    await waitFor(() => poolErrors().length >= 5, 'five rejected subscriptions');
    for (const e of poolErrors()) {
      expect(e.args[0]).toMatchObject({ reason: 'RELAY_ERROR_REASON_RESOURCE_LIMIT', next: 'retry' });
    }
    const at = poolErrors().map((e) => e.at);
    // Equal jitter keeps attempt k's delay at or above base_k / 2, with base 20, 40, 80, 160 ms: the
    // gaps between rejections grow at least that fast (timers never fire early).
    [10, 20, 40, 80].forEach((minimum, k) => expect(at[k + 1] - at[k]).toBeGreaterThanOrEqual(minimum - 1));
    expect(client.replica(KEY1)).toBeUndefined();

    held.cancel();
    holder.close();
    await waitFor(() => client!.replica(KEY1) !== undefined, 'replica after the slot freed');
  });

  it('answers queries with per-pool depths equal to the published prefixes', async () => {
    const source = new TestSource();
    const fixture = queryFixture(source);
    server = await startRelay(source);
    client = testClient(server.address);
    client.start();
    await waitFor(() => client!.poolStates().every((s) => s.stats?.ready) && client!.poolStates().length === 3, 'three replicas');
    fixture.verify(client);
  });

  it('rejects an invalid subscriber id and verification window up front', () => {
    expect(() => testClient('127.0.0.1:1', { subscriberId: '' })).toThrow(TypeError);
    expect(() => testClient('127.0.0.1:1', { subscriberId: 'x'.repeat(119) })).toThrow(RangeError);
    expect(() => testClient('127.0.0.1:1', { subscriberId: 'a\nb' })).toThrow(RangeError);
    expect(() => testClient('127.0.0.1:1', { verificationWindow: 9 })).toThrow(RangeError);
  });
});

