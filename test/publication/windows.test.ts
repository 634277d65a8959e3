// Load windows cost per reader: a plane nobody subscribes to samples no window (its sequence still
// advances every window), and its first subscriber gets the current window with the state as it is
// then; while subscribed, every window is sampled and sent. Over a real gRPC server and client.
import type { PoolLoadState } from '../../src/publication/source';
import type { KvPoolLoadUpdate } from '../../src/wire/types';
import { TestSource, testProducer } from '../support/test-source';
import { waitFor } from '../support/waitFor';
import { StreamReader, startTestRelay, subscriber, type TestRelay } from '../transport/helpers';

/** The pool load of the test source, counting how often the load plane samples it. */
class CountingSource extends TestSource {
  samples = 0;

  override poolLoad(): PoolLoadState {
    this.samples += 1;
    return super.poolLoad();
  }
}

let relay: TestRelay | undefined;
afterEach(async () => relay?.close());

const loadOf = (used: bigint): PoolLoadState => ({ pools: [{ producer: testProducer(), kvUsedBlocks: used, totalKvBlocks: 100n, kvObservedRanks: 1, kvExpectedRanks: 1 }] });

test('a load plane without subscribers samples no window; its first subscriber gets the current window and state', async () => {
  const source = new CountingSource();
  relay = await startTestRelay({ timing: { loadWindowMs: 5 } }, source);
  const windows = (): number => relay!.server.stats().loadUpdatesTotal;
  await waitFor(() => windows() >= 10, 'ten windows');
  // Window 0, at start, only.
  expect(source.samples).toBe(1);

  source.poolLoadState = loadOf(40n);
  const load = new StreamReader<KvPoolLoadUpdate>(relay.client.subscribeKvPoolLoad(subscriber()));
  const first = await load.next();
  expect(first.pools[0].kvUsedBlocks).toBe(40n);
  expect(first.windowSequence).toBeGreaterThanOrEqual(10n);
  expect(first.windowSequence).toBeLessThanOrEqual(BigInt(windows()));

  // Subscribed: every window is sampled, in sequence, and shows what changed.
  source.poolLoadState = loadOf(41n);
  let next = await load.next();
  expect(next.windowSequence).toBe(first.windowSequence + 1n);
  while (next.pools[0].kvUsedBlocks !== 41n) next = await load.next();
  const sampled = source.samples;
  const after = await load.next();
  expect(after.windowSequence).toBe(next.windowSequence + 1n);
  expect(source.samples).toBeGreaterThan(sampled);

  // Gone again: the windows go on unsampled.
  load.cancel();
  await waitFor(() => relay!.server.stats().subscribers.load === 0, 'the subscriber gone');
  const quiet = source.samples;
  const at = windows();
  await waitFor(() => windows() >= at + 10, 'ten more windows');
  expect(source.samples).toBe(quiet);
});

test('a window that cannot be built when a subscriber comes stops the plane, as at a window', async () => {
  const source = new CountingSource();
  relay = await startTestRelay({ timing: { loadWindowMs: 5 } }, source);
  await waitFor(() => relay!.server.stats().loadUpdatesTotal >= 2, 'two windows');
  source.poolLoadError = new Error('aggregate sender dropped');
  const end = await new StreamReader<KvPoolLoadUpdate>(relay.client.subscribeKvPoolLoad(subscriber())).end();
  expect(end.details).toBe('pool load publication stopped');
  await waitFor(() => !relay!.server.serving, 'the transport stopped');
  expect((relay.server.lastError as Error).message).toBe('aggregate sender dropped');
});
