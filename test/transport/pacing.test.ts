// Who may stretch a pool's publication slice (publication/pacing.ts, issue #9): a subscriber only
// while pacing can still save it. Real gRPC over loopback, a fast grpc-js reader and raw HTTP/2
// readers that trickle or stall; the test feed publishes like a paced pool actor would: a delta
// every `stretch` x 5 ms (up to 200 ms), so a reader is hopeless when it reads slower than 12 KB
// per 200 ms.
import { PACING_PAUSE_BUDGET_MS } from '../../src/config/defaults';
import type { FilterUpdate } from '../../src/wire/types';
import { TestPoolFeed, testProducer } from '../support/test-source';
import { StreamReader, startTestRelay, subscriber, type TestRelay } from './helpers';
import { rawCall, rawSession, type RawCall } from './raw-client';

const IMAGES_PER_DELTA = 1000; // ~12 KB
const BASE_INTERVAL_MS = 5;
const MAX_INTERVAL_MS = 200;
const LAGGED = 'RELAY_ERROR_REASON_SUBSCRIBER_LAGGED';

let relay: TestRelay;
afterEach(async () => relay?.close());

interface Pace {
  at: number;
  stretch: number;
}

/** Attaches the pool with a feed that records the hub's pacing requests. */
function pacedFeed(bucketCount: number): { feed: TestPoolFeed; paces: Pace[]; stretch: () => number } {
  const feed = relay.source.attachPool(testProducer({ bucketCount }));
  const paces: Pace[] = [];
  Object.assign(feed, { pace: (stretch: number) => paces.push({ at: performance.now(), stretch }) });
  return { feed, paces, stretch: () => paces.at(-1)?.stretch ?? 1 };
}

/**
 * Publishes paced deltas (the fast reader takes each) until `slow` ends; returns when it was lagged.
 * `published` gets the time each delta was handed to the hub (which judges the queues then).
 */
async function publishUntilLagged(
  feed: TestPoolFeed,
  bucketCount: number,
  stretch: () => number,
  fast: StreamReader<FilterUpdate>,
  slow: RawCall<'FilterUpdate'>,
  published: number[] = [],
): Promise<number> {
  let ended = false;
  void slow.end().then(() => (ended = true));
  let next = 0;
  const deadline = performance.now() + 30_000;
  while (relay.server.stats().laggedTotal.pool === 0 && !ended && performance.now() < deadline) {
    const images = Array.from({ length: IMAGES_PER_DELTA }, () => [next++ % bucketCount, BigInt(next)] as [number, bigint]);
    published.push(performance.now());
    const sequence = feed.publish(images)!.sequence;
    expect((await fast.next(10_000)).sequence).toBe(sequence);
    await new Promise((resolve) => setTimeout(resolve, Math.min(BASE_INTERVAL_MS * stretch(), MAX_INTERVAL_MS)));
  }
  expect(relay.server.stats().laggedTotal.pool).toBe(1);
  return performance.now();
}

test('a live reader that keeps taking frames but never catches up is paced for only its pause budget, then lags alone', async () => {
  relay = await startTestRelay();
  const bucketCount = 1 << 10; // an 8 KiB snapshot: the trickling reader goes live at once
  const { feed, paces, stretch } = pacedFeed(bucketCount);
  const fast = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber('fast'), expectedProducer: feed.producer }));
  await fast.next(10_000);
  const session = rawSession(relay.server.address);
  const slow = rawCall(session, 'SubscribeKvPool', 'SubscribeKvPoolRequest', { ...subscriber('slow'), expectedProducer: feed.producer }, 'FilterUpdate');
  await slow.headers;
  // 2 KB every 50 ms: a frame taken every ~300 ms (it never stalls), yet slower than 12 KB per 200 ms.
  const trickle = setInterval(() => slow.stream.read(2048), 50);
  try {
    const published: number[] = [];
    const laggedAt = await publishUntilLagged(feed, bucketCount, stretch, fast, slow, published);
    const first = paces.find((p) => p.stretch > 1);
    expect(first).toBeDefined(); // it was paced for while it could have been a pause
    // Its queue last stood low at the delta before the first stretch; the budget counts from there.
    const lowAt = published.filter((t) => t < first!.at).at(-2)!;
    // Past the budget it no longer holds the slice: the stretch was coming down while it was still there.
    const fallingAt = paces.find((p, i) => i > 0 && p.stretch < paces[i - 1].stretch)?.at;
    expect(fallingAt).toBeDefined();
    expect(fallingAt!).toBeLessThan(laggedAt);
    expect(fallingAt! - lowAt).toBeGreaterThanOrEqual(PACING_PAUSE_BUDGET_MS);
  } finally {
    clearInterval(trickle);
  }
  slow.resume();
  const end = await slow.end();
  expect(end.reason).toBe(LAGGED);
  expect(fast.ended).toBeUndefined();
  session.close();
}, 60_000);

test('a reader stalled in its snapshot stretches the slice only while its chunk could still be moving, then lags alone', async () => {
  relay = await startTestRelay();
  const bucketCount = 1 << 16; // one 512 KiB chunk (allowance 0.16 s), far beyond a stalled HTTP/2 window
  const { feed, paces, stretch } = pacedFeed(bucketCount);
  const fast = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber('fast'), expectedProducer: feed.producer }));
  await fast.next(10_000);
  const session = rawSession(relay.server.address);
  const stalled = rawCall(session, 'SubscribeKvPool', 'SubscribeKvPoolRequest', { ...subscriber('stalled'), expectedProducer: feed.producer }, 'FilterUpdate');
  await stalled.headers; // its chunk is being written and will never be taken
  await publishUntilLagged(feed, bucketCount, stretch, fast, stalled);
  // Counted for the whole pause budget, 16 queued deltas would have stretched it to the maximum (1024).
  expect(Math.max(1, ...paces.map((p) => p.stretch))).toBeLessThan(128);
  stalled.resume();
  expect((await stalled.end()).reason).toBe(LAGGED);
  expect(fast.ended).toBeUndefined();
  session.close();
}, 60_000);
