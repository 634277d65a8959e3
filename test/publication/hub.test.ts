// PoolHub against a feed whose image arrives when the test says so: admission while initializing,
// retirement and shutdown during the wait, deltas racing the first image, encoding concurrency.
import { PoolHub, type HubContext, type HubSubscriber } from '../../src/publication/hub';
import { QueuedPermits } from '../../src/publication/permits';
import { HubRegistry } from '../../src/publication/registry';
import { QueueState } from '../../src/publication/pacing';
import type { PoolImage, PoolListener } from '../../src/publication/source';
import { PublicationCounters } from '../../src/publication/stats';
import { RelayErrorReason } from '../../src/wire/enums';
import { RelayError } from '../../src/wire/errors';
import { producerKey } from '../../src/wire/producer-key';
import { TestPoolFeed, testProducer } from '../support/test-source';
import { RELAY } from '../transport/helpers';

/** A TestPoolFeed whose attach resolves only when `release()` is called. */
class GatedFeed extends TestPoolFeed {
  private gates: Array<() => void> = [];

  override attach(listener: PoolListener): Promise<PoolImage> {
    const image = super.attach(listener);
    return new Promise((resolve) => this.gates.push(() => resolve(image)));
  }

  release(): void {
    for (const g of this.gates.splice(0)) g();
  }

  get waiting(): number {
    return this.gates.length;
  }
}

function context(overrides: Partial<HubContext> = {}): HubContext {
  return {
    relay: RELAY,
    encodingPermits: new QueuedPermits(2),
    maxSubscribersPerPool: 64,
    replayLimit: 16,
    replayBytes: 16 << 20,
    shutdown: new AbortController().signal,
    counters: new PublicationCounters(),
    ...overrides,
  };
}

class Recorder implements HubSubscriber {
  frames: bigint[] = [];
  objects: unknown[] = [];
  ended: RelayError | null | undefined;
  /** What queueState() reports (a test sets it). */
  queue = QueueState.Low;
  queueState(): QueueState {
    return this.queue;
  }
  deliver(frame: { sequence: bigint }): void {
    this.frames.push(frame.sequence);
    this.objects.push(frame);
  }
  end(error?: RelayError): void {
    this.ended = error ?? null;
  }
}

const flush = () => new Promise((r) => setImmediate(r));

test('subscribers arriving while the first image is taken share it; deltas racing the image are replayed', async () => {
  const feed = new GatedFeed(testProducer());
  const hub = new PoolHub(feed, context());
  const a = hub.subscribe(new Recorder());
  const b = hub.subscribe(new Recorder());
  await flush();
  expect(feed.attachCount).toBe(1);
  expect(hub.idle).toBe(false);
  feed.release();
  // A delta published after the image was cut but before the hub saw the image.
  feed.publish([[1, 1n]]);
  const [ja, jb] = await Promise.all([a, b]);
  expect(ja.snapshot).toBe(jb.snapshot);
  expect(ja.snapshot.sequence).toBe(0n);
  expect(ja.replay.map((f) => f.sequence)).toEqual([1n]);
});

test('a producer that outruns the recent-delta memory during the image gets a second image, not a fence', async () => {
  const feed = new GatedFeed(testProducer());
  const hub = new PoolHub(feed, context());
  const admission = hub.subscribe(new Recorder());
  await flush();
  for (let i = 0; i < 70; i += 1) feed.publish([[i % 16, BigInt(i + 1)]]);
  feed.release();
  await flush();
  expect(feed.attachCount).toBe(2);
  feed.release();
  const joined = await admission;
  expect(joined.snapshot.sequence).toBe(70n);
  expect(joined.replay).toEqual([]);
  expect(hub.isEnded).toBe(false);
});

test('an oversized delta while the image is taken leads to a second image, not a fence', async () => {
  const feed = new GatedFeed(testProducer());
  const hub = new PoolHub(feed, context());
  const admission = hub.subscribe(new Recorder());
  await flush();
  feed.publishOversized(349_526);
  feed.release();
  await flush();
  expect(feed.attachCount).toBe(2);
  feed.release();
  expect((await admission).snapshot.sequence).toBe(1n);
  expect(hub.isEnded).toBe(false);
});

test('retirement while waiting for an encoding permit ends the admission with PUBLICATION_UNAVAILABLE', async () => {
  const permits = new QueuedPermits(1);
  const blocker = await permits.acquire(new AbortController().signal);
  const feed = new GatedFeed(testProducer());
  const hub = new PoolHub(feed, context({ encodingPermits: permits }));
  const admission = hub.subscribe(new Recorder());
  await flush();
  expect(feed.attachCount).toBe(0); // still waiting for the permit
  hub.end(new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, 'retired'));
  await expect(admission).rejects.toMatchObject({ reason: RelayErrorReason.PUBLICATION_UNAVAILABLE });
  blocker();
});

test('relay shutdown abandons a waiting admission', async () => {
  const permits = new QueuedPermits(1);
  const blocker = await permits.acquire(new AbortController().signal);
  const shutdown = new AbortController();
  const hub = new PoolHub(new GatedFeed(testProducer()), context({ encodingPermits: permits, shutdown: shutdown.signal }));
  const admission = hub.subscribe(new Recorder());
  shutdown.abort();
  await expect(admission).rejects.toMatchObject({ reason: RelayErrorReason.PUBLICATION_UNAVAILABLE });
  blocker();
});

