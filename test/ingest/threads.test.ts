// Ingest threads (limits.ingestThreads): engine workers' subscriptions run on worker threads over
// real ZMQ sockets, their decoded bursts handed to the main thread in a ring of shared memory (or a
// transferred buffer when it has no room). Order
// per rank across bursts and threads, a thread's death (reset, counted, restarted, replayed), the
// bounded hand-off, and the pure parts (burst packing, the shard hash).
import type { SimEvent } from '../../src/sim/encode';
import { SimulatedEngine } from '../../src/sim/engine';
import { burstBytes, FlowCounter, HandoffBuilder, HandoffRing, readHandoff, unpackBurst } from '../../src/ingest/threads/handoff';
import { threadOf } from '../../src/ingest/threads/shard';
import { IngestThreads, type IngestThreadsOptions } from '../../src/ingest/threads/threads';
import type { KvEventEndpointConfig, KvEventSubscription, PackedEngineEvents } from '../../src/ingest/types';
import { StatsBoard } from '../../src/ingest/stats-board';
import { ACTOR_MAILBOX_CAPACITY, INGEST_HANDOFF_MAX_MESSAGES, INGEST_MESSAGES_PER_TURN } from '../../src/config/defaults';
import { BLOCK_SIZE } from '../support/ingest-harness';
import * as path from 'path';
import type { PeerHostCall, PeerHostControl } from '../support/peer-host';
import { RecordingSink, type RecordedBatch } from '../support/recording-sink';
import { waitFor } from '../support/waitFor';

const DEADLINE_MS = 30_000;

function config(workerId: bigint, engine: SimulatedEngine): KvEventEndpointConfig {
  return {
    workerId,
    dpSize: engine.dpSize,
    dpStartRank: engine.dpStartRank,
    endpoint: engine.pubEndpoint,
    replayEndpoint: engine.replayEndpoint,
    topic: '',
    mode: 'connect',
    kvBlockSize: BLOCK_SIZE,
    eagle: false,
  };
}

