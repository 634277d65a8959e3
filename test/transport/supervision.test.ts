// Supervision and counters (wire-contract.md §9, §10.1): a failed load plane ends its streams and
// stops the transport; the publication counters follow what happens on the wire.
import { status } from '@grpc/grpc-js';
import { FilterUpdateKind, RelayErrorReason } from '../../src/wire/enums';
import type { FilterUpdate } from '../../src/wire/types';
import { TestSource, testDescriptor, testProducer } from '../support/test-source';
import { RELAY, StreamReader, startTestRelay, subscriber, type TestRelay } from './helpers';
import { waitFor } from '../support/waitFor';
import { startRelayServer } from '../../src/transport/server';
import { makeClient } from '../../src/wire/service';

let relay: TestRelay | undefined;
afterEach(async () => relay?.close());

test('a load plane that cannot build its window stops the transport: streams end, lastError is set, onFatal runs', async () => {
  const source = new TestSource();
  let fatal: unknown;
  const server = await startRelayServer({
    source,
    bind: '127.0.0.1:0',
    relay: RELAY,
    options: { timing: { loadWindowMs: 10 } },
    onFatal: (err) => (fatal = err),
  });
  const client = makeClient(server.address);
  const load = new StreamReader(client.subscribeKvPoolLoad(subscriber()));
  await load.next();
  source.poolLoadError = new Error('aggregate sender dropped');
  const end = await load.end();
  expect(end.code).toBe(status.UNAVAILABLE);
  expect(end.reason).toBe(RelayErrorReason.PUBLICATION_UNAVAILABLE);
  expect(end.details).toBe('pool load publication stopped');
  await waitFor(() => fatal !== undefined, 'onFatal');
  expect(server.serving).toBe(false);
  expect((server.lastError as Error).message).toBe('aggregate sender dropped');
  client.close();
  await server.shutdown();
});

test('counters: subscribers per stream, limit rejections by scope, heartbeats, load windows', async () => {
  relay = await startTestRelay({
    limits: { maxCatalogSubscribers: 1, maxSubscribersPerPool: 1 },
    timing: { poolHeartbeatMs: 5, loadWindowMs: 5 },
  });
  const producer = testProducer();
  relay.source.attachPool(producer);
  const catalog = new StreamReader(relay.client.watchKvPoolCatalog(subscriber()));
  await catalog.next();
  expect((await new StreamReader(relay.client.watchKvPoolCatalog(subscriber())).end()).reason).toBe(RelayErrorReason.RESOURCE_LIMIT);
  const pool = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  await pool.next();
  expect((await pool.next()).kind).toBe(FilterUpdateKind.HEARTBEAT);
  const second = await new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer })).end();
  expect(second.reason).toBe(RelayErrorReason.RESOURCE_LIMIT);
  const stats = relay.server.stats();
  expect(stats.subscribers).toEqual({ catalog: 1, pool: 1, readiness: 0, load: 0, serving_load: 0 });
  expect(stats.limitRejectedTotal).toEqual({ 'catalog/total': 1, 'pool/per_pool': 1 });
  expect(stats.poolHeartbeatsTotal).toBeGreaterThanOrEqual(1);
  expect(stats.requestedHubs).toBe(1);
  expect(stats.initializedHubs).toBe(1);
  expect(stats.readyHubs).toBe(1);
  expect(stats.idleHubs).toBe(0);
  await waitFor(() => relay!.server.stats().loadUpdatesTotal >= 2, 'two load windows');
  pool.cancel();
  await waitFor(() => relay!.server.stats().subscribers.pool === 0 && relay!.server.stats().idleHubs === 1, 'the pool subscriber gone and its hub idle');
});

test('hub counters: a hub still taking its first image is requested but not yet initialized or ready', async () => {
  relay = await startTestRelay();
  const producer = testProducer();
  const feed = relay.source.attachPool(producer);
  const attach = feed.attach.bind(feed);
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let attaching = false;
  feed.attach = async (listener) => {
    attaching = true;
    await released;
    return attach(listener);
  };
  const pool = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  await waitFor(() => attaching, 'the hub taking its first image');
  expect(relay.server.stats()).toMatchObject({ requestedHubs: 1, initializedHubs: 0, readyHubs: 0, idleHubs: 0 });
  release();
  expect((await pool.next()).kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
  expect(relay.server.stats()).toMatchObject({ requestedHubs: 1, initializedHubs: 1, readyHubs: 1, idleHubs: 0 });
  pool.cancel();
});

test('a catalog that cannot be encoded ends that stream with INTERNAL and the relay keeps serving', async () => {
  relay = await startTestRelay();
  const bad = testProducer();
  relay.source.attachPool(bad, { ...testDescriptor(bad), poolRoles: ['x' as unknown as number] });
  const catalog = await new StreamReader(relay.client.watchKvPoolCatalog(subscriber())).end();
  expect(catalog.code).toBe(status.INTERNAL);
  expect(catalog.reason).toBe(RelayErrorReason.INTERNAL);
  const readiness = new StreamReader(relay.client.subscribeServingReadiness(subscriber()));
  expect(await readiness.opened()).toBe(true);
});