test('the encoding concurrency limit bounds images taken at once across hubs', async () => {
  const permits = new QueuedPermits(1);
  const feeds = [new GatedFeed(testProducer({ pool: 1 })), new GatedFeed(testProducer({ pool: 2 }))];
  const hubs = feeds.map((f) => new PoolHub(f, context({ encodingPermits: permits })));
  const admissions = hubs.map((h) => h.subscribe(new Recorder()));
  await flush();
  expect(feeds.map((f) => f.waiting)).toEqual([1, 0]);
  feeds[0].release();
  await admissions[0];
  await flush();
  expect(feeds[1].waiting).toBe(1);
  feeds[1].release();
  await admissions[1];
});

test('a failing initialization ends the hub: PUBLICATION_UNAVAILABLE for the waiting subscriber', async () => {
  const feed = new TestPoolFeed(testProducer());
  feed.attach = () => Promise.reject(new Error('pool generation is retired'));
  const hub = new PoolHub(feed, context());
  await expect(hub.subscribe(new Recorder())).rejects.toMatchObject({ reason: RelayErrorReason.PUBLICATION_UNAVAILABLE });
  expect(hub.isEnded).toBe(true);
});

test('a snapshot that cannot be encoded is INVALID_PUBLICATION', async () => {
  const feed = new TestPoolFeed(testProducer({ bucketCount: 16 }));
  const attach = feed.attach.bind(feed);
  feed.attach = async (listener) => ({ ...(await attach(listener)), words: new BigUint64Array(8) }); // wrong size
  const hub = new PoolHub(feed, context());
  await expect(hub.subscribe(new Recorder())).rejects.toMatchObject({ reason: RelayErrorReason.INVALID_PUBLICATION });
  expect(hub.isEnded).toBe(true);
});

test('live subscribers get every delta as one shared frame; retirement ends them', async () => {
  const feed = new TestPoolFeed(testProducer());
  const hub = new PoolHub(feed, context());
  const r1 = new Recorder();
  const r2 = new Recorder();
  await hub.subscribe(r1);
  await hub.subscribe(r2);
  feed.publish([[0, 1n]]);
  feed.publish([[0, 2n]]);
  expect(r1.frames).toEqual([1n, 2n]);
  expect(r2.frames).toEqual([1n, 2n]);
  expect(r2.objects[0]).toBe(r1.objects[0]);
  feed.retire();
  expect(r1.ended).toMatchObject({ reason: RelayErrorReason.PUBLICATION_UNAVAILABLE });
  expect(feed.attached).toBe(false);
});

test('registry counts: a requested hub is ready once its first image is adopted, no longer once it ended', async () => {
  const registry = new HubRegistry(context(), 4);
  const gated = new GatedFeed(testProducer({ pool: 1 }));
  const hub = registry.hubFor(gated, producerKey(gated.producer), 'pool-1');
  const admission = hub.subscribe(new Recorder());
  await flush();
  expect([registry.size, registry.readyCount, registry.idleCount]).toEqual([1, 0, 0]);
  gated.release();
  await admission;
  expect([registry.size, registry.readyCount, registry.idleCount]).toEqual([1, 1, 0]);
  gated.fence('test');
  expect([registry.size, registry.readyCount]).toEqual([0, 0]);
});

test('pacing: the hub doubles the slice while a queue fills, holds it while one drains, and returns to 1 once all stand low or it ends', async () => {
  const paces: number[] = [];
  const feed = Object.assign(new TestPoolFeed(testProducer()), { pace: (stretch: number) => paces.push(stretch) });
  const hub = new PoolHub(feed, context());
  const fast = new Recorder();
  const slow = new Recorder();
  await hub.subscribe(fast);
  await hub.subscribe(slow);
  // One delta per turn of the event loop, as a slow engine's would come.
  const publish = async (sequence: bigint) => {
    feed.publish([[0, sequence]]);
    await flush();
  };
  await publish(1n);
  expect(paces).toEqual([]); // every queue low at stretch 1: nothing to ask
  slow.queue = QueueState.Filling;
  await publish(2n);
  await publish(3n);
  await publish(4n);
  slow.queue = QueueState.Draining; // reading again: held, not doubled
  await publish(5n);
  await publish(6n);
  expect(paces).toEqual([2, 4, 8]);
  slow.queue = QueueState.Low; // one low judgement brings the configured slice back
  await publish(7n);
  expect(paces).toEqual([2, 4, 8, 1]);
  slow.queue = QueueState.Filling;
  fast.queue = QueueState.Draining; // the neediest queue decides
  for (let i = 0; i < 20; i += 1) await publish(BigInt(8 + i));
  expect(paces.at(-1)).toBe(1024);
  expect(fast.frames).toHaveLength(27); // every delta still reaches everyone
  feed.retire();
  expect(paces.at(-1)).toBe(1);
});

test('pacing: deltas of one turn are judged once, at the first (the frames handed out in that turn cannot have been taken yet)', async () => {
  const paces: number[] = [];
  const feed = Object.assign(new TestPoolFeed(testProducer()), { pace: (stretch: number) => paces.push(stretch) });
  const hub = new PoolHub(feed, context());
  const reader = new Recorder();
  await hub.subscribe(reader);
  reader.queue = QueueState.Filling;
  for (let i = 1; i <= 8; i += 1) feed.publish([[0, BigInt(i)]]);
  expect(paces).toEqual([2]);
  expect(reader.frames).toHaveLength(8);
  await flush();
  feed.publish([[0, 9n]]);
  expect(paces).toEqual([2, 4]);
});
