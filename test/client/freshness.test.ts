// Freshness of RelayClient over real loopback gRPC: a pool or load stream that stays open but goes
// silent is dropped and reopened.
import { LOAD_SILENCE_MIN_MS } from '../../src/config/defaults';
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../../src/wire/constants';
import { poolKey, producerKey } from '../../src/wire/producer-key';
import type { KvPoolLoadUpdate } from '../../src/wire/types';
import { TestSource, testPoolId, testProducer } from '../support/test-source';
import { waitFor } from '../support/waitFor';
import { serve } from './fake-relay';
import { producer, RELAY } from './fixtures';
import { perTestResources, record, startRelay, testClient } from './helpers';

const KEY1 = poolKey(testPoolId(1));

const loadWindow = (seq: bigint): KvPoolLoadUpdate => ({
  protocolVersion: RELAY_PROTOCOL_VERSION,
  relay: RELAY,
  windowSequence: seq,
  observedMs: 1n,
  windowMs: 50n,
  pools: [{ producer: producer(1n), kvUsedBlocks: 1n, totalKvBlocks: 2n, kvObservedRanks: 1, kvExpectedRanks: 1 }],
  contractMarker: RELAY_CONTRACT_MARKER,
});

describe('RelayClient freshness', () => {
  const t = perTestResources();

  it('invalidates a silent pool replica after maxReplicaAgeMs and resubscribes', async () => {
    const source = new TestSource();
    const feed = source.attachPool(testProducer({ pool: 1 }));
    feed.publish([[2, 0x22n]]);
    t.server = await startRelay(source, { timing: { poolHeartbeatMs: 60_000 } });
    t.client = testClient(t.server.address, { maxReplicaAgeMs: 150 });
    const events = record(t.client);
    t.client.start();
    await waitFor(() => events.replicaInstalled.length === 2, 'a resubscribed replica');
    const [invalidated] = events.replicaInvalidated;
    expect(invalidated.args[0]).toMatchObject({ poolKey: KEY1, producerKey: producerKey(feed.producer), reason: 'streamSilent' });
    const silentFor = invalidated.at - events.replicaInstalled[0].at;
    expect(silentFor).toBeGreaterThanOrEqual(149);
    expect(events.error.map((e) => e.args[0])).toContainEqual(expect.objectContaining({ plane: 'pool', poolKey: KEY1, reason: 'streamSilent', next: 'retry' }));
    expect(events.replicaInstalled.map((e) => e.args[0].producerKey)).toEqual([producerKey(feed.producer), producerKey(feed.producer)]);
  });

  it('keeps a load stream whose window_ms is beyond the timer range (no immediate reopen)', async () => {
    let opened = 0;
    const started = await serve({
      subscribeKvPoolLoad: (call) => {
        opened++;
        call.write({ ...loadWindow(1n), windowMs: 1n << 40n });
      },
    });
    t.fake = started.server;
    t.client = testClient(started.address, { servingLoad: false });
    const events = record(t.client);
    t.client.start();
    await waitFor(() => t.client!.load() !== undefined, 'the first window');
    await new Promise((resolve) => setTimeout(resolve, 200)); // an overflowing timer would fire within 1 ms
    expect(opened).toBe(1);
    expect(events.load.map((e) => e.args[0] === null)).toEqual([false]);
  });

  it(`drops a silent load plane after ${LOAD_SILENCE_MIN_MS} ms (window_ms 50) and reopens it`, async () => {
    const opened: number[] = [];
    const started = await serve({
      subscribeKvPoolLoad: (call) => {
        opened.push(Date.now());
        call.write(loadWindow(BigInt(opened.length))); // one window, then silence with the stream left open
      },
    });
    t.fake = started.server;
    t.client = testClient(started.address, { servingLoad: false });
    const events = record(t.client);
    t.client.start();
    await waitFor(() => opened.length === 2 && t.client!.load()?.windowSequence === 2n, 'a reopened load stream', LOAD_SILENCE_MIN_MS + 3_000);
    expect(events.load.map((e) => e.args[0]?.windowSequence ?? null)).toEqual([1n, null, 2n]);
    expect(events.load[1].at - events.load[0].at).toBeGreaterThanOrEqual(LOAD_SILENCE_MIN_MS - 1);
    expect(events.error.map((e) => e.args[0])).toContainEqual(expect.objectContaining({ plane: 'load', reason: 'streamSilent', next: 'retry' }));
  });
});