/** A store of one block per message, each a child of the one before (the pool would refuse a hole). */
/** `a` publishes 400 stores at once while `b` publishes `steady` stores 20 ms apart (the fairness cases' load). */
async function floodBesideSteady(a: SimulatedEngine, b: SimulatedEngine, steady: number): Promise<void> {
  const flood: Promise<bigint>[] = [];
  for (let n = 0; n < 400; n++) flood.push(a.publish(store(n)));
  for (let n = 0; n < steady; n++) {
    await b.publish(store(n));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await Promise.all(flood);
}

function store(n: number): SimEvent[] {
  const hash = BigInt(n + 1);
  return [{ type: 'BlockStored', blockHashes: [hash], parentBlockHash: n === 0 ? null : hash - 1n, tokenIds: [n, n + 1, n + 2, n + 3], blockSize: BLOCK_SIZE }];
}

interface Run {
  threads: IngestThreads;
  engines: SimulatedEngine[];
  subs: KvEventSubscription[];
  errors: { obj: object; msg: string }[];
}
let run: Run | undefined;
afterEach(async () => {
  if (!run) return;
  await run.threads.close();
  await Promise.all(run.engines.map((e) => e.stop()));
  run = undefined;
});

async function start(workerIds: bigint[], sink: RecordingSink, options: Partial<IngestThreadsOptions> = {}, engine: Partial<ConstructorParameters<typeof SimulatedEngine>[0]> = {}): Promise<Run> {
  const errors: Run['errors'] = [];
  const logger = { warn: () => undefined, error: (obj: object, msg: string) => errors.push({ obj, msg }) };
  const threads = new IngestThreads({ threads: 2, logger, ...options });
  const engines = await Promise.all(workerIds.map(() => new SimulatedEngine({ http: false, ...engine }).start()));
  run = { threads, engines, subs: [], errors };
  for (const [i, id] of workerIds.entries()) {
    const sub = threads.subscribe(config(id, engines[i]), sink);
    run.subs.push(sub);
    await sub.start();
  }
  await Promise.all(engines.map((e) => e.waitForSubscribers()));
  return run;
}

test('the shard hash is stable, in range, and spreads sequential and even worker ids', () => {
  for (const threads of [1, 2, 3, 8]) {
    const seen = new Set<number>();
    for (let id = 0n; id < 64n; id++) {
      const t = threadOf(id * 2n, threads);
      expect(t).toBe(threadOf(id * 2n, threads));
      expect(t >= 0 && t < threads).toBe(true);
      seen.add(t);
    }
    expect(seen.size).toBe(threads);
  }
  expect(threadOf(0xffff_ffff_ffff_ffffn, 7)).toBeLessThan(7);
});

test('the bursts of a turn pack into one transferable buffer and read back the same', () => {
  const a: PackedEngineEvents = {
    workerId: 0xffff_ffff_ffff_fffen,
    meta: Uint32Array.from([1, 2, 3, 4, 5, 6, 7]),
    words: BigUint64Array.from([1n, 0xffff_ffff_ffff_ffffn, 3n]),
    messages: 2,
    sequences: BigUint64Array.from([10n, 11n]),
    messageInfo: Uint32Array.from([0, 4, 1, 7]),
    droppedBlockSize: 3,
    receivedAtMs: 86_400_123.456, // the clock's sub-millisecond part crosses too
  };
  const b: PackedEngineEvents = { ...a, workerId: 5n, meta: Uint32Array.from([9]), messages: 1, sequences: BigUint64Array.from([4n]), messageInfo: Uint32Array.from([2, 1]), droppedBlockSize: 0, receivedAtMs: 1 };
  const builder = new HandoffBuilder();
  builder.add(1, a, 6);
  builder.add(2, b, 1);
  const h = builder.take();
  expect(builder.isEmpty).toBe(true);
  expect(burstBytes(a) % 8).toBe(0); // the next burst's 8-byte arrays stay aligned
  expect({ messages: h.messages, blocks: h.blocks, ids: h.bursts.map((x) => x.id) }).toEqual({ messages: 3, blocks: 7, ids: [1, 2] });
  expect(h.buffer).toBeInstanceOf(ArrayBuffer); // no ring: a buffer of its own
  const own = h.buffer as ArrayBuffer;
  expect({ base: h.base, length: h.length }).toEqual({ base: 0, length: own.byteLength });
  const moved = structuredClone(own, { transfer: [own] });
  expect(own.byteLength).toBe(0); // moved, not copied
  const read = readHandoff(moved);
  expect({ messages: read.messages, blocks: read.blocks }).toEqual({ messages: 3, blocks: 7 });
  expect(read.bursts.map((x) => [x.id, x.workerId])).toEqual([[1, a.workerId], [2, 5n]]);
  expect(unpackBurst(moved, read.bursts[0])).toEqual(a);
  expect(unpackBurst(moved, read.bursts[1])).toEqual(b);
  expect(readHandoff(structuredClone(builder.take().buffer as ArrayBuffer))).toMatchObject({ bursts: [], messages: 0 });

  // Into a ring, after a hand-off already there: read back from its region, as the main thread does.
  const ring = new HandoffRing(4096);
  ring.posted(0, 64);
  builder.add(1, a, 6);
  builder.add(2, b, 1);
  const inRing = builder.take(ring);
  expect({ buffer: inRing.buffer, base: inRing.base, length: inRing.length }).toEqual({ buffer: ring.data, base: 64, length: h.length });
  const mainSide = new HandoffRing({ data: ring.data, control: ring.control });
  const fromRing = readHandoff(mainSide.data, inRing.base, inRing.length);
  expect({ messages: fromRing.messages, blocks: fromRing.blocks }).toEqual({ messages: 3, blocks: 7 });
  expect(unpackBurst(mainSide.data, fromRing.bursts[0])).toEqual(a);
  expect(unpackBurst(mainSide.data, fromRing.bursts[1])).toEqual(b);
  // No room left before the unread one at 0: a buffer of its own again.
  ring.posted(inRing.base, 4096 - 64 - 8);
  builder.add(1, a, 6);
  const outside = builder.take(ring);
  expect(outside.buffer).toBeInstanceOf(ArrayBuffer);
  expect(unpackBurst(outside.buffer, readHandoff(outside.buffer).bursts[0])).toEqual(a);
});

test('a subscription\'s counters, counted on one side of a board, read the same on the other (no message per change)', () => {
  const ranks = { workerId: 0xffff_ffff_ffff_fffen, dpStartRank: 2, dpSize: 3 };
  const thread = new StatsBoard(ranks);
  const main = new StatsBoard(ranks, thread.shared);
  expect(main.read()).toEqual([]); // nothing counted yet
  expect(thread.record(1)).toBeUndefined(); // not a rank of the worker
  expect(thread.record(5)).toBeUndefined();
  const r2 = thread.record(2)!;
  const r4 = thread.record(4)!;
  r2.events += 3;
  r2.blocks = 2 ** 52 + 1;
  r2.gaps += 1;
  r2.connections = 2;
  r2.lastSequence = 0xffff_ffff_ffff_ffffn;
  r4.malformed += 1;
  r4.droppedBlockSize += 2;
  r4.mismatchedBlockSize = 32;
  r4.lastSequence = 0n;
  r4.lastSequence = null;
  const zero = { malformed: 0, rejectedRanks: 0, overflows: 0, outOfOrder: 0, refusedPeers: 0, gaps: 0, replays: 0, resets: 0, ignored: 0, droppedBlockSize: 0, mismatchedBlockSize: 0 };
  expect(main.read()).toEqual([
    { ...zero, source: { workerId: ranks.workerId, dpRank: 2 }, events: 3, blocks: 2 ** 52 + 1, gaps: 1, connections: 2, lastSequence: 0xffff_ffff_ffff_ffffn },
    { ...zero, source: { workerId: ranks.workerId, dpRank: 4 }, events: 0, blocks: 0, malformed: 1, droppedBlockSize: 2, mismatchedBlockSize: 32, connections: 0, lastSequence: null },
  ]);
  // The live record reads what the board holds, as a counter is counted with +=.
  expect({ events: r2.events, lastSequence: r2.lastSequence, source: r2.source }).toEqual({ events: 3, lastSequence: 0xffff_ffff_ffff_ffffn, source: { workerId: ranks.workerId, dpRank: 2 } });
});

test("a stats board's reader gets the same object for a record that did not change, a new one for one that did", () => {
  const ranks = { workerId: 9n, dpStartRank: 0, dpSize: 3 };
  const thread = new StatsBoard(ranks);
  const main = new StatsBoard(ranks, thread.shared);
  const [r0, r1] = [thread.record(0)!, thread.record(1)!];
  r0.events += 1;
  // All ones: a NaN as a double, so compared as doubles the record would never read as unchanged.
  r1.lastSequence = 0xffff_ffff_ffff_ffffn;
  const first = main.read();
  const second = main.read();
  expect(second).toHaveLength(2);
  expect(second[0]).toBe(first[0]);
  expect(second[1]).toBe(first[1]);
  r1.connections = 1;
  const third = main.read();
  expect(third[0]).toBe(first[0]);
  expect(third[1]).not.toBe(first[1]);
  expect(third[1]).toMatchObject({ connections: 1, lastSequence: 0xffff_ffff_ffff_ffffn });
  // A rank taken later shows up; the others stay the objects they were.
  thread.record(2)!.blocks += 4;
  const fourth = main.read();
  expect(fourth.map((s) => s.source.dpRank)).toEqual([0, 1, 2]);
  expect(fourth[0]).toBe(first[0]);
  expect(fourth[1]).toBe(third[1]);
  expect(fourth[2]).toMatchObject({ blocks: 4 });
  // The list itself is handed out again while nothing changed, and a new one once anything did.
  expect(main.read()).toBe(fourth);
  const unchanged = main.read();
  expect(unchanged).toBe(fourth);
  thread.record(2)!.blocks += 1;
  const fifth = main.read();
  expect(fifth).not.toBe(fourth);
  expect(fifth[2]).toMatchObject({ blocks: 5 });
  expect(main.read()).toBe(fifth);
  // A board with no record taken yet hands out an empty list, then one with the first record.
  const fresh = new StatsBoard(ranks);
  const reader = new StatsBoard(ranks, fresh.shared);
  expect(reader.read()).toEqual([]);
  fresh.record(1)!.events += 1;
  expect(reader.read()).toEqual([expect.objectContaining({ events: 1, source: { workerId: 9n, dpRank: 1 } })]);
});

test('the hand-off ring places a hand-off only where nothing unread lies, wraps, and frees what the main thread read', () => {
  const thread = new HandoffRing(64);
  const main = new HandoffRing({ data: thread.data, control: thread.control });
  expect(thread.place(16)).toBe(0);
  thread.posted(0, 16);
  expect(thread.place(48)).toBeUndefined(); // would fill the ring: head and tail would meet
  expect(thread.place(40)).toBe(16);
  thread.posted(16, 40);
  expect(thread.place(8)).toBeUndefined(); // no room at the end, and the start is unread
  main.read(16);
  expect(thread.place(16)).toBeUndefined(); // wrapped, it would reach the unread one at 16
  expect(thread.place(8)).toBe(0);
  thread.posted(0, 8);
  expect(thread.place(8)).toBeUndefined(); // 8..16 would meet the tail
  main.read(56);
  expect(thread.place(48)).toBeUndefined(); // 8..56 would meet the tail at 56
  expect(thread.place(40)).toBe(8);
  thread.posted(8, 40);
  main.read(8);
  main.read(48); // all read: the head at 48 and the tail meet
  expect(thread.place(8)).toBe(48);
  expect(thread.place(16)).toBe(0); // past the end: wrapped, everything before 48 is free
  expect(thread.place(48)).toBeUndefined();
});

test('the hand-off counter bounds a subscription\'s messages, blocks and bytes in flight to its share, and always takes one burst', () => {
  const c = new FlowCounter();
  const bounds = { maxMessages: 4, maxBlocks: 50, maxBytes: 100, waitMs: 0 };
  const size = (messages: number, blocks: number, bytes: number) => ({ messages, blocks, bytes });
  const one = jest.fn(() => 1);
  const two = () => 2;
  expect(c.fits(size(9, 90, 1_000), bounds, one)).toBe(true); // beyond every bound, but nothing in flight
  // Nothing in flight takes anything, without counting the thread's other subscriptions (a walk over all of them per burst).
  expect(one).not.toHaveBeenCalled();
  c.add(size(9, 90, 1_000));
  expect(c.fits(size(1, 0, 0), bounds, one)).toBe(false);
  c.taken(size(9, 90, 1_000));
  c.add(size(2, 20, 60));
  expect(c.fits(size(2, 20, 40), bounds, one)).toBe(true);
  expect(c.fits(size(2, 20, 40), bounds, two)).toBe(false); // half the bounds each when two subscriptions have bursts in flight
  c.add(size(2, 20, 40));
  expect(c.fits(size(1, 0, 0), bounds, one)).toBe(false); // 5 messages
  c.taken(size(2, 20, 40));
  expect(c.fits(size(1, 31, 0), bounds, one)).toBe(false); // 51 blocks
  expect(c.fits(size(1, 0, 41), bounds, one)).toBe(false); // 101 bytes
  expect(c.fits(size(2, 30, 40), bounds, one)).toBe(true);
  expect(c.messages).toBe(2);
});

test('several workers over two threads: every rank in order across bursts, counters from the threads', async () => {
  const sink = new RecordingSink();
  const ids = [7n, 8n, 9n, 10n];
  const r = await start(ids, sink, {}, { dpSize: 2 });
  // Both threads are used, and each worker's ranks live on its one thread.
  expect(new Set(ids.map((id) => threadOf(id, 2))).size).toBe(2);
  const perRank = 40;
  for (let n = 0; n < perRank; n++) {
    await Promise.all(r.engines.flatMap((e) => [e.publish(store(n), { rank: 0 }), e.publish(store(n), { rank: 1 })]));
  }
  await waitFor(() => sink.batches.length === ids.length * 2 * perRank, 'every batch', DEADLINE_MS);
  const expected = Array.from({ length: perRank }, (_, n) => BigInt(n));
  for (const id of ids) {
    for (const dpRank of [0, 1]) {
      const mine = sink.batches.filter((b) => b.source.workerId === id && b.source.dpRank === dpRank);
      expect(mine.map((b) => b.sequence)).toEqual(expected);
      expect(mine.map((b) => b.events[0].kind === 'stored' && b.events[0].blockHashes[0])).toEqual(expected.map((n) => n + 1n));
    }
  }
  expect(sink.resets).toEqual([]);
  // Fewer hand-offs than messages: bursts still batch on a thread.
  expect(sink.bursts).toBeLessThanOrEqual(sink.batches.length);
  await waitFor(() => r.subs.every((s) => s.stats().every((st) => st.events === perRank && st.lastSequence === BigInt(perRank - 1))), 'the threads\' counters', DEADLINE_MS);
  expect(r.subs[0].stats().map((s) => s.source)).toEqual([{ workerId: 7n, dpRank: 0 }, { workerId: 7n, dpRank: 1 }]);
  expect(r.threads.restarts).toBe(0);
});

test('a thread that dies of an uncaught error: its sources reset and counted, the thread restarted, the engines replay into the sink', async () => {
  const sink = new RecordingSink();
  const ids = [7n, 8n, 9n, 10n];
  const r = await start(ids, sink, { restartDelayMs: 50 });
  for (let n = 0; n < 3; n++) await Promise.all(r.engines.map((e) => e.publish(store(n))));
  await waitFor(() => sink.batches.length === 3 * ids.length, 'the first batches', DEADLINE_MS);
  await waitFor(() => r.subs.every((s) => s.stats()[0]?.events === 3), 'the first counters', DEADLINE_MS);

  const victim = 7n;
  const onIt = ids.filter((id) => threadOf(id, 2) === threadOf(victim, 2));
  r.threads.crash(victim);
  await waitFor(() => sink.resets.length === onIt.length, 'the dead thread\'s resets', DEADLINE_MS);
  expect(sink.resets.map((x) => x.reason)).toEqual(onIt.map(() => 'thread'));
  expect(new Set(sink.resets.map((x) => x.source.workerId))).toEqual(new Set(onIt));
  expect(r.threads.restarts).toBe(1);
  expect(r.errors.map((e) => e.msg)).toEqual(['ingest thread failed', 'ingest thread died: its sources are reset and it is started again']);
  expect(String((r.errors[0].obj as { err: string }).err)).toMatch(/crash requested/);

  // The restarted thread resubscribes; each engine's replay from 0 refills its reset source, and
  // later live batches follow in order.
  // Published once the new connection asked for its replay: a live message the subscriber reads
  // before its handshake event starts the stream there, without a replay (see the Status notes).
  await waitFor(() => onIt.every((id) => r.subs[ids.indexOf(id)].stats()[0]?.replays === 2), 'the restarted thread\'s replay requests', DEADLINE_MS);
  await Promise.all(r.engines.map((e) => e.publish(store(3))));
  await waitFor(() => onIt.every((id) => sink.batches.filter((b) => b.source.workerId === id).length === 3 + 4), 'the replayed and new batches', DEADLINE_MS);
  // The surviving thread's workers get their fourth batch on their own pace, not the restarted one's.
  const others = ids.filter((x) => !onIt.includes(x));
  await waitFor(() => others.every((id) => sink.batches.filter((b) => b.source.workerId === id).length === 4), 'the other thread\'s fourth batches', DEADLINE_MS);
  for (const id of onIt) {
    const after = sink.calls.slice(sink.calls.findIndex((c) => c.kind === 'reset' && c.source.workerId === id) + 1);
    const seqs = after.flatMap((c) => (c.kind === 'batch' && c.batch.source.workerId === id ? [c.batch.sequence] : []));
    expect(seqs).toEqual([0n, 1n, 2n, 3n]);
  }
  for (const id of others) {
    expect(sink.batches.filter((b) => b.source.workerId === id).map((b) => b.sequence)).toEqual([0n, 1n, 2n, 3n]);
  }
  // Counters never go backwards: the dead thread's counts are kept, its reset counted.
  for (const id of onIt) {
    const sub = r.subs[ids.indexOf(id)];
    await waitFor(() => sub.stats()[0].events === 3 + 4, 'the counters across the restart', DEADLINE_MS);
    expect(sub.stats()[0]).toMatchObject({ resets: 1, replays: 2, connections: 1, lastSequence: 3n });
  }
  // Read again with nothing new: the very list (the dead thread's counts are not merged anew per
  // read); one more message makes a new list that counts it.
  const sub = r.subs[ids.indexOf(victim)];
  const list = sub.stats();
  expect(sub.stats()).toBe(list);
  await r.engines[ids.indexOf(victim)].publish(store(4));
  await waitFor(() => sub.stats()[0].events === 3 + 5, 'one more event counted', DEADLINE_MS);
  expect(sub.stats()).not.toBe(list);
  expect(list[0].events).toBe(3 + 4);
});

/** 64 messages (at least 4 bursts of 16) leave the engine, then the main thread takes nothing for `ms`. */
async function stallMainThread(engine: SimulatedEngine, ms: number): Promise<void> {
  const sends: Promise<bigint>[] = [];
  for (let n = 1; n <= 64; n++) sends.push(engine.publish(store(n)));
  await Promise.all(sends);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

test('a small hand-off ring: it wraps again and again, hand-offs that find no room go in buffers of their own, and every batch arrives whole and in order', async () => {
  const sink = new RecordingSink();
  // A ring of 4 KiB: a few hand-offs of these 1-block messages fill it.
  const r = await start([7n, 8n], sink, { handoff: { maxBytes: 1024, waitMs: 30_000 } }, { dpSize: 2 });
  const perRank = 600;
  for (let n = 0; n < perRank; n += 50) {
    const round = Array.from({ length: 50 }, (_, k) => n + k);
    await Promise.all(r.engines.flatMap((e) => round.flatMap((m) => [e.publish(store(m), { rank: 0 }), e.publish(store(m), { rank: 1 })])));
  }
  await waitFor(() => sink.batches.length === 2 * 2 * perRank, 'every batch', DEADLINE_MS);
  const expected = Array.from({ length: perRank }, (_, n) => BigInt(n));
  // Every source stored the same tokens at each n: one token hash per n, the same on all four.
  const tokenHashes: unknown[][] = [];
  for (const id of [7n, 8n]) {
    for (const dpRank of [0, 1]) {
      const mine = sink.batches.filter((b) => b.source.workerId === id && b.source.dpRank === dpRank);
      expect(mine.map((b) => b.sequence)).toEqual(expected);
      const stored = mine.map((b) => (b.events.length === 1 && b.events[0].kind === 'stored' ? b.events[0] : undefined));
      expect(stored.map((e) => [e?.parentHash, e?.blockHashes])).toEqual(expected.map((n) => [n === 0n ? null : n, [n + 1n]]));
      tokenHashes.push(stored.map((e) => e?.tokensHashes));
    }
  }
  for (const other of tokenHashes.slice(1)) expect(other).toEqual(tokenHashes[0]);
  expect(new Set(tokenHashes[0].map((t) => String(t))).size).toBe(perRank);
  expect(sink.resets).toEqual([]);
  expect(r.threads.restarts).toBe(0);
});

test('a main thread that is slow to take bursts holds the ingest thread back (back-pressure): nothing lost, order kept', async () => {
  const sink = new RecordingSink();
  const r = await start([7n], sink, { handoff: { maxMessages: 1, waitMs: 30_000 } });
  const engine = r.engines[0];
  await engine.publish(store(0));
  await waitFor(() => sink.batches.length === 1, 'the first batch', DEADLINE_MS);
  await stallMainThread(engine, 500);
  await waitFor(() => sink.batches.length === 65, 'every batch', DEADLINE_MS);
  expect(sink.sequences()).toEqual(Array.from({ length: 65 }, (_, n) => BigInt(n)));
  expect(sink.resets).toEqual([]);
});

/** The sequences of rank 0 delivered after the sink's last reset (what the source holds now). */
function sinceLastReset(sink: RecordingSink): bigint[] {
  const from = sink.calls.map((c) => c.kind).lastIndexOf('reset') + 1;
  return sink.calls.slice(from).flatMap((c) => (c.kind === 'batch' ? [c.batch.sequence] : []));
}

test('a main thread that takes nothing for longer than the hand-off wait: the hand-off is dropped, its source reset (overflow) and replayed from 0, then ingest goes on', async () => {
  const sink = new RecordingSink();
  const r = await start([7n], sink, { handoff: { maxMessages: 1, waitMs: 200 } });
  const engine = r.engines[0];
  await engine.publish(store(0));
  await waitFor(() => sink.batches.length === 1, 'the first batch', DEADLINE_MS);
  // The ingest thread receives and decodes them meanwhile, but may hand only one burst over.
  await stallMainThread(engine, 3_000);
  await waitFor(() => sink.resets.length > 0, 'the overflow reset', DEADLINE_MS);
  expect(sink.resets[0]).toEqual({ source: { workerId: 7n, dpRank: 0 }, reason: 'overflow' });
  await engine.publish(store(65));
  // The relay lost those batches, not the engine: its replay from 0 refills the source.
  const all = Array.from({ length: 66 }, (_, n) => BigInt(n));
  await waitFor(() => sinceLastReset(sink).length === 66, 'the source refilled by the replay', DEADLINE_MS);
  expect(sinceLastReset(sink)).toEqual(all);
  expect(sink.resets.every((x) => x.reason === 'overflow')).toBe(true);
  await waitFor(() => r.subs[0].stats()[0].overflows > 0 && r.subs[0].stats()[0].replays >= 2, 'the overflow and replay counters', DEADLINE_MS);
  const stats = r.subs[0].stats()[0];
  expect(stats.resets).toBe(sink.resets.length);
  expect(stats.resets).toBeLessThanOrEqual(stats.overflows);
});

test('a burst holds its hand-off room until the sink applied it: a pool that does not finish holds the thread back', async () => {
  let apply!: () => void;
  const applied = new Promise<void>((resolve) => (apply = resolve));
  class SlowPool extends RecordingSink {
    override events(b: PackedEngineEvents): Promise<void> | void {
      super.events(b);
      if (this.bursts === 1) return applied; // the first burst is not applied until the test says so
    }
  }
  const sink = new SlowPool();
  const r = await start([7n], sink, { handoff: { maxMessages: 1, waitMs: 300 } });
  const engine = r.engines[0];
  await engine.publish(store(0));
  await waitFor(() => sink.batches.length === 1, 'the first batch', DEADLINE_MS);
  // The main thread takes every hand-off at once, but the first one's room stays taken until it is
  // applied: the thread waits, then gives the next burst up (freed on receipt, it would just pass).
  await engine.publish(store(1));
  await waitFor(() => sink.resets.length >= 1, 'the burst given up behind the unapplied one', DEADLINE_MS);
  expect(sink.resets[0]).toEqual({ source: { workerId: 7n, dpRank: 0 }, reason: 'overflow' });
  expect(sink.batches.map((b) => b.sequence)).toEqual([0n]);
  apply();
  await engine.publish(store(2));
  await waitFor(() => sinceLastReset(sink).at(-1) === 2n, 'the batch after the pool caught up', DEADLINE_MS);
  expect(sinceLastReset(sink)).toEqual([0n, 1n, 2n]); // refilled by the replay from 0
});

test('the threads hold at most half of one pool mailbox in messages: a flood of small messages waits for the pool instead of overflowing it', async () => {
  // Bounded in bursts (32 of up to 16 messages per thread) the hand-off let 512 small messages per
  // thread reach a pool whose mailbox holds 256 batches while it was busy (e.g. clearing a source).
  let apply!: () => void;
  const applied = new Promise<void>((resolve) => (apply = resolve));
  class BusyPool extends RecordingSink {
    override events(b: PackedEngineEvents): Promise<void> {
      super.events(b);
      return applied;
    }
  }
  const sink = new BusyPool();
  const r = await start([7n], sink, { handoff: { waitMs: 30_000 } });
  const share = INGEST_HANDOFF_MAX_MESSAGES / 2;
  expect(share).toBeLessThanOrEqual(ACTOR_MAILBOX_CAPACITY / 4);
  const sends: Promise<bigint>[] = [];
  for (let n = 0; n < 600; n++) sends.push(r.engines[0].publish(store(n)));
  await Promise.all(sends);
  await waitFor(() => sink.batches.length > 0, 'the first hand-offs', DEADLINE_MS);
  // Time for the thread to read and hand off far more than its share, had it room for them.
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(sink.batches.length).toBeLessThanOrEqual(share);
  apply();
  await waitFor(() => sink.batches.length === 600, 'every batch once the pool applies', DEADLINE_MS);
  expect(sink.sequences()).toEqual(Array.from({ length: 600 }, (_, n) => BigInt(n)));
  expect(sink.resets).toEqual([]);
});

test('one engine whose pool does not keep up hurts only itself: another engine on the same thread loses nothing (issue 26 item 5)', async () => {
  // Engine A's pool applies nothing until the end; B's applies at once. With one count per thread,
  // A's bursts filled the thread's bound, the thread waited, then dropped the hand-off with B's
  // bursts in it and reset B.
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  class TwoPools extends RecordingSink {
    override events(b: PackedEngineEvents): Promise<void> | void {
      super.events(b);
      if (b.workerId === 7n) return released;
    }
  }
  const sink = new TwoPools();
  const r = await start([7n, 8n], sink, { threads: 1, handoff: { waitMs: 300 } });
  const [a, b] = r.engines;
  const steady = 60;
  await floodBesideSteady(a, b, steady);
  await waitFor(() => sink.batches.filter((x) => x.source.workerId === 8n).length === steady, "every batch of B", DEADLINE_MS);
  const ofB = sink.batches.filter((x) => x.source.workerId === 8n).map((x) => x.sequence);
  expect(ofB).toEqual(Array.from({ length: steady }, (_, n) => BigInt(n)));
  expect(sink.resets.filter((x) => x.source.workerId === 8n)).toEqual([]);
  // A waited for its pool past the wait: its own bursts went, and it was reset (and replayed).
  await waitFor(() => sink.resets.some((x) => x.source.workerId === 7n && x.reason === 'overflow'), 'the overflow of A', DEADLINE_MS);
  release();
  await waitFor(() => r.subs[1].stats()[0]?.events === steady, "B's counters", DEADLINE_MS);
  expect(r.subs[1].stats()[0]).toMatchObject({ overflows: 0, resets: 0, gaps: 0 });
});

test('a saturated socket\'s bursts cut at the per-turn bound join one hand-off, up to half the bound; order kept', async () => {
  /** Messages per hand-off: a hand-off's bursts reach the sink in one synchronous run. */
  class HandoffSink extends RecordingSink {
    readonly handoffs: number[] = [];
    private open = false;
    override events(b: PackedEngineEvents): void {
      super.events(b);
      if (!this.open) {
        this.open = true;
        this.handoffs.push(0);
        queueMicrotask(() => (this.open = false));
      }
      this.handoffs[this.handoffs.length - 1] += b.messages;
    }
  }
  const sink = new HandoffSink();
  // No replay: live messages held behind the first connect's replay would drain from its backlog.
  const r = await start([7n], sink, { threads: 1 }, { replay: false });
  const messages = 2_000;
  const sends: Promise<bigint>[] = [];
  for (let n = 0; n < messages; n++) sends.push(r.engines[0].publish(store(n)));
  await Promise.all(sends);
  await waitFor(() => sink.batches.length === messages, 'every batch', DEADLINE_MS);
  expect(sink.sequences()).toEqual(Array.from({ length: messages }, (_, n) => BigInt(n)));
  expect(sink.resets).toEqual([]);
  // One turn reads at most INGEST_MESSAGES_PER_TURN of the socket: more in one hand-off means a cut
  // burst waited for the next one.
  expect(Math.max(...sink.handoffs)).toBeGreaterThan(INGEST_MESSAGES_PER_TURN);
  expect(Math.max(...sink.handoffs)).toBeLessThanOrEqual(INGEST_HANDOFF_MAX_MESSAGES);
  await waitFor(() => r.subs[0].stats()[0]?.events === messages, 'the thread\'s counters', DEADLINE_MS);
  expect(r.subs[0].stats()[0]).toMatchObject({ events: messages, blocks: messages, gaps: 0, resets: 0, lastSequence: BigInt(messages - 1) });
});

test('a bound subscription keeps its ports across a thread restart', async () => {
  const sink = new RecordingSink();
  const errors: object[] = [];
  const threads = new IngestThreads({ threads: 1, logger: { warn: () => undefined, error: (obj) => errors.push(obj) }, restartDelayMs: 50 });
  run = { threads, engines: [], subs: [], errors: [] };
  const sub = threads.subscribe({ workerId: 3n, dpSize: 2, dpStartRank: 0, endpoint: 'tcp://127.0.0.1:0', topic: '', mode: 'bind', allowAnyPeer: true, kvBlockSize: BLOCK_SIZE, eagle: false }, sink);
  await sub.start();
  const bound = sub.endpoints();
  expect(bound).toHaveLength(2);
  expect(bound.every((e) => /:\d+$/.test(e) && !e.endsWith(':0'))).toBe(true);
  const engine = await new SimulatedEngine({ http: false, mode: 'connect', connectTo: bound, dpSize: 2, replay: false }).start();
  run.engines.push(engine);
  await engine.waitForSubscribers();
  threads.crash(3n);
  await waitFor(() => threads.restarts === 1 && sub.stats().length === 2 && sub.stats().every((s) => s.connections === 1), 'the restarted thread\'s connections', DEADLINE_MS);
  expect(sub.endpoints()).toEqual(bound);
  await engine.publish(store(0), { rank: 1 });
  await waitFor(() => sink.batches.length === 1, 'a batch on the rebound port', DEADLINE_MS);
  expect(sink.batches[0].source).toEqual({ workerId: 3n, dpRank: 1 });
});

/**
 * Threads running test/support/peer-host.ts: every call of its sinks, as the threads post them. Every
 * sink is on thread 1; worker ids by the thread (of 2) they shard to: 2 and 4 to thread 0, 1 and 3 to 1.
 */
async function startHosted(hosted: { workerId: bigint; sink: number }[], options: Partial<IngestThreadsOptions> = {}) {
  const calls: PeerHostCall[] = [];
  const died: number[] = [];
  const sink = new RecordingSink(); // the main thread's: nothing may arrive there
  const errors: Run['errors'] = [];
  const threads = new IngestThreads({
    threads: 2,
    logger: { warn: () => undefined, error: (obj: object, msg: string) => errors.push({ obj, msg }) },
    host: { module: path.join(__dirname, '..', 'support', 'peer-host'), receive: (_t, m) => calls.push(m as PeerHostCall), died: (thread) => died.push(thread) },
    ...options,
  });
  const engines = await Promise.all(hosted.map(() => new SimulatedEngine({ http: false }).start()));
  run = { threads, engines, subs: [], errors };
  threads.sendHost(1, { release: 0 } satisfies PeerHostControl);
  for (const [i, h] of hosted.entries()) {
    const sub = threads.subscribe(config(h.workerId, engines[i]), sink, {}, { thread: 1, sink: h.sink });
    run.subs.push(sub);
    await sub.start();
  }
  await Promise.all(engines.map((e) => e.waitForSubscribers()));
  const batches = (workerId: bigint): RecordedBatch[] => calls.flatMap((c) => (c.kind === 'batch' && c.batch.source.workerId === workerId ? [c.batch] : []));
  const resets = (workerId: bigint) => calls.filter((c) => c.kind === 'reset' && c.source.workerId === workerId);
  return { run, calls, died, sink, batches, resets };
}

// The second: a thread's share of the hand-off bounds of 2 KiB, which the hosted bursts fill again and again.
test.each([{}, { maxBytes: 2048 }])('subscriptions of workers that shard to either thread, hosted by one sink: their bursts are all applied on the sink\'s thread, in order; nothing reaches the main thread (hand-off bounds %o)', async (handoff) => {
  expect([2n, 4n, 1n].map((w) => threadOf(w, 2))).toEqual([0, 0, 1]);
  const h = await startHosted(
    [
      { workerId: 2n, sink: 5 },
      { workerId: 4n, sink: 5 },
      { workerId: 1n, sink: 5 },
    ],
    { handoff },
  );
  const n = 200;
  const sends: Promise<bigint>[] = [];
  for (let i = 0; i < n; i++) for (const e of h.run.engines) sends.push(e.publish(store(i)));
  await Promise.all(sends);
  await waitFor(() => [2n, 4n, 1n].every((w) => h.batches(w).length === n), 'every batch of the three workers at the sink', DEADLINE_MS);
  for (const w of [2n, 4n, 1n]) expect(h.batches(w).map((b) => b.sequence)).toEqual(Array.from({ length: n }, (_, i) => BigInt(i)));
  // One writer: every call ran on the sink's thread, also those of the two workers that shard to the other.
  expect(new Set(h.calls.map((c) => c.threadId)).size).toBe(1);
  expect(h.calls.every((c) => c.sink === 5)).toBe(true);
  expect(h.sink.calls).toEqual([]);
  expect(h.run.subs[0].stats()[0]).toMatchObject({ events: n, overflows: 0, resets: 0 });
});

test('a hosted sink that applies nothing: its subscription waits (bounded), then drops, resets and replays; its sibling on the same thread loses nothing', async () => {
  const h = await startHosted(
    [
      { workerId: 2n, sink: 5 },
      { workerId: 4n, sink: 6 },
    ],
    { handoff: { waitMs: 300 } },
  );
  h.run.threads.sendHost(1, { hold: 5 } satisfies PeerHostControl);
  const [a, b] = h.run.engines;
  const steady = 40;
  await floodBesideSteady(a, b, steady);
  await waitFor(() => h.batches(4n).length === steady, 'every batch of the sibling', DEADLINE_MS);
  expect(h.batches(4n).map((x) => x.sequence)).toEqual(Array.from({ length: steady }, (_, i) => BigInt(i)));
  expect(h.resets(4n)).toEqual([]);
  // Held past the wait: its bursts were dropped (counted as overflows), its source reset at the sink, in order.
  await waitFor(() => h.resets(2n).some((c) => c.kind === 'reset' && c.reason === 'overflow'), 'the overflow reset at the sink', DEADLINE_MS);
  expect(h.run.subs[0].stats()[0].overflows).toBeGreaterThanOrEqual(1);
  // While held, at most the thread's share of the bound was in flight: never all 400 messages.
  expect(h.batches(2n).length).toBeLessThan(400);
  h.run.threads.sendHost(1, { release: 5 } satisfies PeerHostControl);
  // The replay from 0 after the last reset brings the whole stream.
  await waitFor(() => {
    const lastReset = h.calls.map((c, i) => (c.kind === 'reset' && c.source.workerId === 2n ? i : -1)).reduce((x, y) => Math.max(x, y), -1);
    const after = h.calls.slice(lastReset + 1).flatMap((c) => (c.kind === 'batch' && c.batch.source.workerId === 2n ? [c.batch.sequence] : []));
    return after.length === 400 && after.every((s, i) => s === BigInt(i));
  }, 'the whole stream replayed after the last reset', DEADLINE_MS);
  expect(h.sink.calls).toEqual([]);
});

test('a hosted subscription runs on its sink\'s thread, not the one its worker id shards to: that thread\'s death takes the sink and the subscription together, and the subscription is not reopened by itself (its owner replaces the generation)', async () => {
  expect(threadOf(2n, 2)).toBe(0);
  const h = await startHosted([{ workerId: 2n, sink: 5 }], { restartDelayMs: 50 });
  await h.run.engines[0].publish(store(0));
  await waitFor(() => h.batches(2n).length === 1, 'the first batch at the sink', DEADLINE_MS);
  h.run.threads.crash(2n);
  await waitFor(() => h.died.length === 1, 'the death reported to the host', DEADLINE_MS);
  // Thread 1, the sink's, ran it: no burst of the subscription crossed from thread 0.
  expect(h.died).toEqual([1]);
  await waitFor(() => h.run.threads.restarts === 1 && h.run.errors.some((e) => e.msg.startsWith('ingest thread died')), 'the restart', DEADLINE_MS);
  // Orphaned: what reaches the engine now reaches nothing, until the owner subscribes again.
  await h.run.engines[0].publish(store(1));
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(h.batches(2n).length).toBe(1);
});
