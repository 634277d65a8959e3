// Subscribers that do not keep up (wire-contract.md §6.2.3, §6.2.4, §6.4): a bounded queue per
// subscriber, measured by what the transport has not sent on yet; lag ends only the slow stream.
import { status } from '@grpc/grpc-js';
import { FilterUpdateKind, RelayErrorReason } from '../../src/wire/enums';
import type { FilterUpdate } from '../../src/wire/types';
import { testProducer } from '../support/test-source';
import { StreamReader, startTestRelay, subscriber, type TestRelay } from './helpers';
import { waitFor } from '../support/waitFor';
import { rawCall, rawSession } from './raw-client';

let relay: TestRelay;
afterEach(async () => relay?.close());

test('a subscriber that stops reading lags with a tiny queue while a fast subscriber keeps up', async () => {
  relay = await startTestRelay({ queues: { publicationQueueCapacity: 4 } });
  const producer = testProducer({ bucketCount: 1 << 16 });
  const feed = relay.source.attachPool(producer);

  const fast = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber('fast'), expectedProducer: producer }));
  expect((await fast.next()).kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
  const session = rawSession(relay.server.address);
  const slow = rawCall(session, 'SubscribeKvPool', 'SubscribeKvPoolRequest', { ...subscriber('slow'), expectedProducer: producer }, 'FilterUpdate');
  await slow.headers; // its snapshot is being written; it never reads

  // 1000 images per delta (~12 KB): the slow stream's HTTP/2 window closes after a few deltas.
  let published = 0;
  let next = 0;
  for (let i = 0; i < 64; i += 1) {
    const images: Array<[number, bigint]> = [];
    for (let k = 0; k < 1000; k += 1) images.push([(next++ * 7) % (1 << 16), BigInt(i + 1)]);
    feed.publish(images);
    published += 1;
    // The fast subscriber takes every delta before the next one is published.
    const d = await fast.next();
    expect(d.sequence).toBe(BigInt(published));
  }
  expect(fast.ended).toBeUndefined();

  slow.resume();
  const end = await slow.end();
  expect(end.code).toBe(status.RESOURCE_EXHAUSTED);
  expect(end.reason).toBe('RELAY_ERROR_REASON_SUBSCRIBER_LAGGED');
  const got = slow.messages();
  expect(got[0].kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
  expect(got.length).toBeLessThan(published + 1);
  // What it did get is contiguous.
  for (let i = 1; i < got.length; i += 1) expect(got[i].baseSequence).toBe(got[i - 1].sequence);
  session.close();
});

test('a live subscriber whose client stops reading lags once the transport stops taking its frames', async () => {
  relay = await startTestRelay({ queues: { publicationQueueCapacity: 4 } });
  const producer = testProducer({ bucketCount: 16 }); // a one-chunk snapshot that fits the window
  const feed = relay.source.attachPool(producer);
  const fast = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber('fast'), expectedProducer: producer }));
  await fast.next();
  const session = rawSession(relay.server.address);
  const slow = rawCall(session, 'SubscribeKvPool', 'SubscribeKvPoolRequest', { ...subscriber('slow'), expectedProducer: producer }, 'FilterUpdate');
  await slow.headers;
  let published = 0;
  while (relay.server.stats().laggedTotal.pool === 0 && published < 2000) {
    feed.publish(Array.from({ length: 16 }, (_, b) => [b, BigInt(published + 1)] as [number, bigint]));
    published += 1;
    expect((await fast.next()).sequence).toBe(BigInt(published));
  }
  expect(relay.server.stats().laggedTotal.pool).toBe(1);
  expect(published).toBeGreaterThan(16); // it went live and took deltas until its window closed
  slow.resume();
  const end = await slow.end();
  expect(end.reason).toBe('RELAY_ERROR_REASON_SUBSCRIBER_LAGGED');
  const got = slow.messages();
  expect(got[0].kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
  expect(got.slice(1).map((m) => m.sequence)).toEqual(got.slice(1).map((_, i) => BigInt(i + 1)));
  expect(fast.ended).toBeUndefined();
  session.close();
});

test('the bootstrap ends with SNAPSHOT_PROGRESS_TIMEOUT when the client stops taking chunks; the slot frees', async () => {
  relay = await startTestRelay({ limits: { maxPoolStreamsTotal: 1 }, timing: { snapshotProgressTimeoutMs: 1_000 } });
  // (1 s, not less: the reader below must take each 4 MiB chunk within it on a loaded machine)
  const producer = testProducer({ bucketCount: 1 << 20 }); // 2 chunks of 4 MiB
  relay.source.attachPool(producer);
  const session = rawSession(relay.server.address);
  const stalled = rawCall(session, 'SubscribeKvPool', 'SubscribeKvPoolRequest', { ...subscriber('stalled'), expectedProducer: producer }, 'FilterUpdate');
  // Once the timeout fired the permit is back: a reading client gets the whole snapshot.
  const started = Date.now();
  let reader: StreamReader<FilterUpdate> | undefined;
  await waitFor(async () => {
    reader = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber('reader'), expectedProducer: producer }));
    return reader.opened();
  }, 'a reader admitted once the stalled permit is back', 5000, 20);
  expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  const chunks = [await reader!.next(), await reader!.next()];
  expect(chunks.map((c) => c.kind)).toEqual([FilterUpdateKind.SNAPSHOT_CHUNK, FilterUpdateKind.SNAPSHOT_CHUNK]);

  stalled.resume();
  const end = await stalled.end();
  expect(end.code).toBe(status.RESOURCE_EXHAUSTED);
  expect(end.reason).toBe('RELAY_ERROR_REASON_SNAPSHOT_PROGRESS_TIMEOUT');
  expect(stalled.messages().length).toBeLessThan(2);
  session.close();
});

