// Load windows are sampled every window, subscribed or not, and encoded for their readers: a state
// that changed while nobody subscribed is in the first window its next subscriber gets, and while
// subscribed every window comes, in sequence, with what changed. Over a real gRPC server and client.
import { monotonicMs } from '../../src/clock';
import { everyInterval } from '../../src/periodic';
import type { PoolLoadState } from '../../src/publication/source';
import { PublicationCounters } from '../../src/publication/stats';
import { WindowPublisher } from '../../src/publication/windows';
import type { KvPoolLoadUpdate } from '../../src/wire/types';
import { testProducer } from '../support/test-source';
import { waitFor } from '../support/waitFor';
import { StreamReader, startTestRelay, subscriber, type TestRelay } from '../transport/helpers';

let relay: TestRelay | undefined;
afterEach(async () => relay?.close());

const loadOf = (used: bigint): PoolLoadState => ({ pools: [{ producer: testProducer(), kvUsedBlocks: used, totalKvBlocks: 100n, kvObservedRanks: 1, kvExpectedRanks: 1 }] });

test('a load plane without subscribers keeps its windows current; its next subscriber gets the latest one', async () => {
  relay = await startTestRelay({ timing: { loadWindowMs: 5 } });
  const windows = (): number => relay!.server.stats().loadUpdatesTotal;
  await waitFor(() => windows() >= 5, 'five windows');
  relay.source.poolLoadState = loadOf(40n);
  const at = windows();
  await waitFor(() => windows() >= at + 2, 'a window sampled since');
  const load = new StreamReader<KvPoolLoadUpdate>(relay.client.subscribeKvPoolLoad(subscriber()));
  const first = await load.next();
  expect(first.pools[0].kvUsedBlocks).toBe(40n);
  expect(first.windowSequence).toBeGreaterThanOrEqual(BigInt(at + 1));

  // Subscribed: every window, in sequence, with what changed.
  relay.source.poolLoadState = loadOf(41n);
  let next = await load.next();
  expect(next.windowSequence).toBe(first.windowSequence + 1n);
  while (next.pools[0].kvUsedBlocks !== 41n) next = await load.next();
  expect((await load.next()).windowSequence).toBe(next.windowSequence + 1n);

  // Gone and back: the windows went on meanwhile.
  load.cancel();
  await waitFor(() => relay!.server.stats().subscribers.load === 0, 'the subscriber gone');
  relay.source.poolLoadState = loadOf(42n);
  const gone = windows();
  await waitFor(() => windows() >= gone + 2, 'windows without a subscriber');
  const again = await new StreamReader<KvPoolLoadUpdate>(relay.client.subscribeKvPoolLoad(subscriber())).next();
  expect(again.pools[0].kvUsedBlocks).toBe(42n);
  expect(again.windowSequence).toBeGreaterThan(next.windowSequence + 1n);
});

describe('WindowPublisher ticks', () => {
  const WINDOW_MS = 50;
  const stops: (() => void)[] = [];
  afterEach(() => stops.splice(0).forEach((stop) => stop()));

  test('on the shared timer of its interval (one wake-up for every task of it); window 1 no sooner than a window after window 0, then one a tick', async () => {
    // Another task of the same interval, first on the shared timer: `inTick` holds until the end of
    // the timer callback that ran it (microtasks run after each timer callback).
    let inTick = false;
    let ticks = 0;
    stops.push(
      everyInterval(WINDOW_MS, () => {
        ticks += 1;
        inTick = true;
        queueMicrotask(() => (inTick = false));
      }),
    );
    const sampled: { at: number; inTick: boolean; tick: number }[] = [];
    const publisher = new WindowPublisher<number>({
      kind: 'load',
      plane: 'test load',
      sample: () => sampled.push({ at: monotonicMs(), inTick, tick: ticks }),
      encode: (w) => Buffer.from(String(w.sequence)),
      windowMs: WINDOW_MS,
      fanoutCapacity: 4,
      counters: new PublicationCounters(),
      onFailure: (err) => {
        throw err;
      },
    });
    stops.push(() => publisher.stop());
    await waitFor(() => sampled.length >= 5, 'four windows after window 0');
    const [zero, ...windows] = sampled;
    expect(zero.inTick).toBe(false); // window 0: at construction
    expect(windows.every((w) => w.inTick)).toBe(true);
    expect(windows[0].at - zero.at).toBeGreaterThanOrEqual(WINDOW_MS);
    // One window a tick, from the first after window 0's window.
    for (let i = 1; i < windows.length; i++) expect(windows[i].tick).toBe(windows[i - 1].tick + 1);
  });
});
