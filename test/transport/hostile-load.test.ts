// Load a hostile peer can put on the listener (issue #9 "Hostile input — gRPC"): a thousand
// streams opened at once and abandoned with their connections, and slowloris-style HTTP/2
// connections that never send a request. Limits hold, every gauge returns to zero, memory stays
// bounded, and a well-behaved client is served afterwards.
import type * as http2 from 'http2';
import { FilterUpdateKind } from '../../src/wire/enums';
import type { FilterUpdate } from '../../src/wire/types';
import { testProducer } from '../support/test-source';
import { waitFor } from '../support/waitFor';
import { StreamReader, startTestRelay, subscriber, type TestRelay } from './helpers';
import { RawSessions, rawCall } from './raw-client';

let relay: TestRelay;
const sessions = new RawSessions();
afterEach(async () => {
  sessions.destroyAll();
  await relay?.close();
});

const session = (): http2.ClientHttp2Session => sessions.connect(relay.server.address);

const STREAMS = 1000;
const CONNECTIONS = 10;

test(`${STREAMS} concurrent streams opened and abandoned: gauges back to zero, RSS bounded, service intact`, async () => {
  const many = { maxCatalogSubscribers: STREAMS, maxPoolStreamsTotal: STREAMS, maxSubscribersPerPool: STREAMS, maxReadinessSubscribers: STREAMS, maxLoadSubscribers: STREAMS, maxServingLoadSubscribers: STREAMS };
  relay = await startTestRelay({ limits: many });
  const producer = testProducer({ bucketCount: 1 << 10 });
  const feed = relay.source.attachPool(producer);
  const rssBefore = process.memoryUsage().rss;

  const connections = Array.from({ length: CONNECTIONS }, () => session());
  const calls = Array.from({ length: STREAMS }, (_, i) => {
    const s = connections[i % CONNECTIONS];
    const id = subscriber(`hostile-${i}`);
    switch (i % 5) {
      case 0:
        return rawCall(s, 'SubscribeKvPool', 'SubscribeKvPoolRequest', { ...id, expectedProducer: producer }, 'FilterUpdate');
      case 1:
        return rawCall(s, 'WatchKvPoolCatalog', 'WatchKvPoolCatalogRequest', id, 'KvPoolCatalogUpdate');
      case 2:
        return rawCall(s, 'SubscribeServingReadiness', 'SubscribeServingReadinessRequest', id, 'ServingReadinessUpdate');
      case 3:
        return rawCall(s, 'SubscribeKvPoolLoad', 'SubscribeKvPoolLoadRequest', id, 'KvPoolLoadUpdate');
      default:
        return rawCall(s, 'SubscribeServingLoad', 'SubscribeServingLoadRequest', id, 'ServingLoadUpdate');
    }
  });
  await Promise.all(calls.map((c) => c.headers));
  const total = (): number => Object.values(relay.server.stats().subscribers).reduce((a, b) => a + b, 0);
  await waitFor(() => total() === STREAMS, `${STREAMS} admitted streams`, 30_000, 20);
  // Deltas keep flowing to clients that never read them.
  for (let i = 0; i < 20; i += 1) feed.publish([[i, BigInt(i + 1)]]);
  const rssPeak = process.memoryUsage().rss;

  // Abandoned: the connections vanish without cancelling anything.
  for (const s of connections) s.destroy();
  await waitFor(() => total() === 0 && relay.server.connections === 0, 'every stream and connection released', 30_000, 20);
  const stats = relay.server.stats();
  expect(stats.readyHubs - stats.idleHubs).toBe(0); // the pool hub has no subscriber left
  // A thousand streams cost well under 1 MiB each; a leak of snapshots or frames per stream would not.
  expect(rssPeak - rssBefore).toBeLessThan(512 * 1024 * 1024);

  const reader = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber('after'), expectedProducer: producer }));
  expect((await reader.next()).kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
  reader.cancel();
}, 120_000);

test('slowloris: idle HTTP/2 connections beyond the cap are refused, the rest closed after connectionIdleMs; then a client is served', async () => {
  const cap = 32;
  relay = await startTestRelay({ limits: { maxConnections: cap }, timing: { connectionIdleMs: 500 } });
  const idle = Array.from({ length: cap + 16 }, () => session());
  const closed = idle.map((s) => new Promise<void>((resolve) => s.once('close', () => resolve())));
  // Every connection has reached the server (or been refused at accept) before the cap is read.
  await Promise.all(idle.map((s) => new Promise<void>((resolve) => (s.connecting ? s.once('connect', () => resolve()) : resolve()))));
  await waitFor(() => relay.server.connections <= cap, 'the cap to hold');
  expect(relay.server.connections).toBeLessThanOrEqual(cap);
  // None ever sends a request: all are closed by the idle timeout (the refused ones at once).
  await Promise.all(closed);
  await waitFor(() => relay.server.connections === 0, 'every idle connection gone', 10_000);
  const reader = new StreamReader(relay.client.watchKvPoolCatalog(subscriber('after')));
  expect((await reader.next()).revision).toBe(0n);
  reader.cancel();
}, 60_000);