test('deltas piling up behind a stalled bootstrap are lag, checked between snapshot chunks', async () => {
  relay = await startTestRelay({ queues: { publicationQueueCapacity: 4 }, timing: { snapshotProgressTimeoutMs: 30_000 } });
  const producer = testProducer({ bucketCount: 1 << 20 }); // 2 chunks of 4 MiB: the first one stalls
  const feed = relay.source.attachPool(producer);
  const session = rawSession(relay.server.address);
  const stalled = rawCall(session, 'SubscribeKvPool', 'SubscribeKvPoolRequest', { ...subscriber('stalled'), expectedProducer: producer }, 'FilterUpdate');
  await stalled.headers; // the first chunk is being written: the bootstrap has begun
  for (let i = 0; i < 5; i += 1) feed.publish([[i, BigInt(i + 1)]]);
  await waitFor(() => relay.server.stats().laggedTotal.pool === 1, 'the stalled bootstrap to be dropped as lagged');
  stalled.resume();
  const end = await stalled.end();
  expect(end.code).toBe(status.RESOURCE_EXHAUSTED);
  expect(end.reason).toBe('RELAY_ERROR_REASON_SUBSCRIBER_LAGGED');
  expect(stalled.messages().every((m) => m.kind === FilterUpdateKind.SNAPSHOT_CHUNK)).toBe(true);
  session.close();
});

test('a load subscriber that stops reading lags by complete windows; others keep receiving', async () => {
  relay = await startTestRelay({ timing: { loadWindowMs: 20 }, wan: { loadFanoutCapacity: 2 } });
  // Large windows so the stalled stream's HTTP/2 window fills quickly.
  relay.source.poolLoadState = {
    pools: Array.from({ length: 200 }, (_, i) => ({ producer: testProducer({ pool: i + 1 }), kvUsedBlocks: 1n, totalKvBlocks: 2n, kvObservedRanks: 1, kvExpectedRanks: 1 })),
  };
  const session = rawSession(relay.server.address);
  const stalled = rawCall(session, 'SubscribeKvPoolLoad', 'SubscribeKvPoolLoadRequest', subscriber('stalled'), 'KvPoolLoadUpdate');
  const live = new StreamReader(relay.client.subscribeKvPoolLoad(subscriber('live')));
  let last = (await live.next()).windowSequence;
  for (let i = 0; i < 15; i += 1) {
    const w = await live.next();
    expect(w.windowSequence).toBeGreaterThan(last);
    last = w.windowSequence;
  }
  stalled.resume();
  const end = await stalled.end();
  expect(end.code).toBe(status.RESOURCE_EXHAUSTED);
  expect(end.reason).toBe('RELAY_ERROR_REASON_SUBSCRIBER_LAGGED');
  expect(end.details).toMatch(/pool load subscriber lagged by \d+ complete windows; resubscribe/);
  expect(live.ended).toBeUndefined();
  session.close();
});


test('a stalled client of an idle pool holds at most one untaken heartbeat (they do not pile up)', async () => {
  relay = await startTestRelay({ timing: { poolHeartbeatMs: 1 } });
  const producer = testProducer({ bucketCount: 1 << 12 }); // a 32 KiB snapshot: half the stream window
  relay.source.attachPool(producer);
  const session = rawSession(relay.server.address);
  const stalled = rawCall(session, 'SubscribeKvPool', 'SubscribeKvPoolRequest', { ...subscriber('stalled'), expectedProducer: producer }, 'FilterUpdate');
  await stalled.headers;
  // A heartbeat per millisecond fills the rest of the window within a second; from then on the
  // transport takes nothing, and no further heartbeat may be handed over.
  const sent = (): number => relay.server.stats().poolHeartbeatsTotal;
  let last = -1;
  await waitFor(
    async () => {
      const before = sent();
      await new Promise((resolve) => setTimeout(resolve, 300));
      last = sent();
      return before > 0 && last === before;
    },
    'heartbeats to stop once the stalled stream window is full',
    20_000,
    0,
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(sent()).toBe(last);
  stalled.resume();
  await waitFor(() => stalled.messages().filter((m) => m.kind === FilterUpdateKind.HEARTBEAT).length >= last, 'every heartbeat handed over to arrive');
  session.close();
}, 30_000);
