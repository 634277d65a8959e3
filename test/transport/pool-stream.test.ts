// SubscribeKvPool stream content (wire-contract.md §6.2.2, §7, §12.2): chunked snapshot, then
// contiguous deltas, heartbeats only after the complete snapshot, one encoding shared by everyone.
import { SnapshotAssembly } from '../../src/native';
import { FilterUpdateKind } from '../../src/wire/enums';
import { decodeMessage } from '../../src/wire/codec';
import type { FilterUpdate } from '../../src/wire/types';
import { testProducer } from '../support/test-source';
import { StreamReader, rawBytesClient, startTestRelay, subscriber, type TestRelay } from './helpers';
import { waitFor } from '../support/waitFor';

let relay: TestRelay;
afterEach(async () => relay?.close());

test('the heartbeat follows a complete multi-chunk snapshot without advancing the sequence', async () => {
  relay = await startTestRelay({ timing: { poolHeartbeatMs: 1 } });
  const producer = testProducer({ bucketCount: 4 * 524_288 });
  const feed = relay.source.attachPool(producer);
  feed.words[3] = 0x11n;
  feed.words[2_097_151] = 0x22n;
  const stream = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  const assembly = new SnapshotAssembly(producer.ckfFormat!);
  let assembled: ReturnType<SnapshotAssembly['absorb']> = null;
  for (let i = 0; i < 4; i += 1) {
    const chunk = await stream.next(10_000);
    expect(chunk.kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
    expect(chunk.producer).toEqual(producer);
    expect([chunk.baseSequence, chunk.sequence]).toEqual([0n, 0n]);
    assembled = assembly.absorb(chunk.payload);
    expect(assembled === null).toBe(i < 3);
  }
  expect([...assembled!.buckets]).toEqual([3, 2_097_151]);
  const heartbeat = await stream.next();
  expect(heartbeat.kind).toBe(FilterUpdateKind.HEARTBEAT);
  expect(heartbeat.producer).toEqual(producer);
  expect([heartbeat.baseSequence, heartbeat.sequence]).toEqual([0n, 0n]);
  expect(heartbeat.payload.length).toBe(0);
  expect(heartbeat.protocolVersion).toBe(1);
});

test('an idle stream gets one heartbeat per interval with the last delivered sequence; deltas reset the timer', async () => {
  relay = await startTestRelay({ timing: { poolHeartbeatMs: 40 } });
  const producer = testProducer();
  const feed = relay.source.attachPool(producer);
  const stream = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  await stream.next();
  feed.publish([[1, 1n]]);
  expect((await stream.next()).kind).toBe(FilterUpdateKind.DELTA);
  const t0 = Date.now();
  const hb1 = await stream.next();
  const hb2 = await stream.next();
  const elapsed = Date.now() - t0;
  for (const hb of [hb1, hb2]) {
    expect(hb.kind).toBe(FilterUpdateKind.HEARTBEAT);
    expect([hb.baseSequence, hb.sequence]).toEqual([1n, 1n]);
  }
  expect(elapsed).toBeGreaterThanOrEqual(70);
  expect(hb2.sendTsUs).toBeGreaterThan(hb1.sendTsUs);
  // Deltas keep coming faster than the interval: no heartbeat in between.
  for (let i = 0; i < 5; i += 1) {
    feed.publish([[2, BigInt(i + 2)]]);
    const d = await stream.next();
    expect(d.kind).toBe(FilterUpdateKind.DELTA);
    await new Promise((r) => setTimeout(r, 10));
  }
});

test('64 concurrent subscribers receive identical bytes and share one snapshot image', async () => {
  relay = await startTestRelay();
  const producer = testProducer({ bucketCount: 1024 });
  const feed = relay.source.attachPool(producer);
  feed.words[10] = 0xfeedn;
  const clients = Array.from({ length: 4 }, () => rawBytesClient(relay.server.address));
  const streams = Array.from(
    { length: 64 },
    (_, i) => new StreamReader<Buffer>(clients[i % 4].subscribeKvPool({ ...subscriber(`s${i}`), expectedProducer: producer }) as never),
  );
  const snapshots = await Promise.all(streams.map((s) => s.next()));
  expect(feed.attachCount).toBe(1);
  for (let i = 0; i < 5; i += 1) feed.publish([[i, BigInt(i + 100)]]);
  const deltas = await Promise.all(streams.map((s) => s.take(5)));
  for (let i = 1; i < 64; i += 1) {
    expect(snapshots[i].equals(snapshots[0])).toBe(true);
    for (let k = 0; k < 5; k += 1) expect(deltas[i][k].equals(deltas[0][k])).toBe(true);
  }
  const decoded = deltas[0].map((b) => decodeMessage('FilterUpdate', b));
  expect(decoded.map((d) => d.sequence)).toEqual([1n, 2n, 3n, 4n, 5n]);
  expect(decodeMessage('FilterUpdate', snapshots[0]).kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
  for (const c of clients) c.close();
});

test('a later subscriber shares the recent snapshot and catches up through the recent deltas', async () => {
  relay = await startTestRelay();
  const producer = testProducer({ bucketCount: 64 });
  const feed = relay.source.attachPool(producer);
  const first = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber('first'), expectedProducer: producer }));
  await first.next();
  feed.publish([[5, 55n]]);
  feed.publish([[6, 66n]]);
  await first.take(2);
  const second = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber('second'), expectedProducer: producer }));
  const chunk = await second.next();
  expect(chunk.kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
  const followers = await second.take(2);
  expect(followers.map((d) => [d.kind, d.baseSequence, d.sequence])).toEqual([
    [FilterUpdateKind.DELTA, 0n, 1n],
    [FilterUpdateKind.DELTA, 1n, 2n],
  ]);
  expect(feed.attachCount).toBe(1);
});

test('deltas published while the snapshot is being sent follow it in order', async () => {
  relay = await startTestRelay();
  const producer = testProducer({ bucketCount: 2 * 524_288 });
  const feed = relay.source.attachPool(producer);
  const stream = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  await waitFor(() => feed.attached, 'the hub to hold the lease');
  for (let i = 0; i < 3; i += 1) feed.publish([[i, BigInt(i + 1)]]);
  const frames = await stream.take(5, 10_000);
  expect(frames.map((f) => [f.kind, f.sequence])).toEqual([
    [FilterUpdateKind.SNAPSHOT_CHUNK, 0n],
    [FilterUpdateKind.SNAPSHOT_CHUNK, 0n],
    [FilterUpdateKind.DELTA, 1n],
    [FilterUpdateKind.DELTA, 2n],
    [FilterUpdateKind.DELTA, 3n],
  ]);
});

test('an idle hub keeps its lease and follows deltas; the next subscriber starts from the current sequence', async () => {
  relay = await startTestRelay();
  const producer = testProducer();
  const feed = relay.source.attachPool(producer);
  const a = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber('a'), expectedProducer: producer }));
  await a.next();
  a.cancel();
  await waitFor(() => a.ended !== undefined, 'the first stream to end');
  for (let i = 0; i < 100; i += 1) feed.publish([[i % 16, BigInt(i + 1)]]);
  expect(feed.attached).toBe(true);
  const b = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber('b'), expectedProducer: producer }));
  const chunk = await b.next();
  expect(chunk.sequence).toBe(100n);
  feed.publish([[0, 7n]]);
  const d = await b.next();
  expect([d.baseSequence, d.sequence]).toEqual([100n, 101n]);
});
