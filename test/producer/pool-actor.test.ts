// The pool actor end to end over the real native pool state, hashing and CBI1 encoder.
import { CBI1, decodeFrame, filterContains, poolStateMemory, saltSeed, sequenceHashes, type DecodedDelta } from '../../src/native';
import { PoolActor, type PoolActorOptions } from '../../src/producer/pool-actor';
import type { PoolFilterState } from '../../src/native';
import type { DeltaFrame, PoolListener } from '../../src/publication/source';
import type { PackedEngineEvents } from '../../src/ingest/types';
import type { SimEvent } from '../../src/sim/encode';
import { packEngineBatch } from '../support/packed';
import { PackedBurst } from '../../src/ingest/burst';
import { EngineBatchDecoder } from '../../src/native';
import { encodeBatch } from '../../src/sim/encode';
import type { ProducerIdentity } from '../../src/wire/types';
import pino from 'pino';
import { silentLogger } from '../../src/log';
import { waitFor } from '../support/waitFor';
import { monotonicMs } from '../../src/clock';
import type { DeltaTiming } from '../../src/metrics/registry';
import { withStallMonitor } from '../../bench/support/stall';
import { ACTOR_MAILBOX_CAPACITY, INGEST_LOG_MAX_PER_WINDOW, PENDING_EVENT_PERMITS, PACING_MAX_SLICE_BLOCKS, PACING_MAX_SLICE_MS, PENDING_BLOCK_PERMITS } from '../../src/config/defaults';

const SEED = 0x5deece66d1b54a33n;
const BUCKETS = 1024;
const BS = 4;
const DC = 0x04f110c98b1bfc48n;
const producer: ProducerIdentity = {
  producerIncarnation: 42n,
  layoutGeneration: 1n,
  ckfFormat: { formatVersion: 1, seed: SEED, bucketCount: BigInt(BUCKETS), fingerprintBits: 16, slotsPerBucket: 4 },
};
const format = { seed: SEED, bucketCount: BUCKETS };

const actors: PoolActor[] = [];
afterEach(async () => {
  await Promise.all(actors.splice(0).map((a) => a.retire()));
});

/** An actor over a pool of BUCKETS buckets unless `bucketCount` asks for a bigger filter. */
function actor(threshold: number, delayMs: number, bucketCount = BUCKETS, onOverflow?: PoolActorOptions['onOverflow'], more: Partial<PoolActorOptions> = {}): PoolActor {
  const a = new PoolActor({
    ...more,
    onOverflow,
    key: 'pool',
    producer: { ...producer, ckfFormat: { ...producer.ckfFormat!, bucketCount: BigInt(bucketCount) } },
    dcId: DC,
    publicationThreshold: threshold,
    publicationDelayMs: delayMs,
    logger: silentLogger,
  });
  actors.push(a);
  return a;
}

class Recorder implements PoolListener {
  deltas: DeltaFrame[] = [];
  retiredCalls = 0;
  fencedReasons: string[] = [];
  delta(frame: DeltaFrame): void {
    this.deltas.push(frame);
  }
  retired(): void {
    this.retiredCalls += 1;
  }
  fenced(reason: string): void {
    this.fencedReasons.push(reason);
  }
  decoded(bucketCount = BUCKETS): DecodedDelta[] {
    return this.deltas.map((d) => decodeFrame({ ...format, bucketCount }, d.payload) as DecodedDelta);
  }
}

const tokens = (n: number, from = 0): Uint32Array => Uint32Array.from({ length: n }, (_, i) => from + i);

function stored(blockIds: bigint[], toks: Uint32Array, parent: bigint | null = null, loraName: string | null = null, blockSize = BS): SimEvent {
  return { type: 'BlockStored', blockHashes: blockIds, parentBlockHash: parent, tokenIds: toks, blockSize, loraName };
}

/** The events as ingest hands them over: msgpack as vLLM sends it, decoded for a pool of block size BS. */
function batch(events: SimEvent[], workerId = 7n, dpRank = 0, eagle = false): PackedEngineEvents {
  return packEngineBatch(workerId, events, { kvBlockSize: BS, eagle, dpRank });
}

function canonical(toks: Uint32Array, loraName: string | null = null, eagle = false): bigint[] {
  return [...sequenceHashes(toks, BS, eagle, saltSeed(null, loraName))];
}

function applyDeltas(words: BigUint64Array, deltas: DecodedDelta[]): BigUint64Array {
  const out = words.slice();
  for (const d of deltas) d.buckets.forEach((b, i) => (out[b] = d.values[i]));
  return out;
}

test('attach on an empty pool gives an all-zero image at sequence 0', async () => {
  const a = actor(1, 1);
  const img = await a.attach(new Recorder());
  expect(img.sequence).toBe(0n);
  expect(img.words).toHaveLength(BUCKETS);
  expect(img.words.every((w) => w === 0n)).toBe(true);
});

test('stored blocks become canonical hashes in the image; deltas continue it exactly', async () => {
  const a = actor(1, 1);
  const t1 = tokens(8);
  a.events(batch([stored([101n, 102n], t1)]));
  const rec = new Recorder();
  const img = await a.attach(rec);
  // No listener before attach: the first change was dropped and the sequence did not advance.
  expect(img.sequence).toBe(0n);
  for (const h of canonical(t1)) expect(filterContains(img.words, h, SEED)).toBe(true);

  // A child block chained on 102 (parent lookup in this source's lineage).
  const t2 = tokens(12);
  a.events(batch([stored([103n], t2.subarray(8), 102n)]));
  await waitFor(() => rec.deltas.length === 1, '1 delta', 2000, 2);
  const [d] = rec.deltas;
  expect(d.baseSequence).toBe(0n);
  expect(d.sequence).toBe(1n);
  const [frame] = rec.decoded();
  expect(frame.header.epoch).toBe(1n);
  expect(frame.baseEpoch).toBe(0n);
  expect(frame.header.dcId).toBe(DC);
  expect(frame.buckets.length).toBe(d.imageCount);
  const words = applyDeltas(img.words, rec.decoded());
  for (const h of canonical(t2)) expect(filterContains(words, h, SEED)).toBe(true);

  // Removing everything returns the filter to empty, published as deltas 2 (and on).
  a.events(batch([{ type: 'BlockRemoved', blockHashes: [103n, 102n, 101n] }]));
  await waitFor(() => rec.deltas.length === 2, '2 deltas', 2000, 2);
  expect(rec.deltas[1].baseSequence).toBe(1n);
  expect(rec.deltas[1].sequence).toBe(2n);
  expect(applyDeltas(img.words, rec.decoded()).every((w) => w === 0n)).toBe(true);
});

test('a LoRA name salts the canonical hashes', async () => {
  const a = actor(1, 1);
  const t = tokens(4, 500);
  a.events(batch([stored([1n], t, null, 'tenant-a-lora')]));
  const img = await a.attach(new Recorder());
  expect(filterContains(img.words, canonical(t, 'tenant-a-lora')[0], SEED)).toBe(true);
  expect(filterContains(img.words, canonical(t)[0], SEED)).toBe(false);
});

test('Eagle pools hash windows of kvBlockSize + 1 tokens', async () => {
  const a = actor(1, 1);
  const t = tokens(9, 70);
  a.events(batch([stored([1n, 2n], t)], 7n, 0, true));
  const img = await a.attach(new Recorder());
  const eagle = canonical(t, null, true);
  expect(eagle).toHaveLength(2);
  for (const h of eagle) expect(filterContains(img.words, h, SEED)).toBe(true);
});

test('a stored event with another block size is counted and dropped', async () => {
  const a = actor(1, 1);
  a.events(batch([stored([1n], tokens(8), null, null, 8)]));
  const img = await a.attach(new Recorder());
  expect(img.words.every((w) => w === 0n)).toBe(true);
  expect(a.metrics().eventsDroppedBlockSize).toBe(1);
  expect(a.metrics().eventsApplied).toBe(0);
});

test('threshold publishes at once; below it the delay timer flushes', async () => {
  const a = actor(3, 30);
  const rec = new Recorder();
  await a.attach(rec);
  a.events(batch([stored([1n], tokens(4, 0)), stored([2n], tokens(4, 10))]));
  await a.idle();
  expect(rec.deltas).toHaveLength(0); // 2 < threshold 3, timer armed
  a.events(batch([stored([3n], tokens(4, 20))]));
  await a.idle();
  expect(rec.deltas).toHaveLength(1); // threshold reached: published without waiting
  a.events(batch([stored([4n], tokens(4, 30))]));
  await a.idle();
  expect(rec.deltas).toHaveLength(1);
  await waitFor(() => rec.deltas.length === 2, '2 deltas', 2000, 2); // the delay timer flushed the single pending event
  expect(rec.deltas.map((d) => d.sequence)).toEqual([1n, 2n]);
});

test('a batch past the threshold publishes one delta at the end of its apply turn, not one per threshold', async () => {
  const a = actor(4, 10_000);
  const rec = new Recorder();
  const image = await a.attach(rec);
  const toks = Array.from({ length: 10 }, (_, i) => tokens(4, 1000 + 4 * i));
  a.events(batch(toks.map((t, i) => stored([BigInt(100 + i)], t))));
  await a.idle();
  // The deltas of one synchronous apply would reach the transport in the same turn anyway: one frame
  // of absolute images holds them all (a backlog must not fill subscriber queues by itself).
  expect(rec.deltas.map((d) => [d.baseSequence, d.sequence])).toEqual([[0n, 1n]]);
  const img = await a.attach(new Recorder());
  expect(img.sequence).toBe(1n);
  const words = applyDeltas(image.words, rec.decoded());
  for (const t of toks) expect(filterContains(words, canonical(t)[0], SEED)).toBe(true);
});

test('a backlog is applied with the next slice handed over while one runs; deltas stay contiguous and exact', async () => {
  const a = actor(1, 10_000, 1 << 14);
  const rec = new Recorder();
  const image = await a.attach(rec);
  // Observes the real native calls: how many applies the actor has handed over and not yet settled.
  const state = (a as unknown as { state: PoolFilterState }).state;
  const applyPackedAsync = state.applyPackedAsync.bind(state);
  let inFlight = 0;
  const seen: number[] = [];
  state.applyPackedAsync = (meta, words, end) => {
    seen.push(++inFlight);
    const p = applyPackedAsync(meta, words, end);
    void p.finally(() => inFlight--);
    return p;
  };
  // Ten batches of 16 events × 256 blocks in one turn: ten slices of 4096 blocks, each past the
  // threshold of 1 event, so each would end a window if no window end were in flight.
  const prompts: Uint32Array[] = [];
  for (let b = 0; b < 10; b++) {
    const events = Array.from({ length: 16 }, (_, e) => {
      const first = (b * 16 + e) * 256;
      const t = tokens(256 * BS, 1_000_000 + first * BS);
      prompts.push(t);
      return stored(Array.from({ length: 256 }, (_, i) => BigInt(1 + first + i)), t);
    });
    a.events(batch(events));
  }
  await a.idle();
  expect(a.metrics().eventsApplied).toBe(160);
  expect(Math.max(...seen)).toBe(2);
  // Every delta continues the one before, so a replica that applies them has the pool's image.
  expect(rec.deltas.length).toBeGreaterThan(1);
  rec.deltas.forEach((d, i) => expect([d.baseSequence, d.sequence]).toEqual([BigInt(i), BigInt(i + 1)]));
  const after = await a.attach(new Recorder());
  expect(after.sequence).toBe(BigInt(rec.deltas.length));
  expect(applyDeltas(image.words, rec.decoded(1 << 14))).toEqual(after.words);
  const missing = prompts.flatMap((t) => canonical(t)).filter((h) => !filterContains(after.words, h, SEED)).length;
  expect(missing).toBe(a.metrics().capacityFailures);
});

test('a failure while a result is handled fences the generation; the actor still settles', async () => {
  const a = actor(1, 10_000);
  class Throwing extends Recorder {
    override delta(): void {
      throw new Error('listener broke');
    }
  }
  const rec = new Throwing();
  await a.attach(rec);
  a.events(batch([stored([1n], tokens(4, 600))]));
  await a.idle();
  expect(rec.fencedReasons).toEqual(['pool actor command failed: listener broke']);
  expect(a.isEnded).toBe(true);
});

test('an event bigger than a slice is applied whole (a slice of its own) with the same result', async () => {
  const a = actor(16, 1, 8192);
  const n = 5000;
  const t = tokens(n * BS, 100_000);
  a.events(batch([stored(Array.from({ length: n }, (_, i) => BigInt(i + 1)), t)]));
  const img = await a.attach(new Recorder());
  const hashes = canonical(t);
  expect(hashes).toHaveLength(n);
  const missing = hashes.filter((h) => !filterContains(img.words, h, SEED)).length;
  expect(missing).toBe(a.metrics().capacityFailures);
  expect(missing).toBeLessThan(n / 100);
});

test('a reset runs off the event loop: its cost is the size of the cleared source', async () => {
  const a = actor(16, 1, 65536);
  const n = 100_000;
  a.events(batch([stored(Array.from({ length: n }, (_, i) => BigInt(i + 1)), tokens(n * BS, 1_000_000))]));
  await a.idle();
  // An apply on the loop thread would give the loop no turn until the clear of 100k blocks is done.
  const { stall } = await withStallMonitor(async () => {
    a.reset({ workerId: 7n, dpRank: 0 });
    await a.idle();
  });
  expect(stall.turns).toBeGreaterThan(10);
  const img = await a.attach(new Recorder());
  expect(img.words.every((w) => w === 0n)).toBe(true);
});

test('reset(source) clears only that source', async () => {
  const a = actor(1, 1);
  const t7 = tokens(4, 0);
  const t8 = tokens(4, 40);
  a.events(batch([stored([1n], t7)], 7n));
  a.events(batch([stored([1n], t8)], 8n));
  a.reset({ workerId: 7n, dpRank: 0 });
  const img = await a.attach(new Recorder());
  expect(filterContains(img.words, canonical(t7)[0], SEED)).toBe(false);
  expect(filterContains(img.words, canonical(t8)[0], SEED)).toBe(true);
});

test('batches handed over in one loop turn are applied together and published as one delta', async () => {
  const a = actor(3, 10_000);
  const rec = new Recorder();
  await a.attach(rec);
  const toks = Array.from({ length: 7 }, (_, i) => tokens(4, 2000 + 4 * i));
  // One per macrotask, as ingest threads' port messages arrive: still one loop turn's hand-offs.
  for (const [i, t] of toks.entries()) {
    a.events(batch([stored([BigInt(200 + i)], t)]));
    await Promise.resolve();
  }
  await a.idle();
  expect(rec.deltas.map((d) => d.sequence)).toEqual([1n]);
  const img = await a.attach(new Recorder());
  expect(img.sequence).toBe(1n);
  for (const t of toks) expect(filterContains(img.words, canonical(t)[0], SEED)).toBe(true);
});

test('each published delta reports its latency from the receive of its oldest batch, by stage; a window of resets or without a listener reports none', async () => {
  const timings: DeltaTiming[] = [];
  const a = actor(2, 10_000, BUCKETS, undefined, { onDeltaPublished: (t) => timings.push(t) });
  a.events(batch([stored([1n], tokens(4, 0))])); // no listener yet: dropped, nothing reported
  await a.idle();
  const rec = new Recorder();
  await a.attach(rec);
  // Two batches of one turn, one delta: the older one (received long ago, behind a busy hand-off) counts,
  // and its age is the hand-off's, not the pool's.
  const AGO_MS = 10_000; // far past any apply on a loaded machine: a fresh window's latency stays below it
  const early = { ...batch([stored([2n], tokens(4, 10))]), receivedAtMs: monotonicMs() - AGO_MS };
  a.events(batch([stored([3n], tokens(4, 20))]));
  a.events(early);
  await a.idle();
  expect(rec.deltas).toHaveLength(1);
  expect(timings).toHaveLength(1);
  expect(timings[0].handoffMs).toBeGreaterThanOrEqual(AGO_MS);
  expect(timings[0].handoffMs).toBeLessThan(AGO_MS + 5_000);
  expect(timings[0].poolMs).toBeGreaterThanOrEqual(0);
  expect(timings[0].poolMs).toBeLessThan(AGO_MS);
  // A fresh batch: measured from its own receive, not the last window's.
  a.events(batch([stored([4n], tokens(4, 30)), stored([5n], tokens(4, 40))]));
  await a.idle();
  expect(rec.deltas).toHaveLength(2);
  expect(timings).toHaveLength(2);
  expect(timings[1].handoffMs).toBeGreaterThanOrEqual(0);
  expect(timings[1].handoffMs + timings[1].poolMs).toBeLessThan(AGO_MS);
  // Resets (no engine message behind them) publish a delta that reports nothing.
  a.reset({ workerId: 7n, dpRank: 0 });
  a.reset({ workerId: 8n, dpRank: 0 });
  await a.idle();
  expect(rec.deltas).toHaveLength(3);
  expect(timings).toHaveLength(2);
});

test('a delta that waited for the pool reports the wait in its pool stage', async () => {
  const timings: DeltaTiming[] = [];
  const a = actor(2, 10_000, BUCKETS, undefined, { onDeltaPublished: (t) => timings.push(t) });
  await a.attach(new Recorder());
  // The actor takes the batch at once; its apply cannot start while the event loop is held.
  const HELD_MS = 100;
  a.events(batch([stored([9n], tokens(4, 90)), stored([10n], tokens(4, 100))]));
  const until = monotonicMs() + HELD_MS;
  while (monotonicMs() < until);
  await a.idle();
  expect(timings).toHaveLength(1);
  expect(timings[0].poolMs).toBeGreaterThanOrEqual(HELD_MS);
  expect(timings[0].handoffMs).toBeLessThan(HELD_MS);
});

test('a reset between batches of one turn keeps its place in the order', async () => {
  const a = actor(16, 10_000);
  const before = tokens(4, 3000);
  const after = tokens(4, 3100);
  a.events(batch([stored([1n], before)], 7n));
  a.reset({ workerId: 7n, dpRank: 0 });
  a.events(batch([stored([2n], after)], 7n));
  const img = await a.attach(new Recorder());
  expect(filterContains(img.words, canonical(before)[0], SEED)).toBe(false);
  expect(filterContains(img.words, canonical(after)[0], SEED)).toBe(true);
});

test('a full mailbox (batches) drops the batch and resets its source; the source rebuilds afterwards', async () => {
  const reports: Array<{ workerId: bigint; batches: number; appliedBefore: number }> = [];
  const a: PoolActor = actor(16, 10_000, 8192, (source, batches) => reports.push({ workerId: source.workerId, batches, appliedBefore: a.metrics().eventsApplied }));
  // One turn: nothing is applied before the loop yields, so the mailbox fills.
  const kept = Array.from({ length: ACTOR_MAILBOX_CAPACITY }, (_, i) => tokens(4, 10_000 + 4 * i));
  kept.forEach((t, i) => a.events(batch([stored([BigInt(1 + i)], t)], 7n)));
  const other = tokens(4, 9000);
  a.events(batch([stored([1n], other)], 8n)); // over capacity: worker 8 is reset
  a.events(batch([stored([2n], tokens(4, 9100))], 8n)); // still full: dropped, no second reset needed
  expect(a.metrics().mailboxOverflows).toBe(2);
  await a.idle();
  // Reported once for both drops, after the pool applied what it held then (the reset included):
  // the replay this asks for must not arrive at a mailbox that is still full.
  expect(reports).toEqual([{ workerId: 8n, batches: 2, appliedBefore: ACTOR_MAILBOX_CAPACITY + 1 }]);
  const later = tokens(4, 9200);
  a.events(batch([stored([3n], later)], 8n)); // room again: rebuilt from live events
  const img = await a.attach(new Recorder());
  for (const t of kept) expect(filterContains(img.words, canonical(t)[0], SEED)).toBe(true);
  expect(filterContains(img.words, canonical(other)[0], SEED)).toBe(false);
  expect(filterContains(img.words, canonical(later)[0], SEED)).toBe(true);
  expect(a.metrics().eventsApplied).toBe(ACTOR_MAILBOX_CAPACITY + 1 + 1); // + the reset's clear
});

test('events() returns a promise that settles once the batch is applied (ingest threads wait for it); a dropped batch returns none', async () => {
  const a = actor(16, 10_000, 8192);
  const first = tokens(4, 100);
  const applied = a.events(batch([stored([1n], first)]));
  expect(applied).toBeInstanceOf(Promise);
  expect(a.metrics().eventsApplied).toBe(0); // taken, not yet applied
  await applied;
  expect(a.metrics().eventsApplied).toBe(1);
  // Batches of one turn share an apply, and its promise.
  const b1 = a.events(batch([stored([2n], tokens(4, 200))]));
  const b2 = a.events(batch([stored([3n], tokens(4, 300))]));
  expect(b2).toBe(b1);
  await b2;
  expect(a.metrics().eventsApplied).toBe(3);
  for (let i = 0; i < ACTOR_MAILBOX_CAPACITY; i++) a.events(batch([stored([BigInt(10 + i)], tokens(4, 1000 + 4 * i))]));
  expect(a.events(batch([stored([9n], tokens(4, 900))], 8n))).toBeUndefined(); // over capacity: dropped
  await a.idle();
});

test('a full mailbox is applied off the event loop: the loop turns and sees progress while it applies', async () => {
  const a = actor(16, 10_000, 1 << 16);
  const events = 16;
  const blocksPerEvent = PENDING_BLOCK_PERMITS / ACTOR_MAILBOX_CAPACITY / events;
  const total = ACTOR_MAILBOX_CAPACITY * events;
  // A full mailbox taken in one turn: 256 batches of 16 stores of 16 blocks (65 536 blocks): tens of
  // ms of applying, which a synchronous apply would do without giving the loop a turn.
  for (let b = 0; b < ACTOR_MAILBOX_CAPACITY; b++) {
    const from = 1_000_000 + b * events * blocksPerEvent * BS;
    const stores = Array.from({ length: events }, (_, e) => {
      const first = b * events * blocksPerEvent + e * blocksPerEvent;
      return stored(
        Array.from({ length: blocksPerEvent }, (_, i) => BigInt(1 + first + i)),
        tokens(blocksPerEvent * BS, from + e * blocksPerEvent * BS),
      );
    });
    expect(a.events(batch(stores, 7n))).toBeInstanceOf(Promise);
  }
  const seen: number[] = [];
  const { stall } = await withStallMonitor(async () => {
    const watch = setInterval(() => seen.push(a.metrics().eventsApplied), 0);
    await a.idle();
    clearInterval(watch);
  });
  expect(a.metrics().eventsApplied).toBe(total);
  expect(a.metrics().mailboxOverflows).toBe(0);
  expect(stall.turns).toBeGreaterThan(10);
  expect(seen.some((n) => n > 0 && n < total)).toBe(true);
});

test('a full mailbox (blocks) resets the source whose batch does not fit, after what it had queued', async () => {
  const a = actor(16, 10_000, 65536);
  const n = PENDING_BLOCK_PERMITS - 10;
  const big = tokens(n * BS, 1_000_000);
  a.events(batch([stored(Array.from({ length: n }, (_, i) => BigInt(i + 1)), big)], 7n));
  const small = tokens(4 * 20, 50);
  a.events(batch([stored(Array.from({ length: 20 }, (_, i) => BigInt(100_000 + i)), small)], 7n)); // 20 > 10 left
  expect(a.metrics().mailboxOverflows).toBe(1);
  const img = await a.attach(new Recorder());
  // The reset follows the admitted batch, so the whole source is gone.
  expect(img.words.every((w) => w === 0n)).toBe(true);
});

test('a full mailbox (events) drops a batch of block-less events that does not fit, and resets its source', async () => {
  const a = actor(16, 10_000, 8192);
  const kept = tokens(4, 70);
  a.events(batch([stored([1n], kept)], 8n));
  // Removals of nothing cost no block permit but are events: work and memory all the same.
  const empty = (n: number): SimEvent[] => Array.from({ length: n }, () => ({ type: 'BlockRemoved' as const, blockHashes: [] }));
  a.events(batch(empty(PENDING_EVENT_PERMITS - 10), 7n));
  expect(a.metrics().mailboxOverflows).toBe(0);
  a.events(batch(empty(20), 9n)); // 20 > the 9 events left
  expect(a.metrics().mailboxOverflows).toBe(1);
  const img = await a.attach(new Recorder());
  expect(filterContains(img.words, canonical(kept)[0], SEED)).toBe(true);
  expect(a.metrics().eventsApplied).toBe(1 + PENDING_EVENT_PERMITS - 10 + 1); // + worker 9's reset
});

test('an unknown parent rejects the event (counted), other events still apply', async () => {
  const a = actor(1, 1);
  const t = tokens(4, 900);
  a.events(batch([stored([5n], tokens(4, 800), 999n), stored([6n], t)]));
  const img = await a.attach(new Recorder());
  expect(filterContains(img.words, canonical(t)[0], SEED)).toBe(true);
  expect(a.metrics().parentNotFound).toBe(1);
  expect(a.metrics().eventErrors).toBe(1);
});

test('at the tracked-block limit new stores are rejected (counted) and removals make room; tracked blocks are reported', async () => {
  const a = new PoolActor({
    key: 'pool',
    producer,
    dcId: DC,
    publicationThreshold: 1,
    publicationDelayMs: 1,
    maxTrackedBlocks: 2,
    logger: silentLogger,
  });
  actors.push(a);
  const first = tokens(8, 4000);
  const rejected = tokens(4, 4100);
  a.events(batch([stored([1n, 2n], first)], 7n));
  a.events(batch([stored([3n], rejected)], 8n));
  let img = await a.attach(new Recorder());
  expect(filterContains(img.words, canonical(rejected)[0], SEED)).toBe(false);
  expect(a.metrics()).toMatchObject({ trackedBlocks: 2, storesRejectedAtLimit: 1, eventErrors: 1 });
  a.events(batch([{ type: 'BlockRemoved', blockHashes: [2n] }], 7n));
  a.events(batch([stored([3n], rejected)], 8n));
  await a.idle();
  img = await a.attach(new Recorder());
  expect(filterContains(img.words, canonical(rejected)[0], SEED)).toBe(true);
  expect(a.metrics()).toMatchObject({ trackedBlocks: 2, storesRejectedAtLimit: 1 });
});

test('past its CKF capacity a pool counts the omitted blocks, reports the filter load and warns, throttled', async () => {
  const warnings: { msg: string; filterLoad: number; capacityFailures: number }[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line)) });
  const buckets = 8;
  const a = new PoolActor({
    key: 'pool',
    producer: { ...producer, ckfFormat: { ...producer.ckfFormat!, bucketCount: BigInt(buckets) } },
    dcId: DC,
    publicationThreshold: 1,
    publicationDelayMs: 1,
    logger,
  });
  actors.push(a);
  expect(a.metrics()).toMatchObject({ filterResidentBlocks: 0, filterLoad: 0 });
  // Three times the filter's 32 slots, one root block each, in events of their own.
  const blocks = 3 * buckets * 4;
  for (let b = 0; b < blocks; b++) a.events(batch([stored([BigInt(1000 + b)], tokens(BS, 10 * b))]));
  await a.idle();
  const m = a.metrics();
  expect(m.trackedBlocks).toBe(blocks);
  // The state-bytes gauge: at least the filter's words, as the last apply reported them.
  expect(m.stateBytes).toBeGreaterThanOrEqual(8 * buckets);
  expect(m.capacityFailures).toBeGreaterThan(0);
  expect(m.filterResidentBlocks).toBe(blocks - m.capacityFailures);
  expect(m.filterLoad).toBeCloseTo(m.filterResidentBlocks / (buckets * 4), 9);
  expect(m.filterLoad).toBeGreaterThan(0.75);
  expect(m.filterLoad).toBeLessThanOrEqual(1);
  expect(warnings.length).toBeGreaterThan(0);
  expect(warnings.length).toBeLessThanOrEqual(INGEST_LOG_MAX_PER_WINDOW);
  expect(warnings[0].msg).toMatch(/CKF at capacity.*expectedUniqueBlocks/);
  expect(warnings[0].capacityFailures).toBeGreaterThan(0);
  // Removals free slots: the load the gauge reports follows the filter down.
  for (let b = 0; b < blocks; b++) a.events(batch([{ type: 'BlockRemoved', blockHashes: [BigInt(1000 + b)] }]));
  await a.idle();
  expect(a.metrics()).toMatchObject({ trackedBlocks: 0, filterResidentBlocks: 0, filterLoad: 0 });
});

test('detach drops deltas again without advancing; retire tells the listener', async () => {
  const a = actor(1, 1);
  const rec = new Recorder();
  await a.attach(rec);
  a.events(batch([stored([1n], tokens(4))]));
  await waitFor(() => rec.deltas.length === 1, '1 delta', 2000, 2);
  a.detach(rec);
  a.events(batch([stored([2n], tokens(4, 4))]));
  await a.idle();
  await new Promise((r) => setTimeout(r, 20));
  await a.idle();
  expect(rec.deltas).toHaveLength(1);
  expect(a.metrics().deltasDropped).toBe(1);
  const rec2 = new Recorder();
  const img = await a.attach(rec2);
  expect(img.sequence).toBe(1n);
  await a.retire();
  expect(rec2.retiredCalls).toBe(1);
  expect(a.isEnded).toBe(true);
  await expect(a.attach(new Recorder())).rejects.toThrow(/retired/);
});

test('the CBI1 format constants are the ones the producer identity declares', () => {
  expect([CBI1.formatVersion, CBI1.fingerprintBits, CBI1.slotsPerBucket]).toEqual([1, 16, 4]);
});

test('pacing: a stretched slice publishes stretch x threshold events per delta, contiguously; 1 restores it', async () => {
  const a = actor(4, 10_000);
  const rec = new Recorder();
  const image = await a.attach(rec);
  const events = (from: number, n: number) => Array.from({ length: n }, (_, i) => stored([BigInt(from + i)], tokens(4, 4 * (from + i))));
  a.pace(8);
  expect(a.metrics().publicationSliceMs).toBe(10_000); // a configured delay above the cap is kept, never shortened
  a.events(batch(events(0, 20)));
  await a.idle();
  expect(rec.deltas).toHaveLength(0); // 20 < 8 x 4: pending behind the (long) delay
  a.events(batch(events(20, 50)));
  await a.idle();
  expect(rec.deltas).toHaveLength(1); // 70 >= 32
  a.pace(1);
  a.events(batch(events(70, 3)));
  await a.idle();
  expect(rec.deltas).toHaveLength(1); // 3 < 4
  a.events(batch(events(73, 2)));
  await a.idle();
  expect(rec.deltas.map((d) => [d.baseSequence, d.sequence])).toEqual([[0n, 1n], [1n, 2n]]);
  expect(rec.decoded()[0].buckets.length).toBeGreaterThanOrEqual(64);
  const words = applyDeltas(image.words, rec.decoded());
  for (let i = 0; i < 75; i += 1) for (const h of canonical(tokens(4, 4 * i))) expect(filterContains(words, h, SEED)).toBe(true);
  expect(() => a.pace(0)).toThrow(RangeError);
});

test('pacing: a stretched window is cut at PACING_MAX_SLICE_BLOCKS even inside one big batch', async () => {
  const a = actor(16, 1, 1 << 20);
  const rec = new Recorder();
  const image = await a.attach(rec);
  a.pace(1024); // 16 384 events per window, 1 s delay
  // 2048 events of 64 blocks: within one stretched window by events, 1.5 windows by blocks.
  const perEvent = 64;
  const n = 2048;
  const all = tokens(n * perEvent * BS, 3_000_000);
  a.events(
    batch(Array.from({ length: n }, (_, e) => stored(Array.from({ length: perEvent }, (_, i) => BigInt(1 + e * perEvent + i)), all.subarray(e * perEvent * BS, (e + 1) * perEvent * BS)))),
  );
  await waitFor(() => rec.deltas.length === 2, 'the cut delta and the delay-flushed rest', 10_000, 5);
  // Cut once the window passed the block bound, within one synchronous slice of it.
  const [first, rest] = rec.deltas;
  expect(first.imageCount).toBeGreaterThan(PACING_MAX_SLICE_BLOCKS / 2);
  expect(first.imageCount).toBeLessThan(1.2 * PACING_MAX_SLICE_BLOCKS);
  expect(rest.imageCount).toBeLessThan(n * perEvent - PACING_MAX_SLICE_BLOCKS / 2);
  const words = applyDeltas(image.words, rec.deltas.map((d) => decodeFrame({ seed: SEED, bucketCount: 1 << 20 }, d.payload) as DecodedDelta));
  for (const e of [0, n / 2, n - 1]) {
    for (const h of canonical(all.subarray(e * perEvent * BS, (e + 1) * perEvent * BS))) expect(filterContains(words, h, SEED)).toBe(true);
  }
});

test('pacing: a stretched delay is capped at PACING_MAX_SLICE_MS and reported as the current slice', () => {
  const a = actor(16, 1);
  expect(a.metrics().publicationSliceMs).toBe(1);
  a.pace(64);
  expect(a.metrics().publicationSliceMs).toBe(64);
  a.pace(1024);
  expect(a.metrics().publicationSliceMs).toBe(PACING_MAX_SLICE_MS);
});

test('many block-less events (more words than a synchronous apply takes) are applied, not refused', async () => {
  const a = actor(1_000_000, 1);
  const rec = new Recorder();
  await a.attach(rec);
  const t = tokens(8);
  a.events(batch([stored([1n, 2n], t), ...Array.from({ length: 70_000 }, () => ({ type: 'BlockRemoved' as const, blockHashes: [] })), { type: 'BlockRemoved', blockHashes: [2n] }]));
  await waitFor(() => rec.deltas.length > 0, 'the delta');
  expect(rec.fencedReasons).toEqual([]);
  const replica = applyDeltas(new BigUint64Array(BUCKETS), rec.decoded());
  const [h1, h2] = canonical(t);
  expect(filterContains(replica, h1, SEED)).toBe(true);
  expect(filterContains(replica, h2, SEED)).toBe(false);
});

describe('received(): bursts of the thread that hosts the pool, from its own sockets', () => {
  const onArrival = (threshold: number, delayMs: number, more: Partial<PoolActorOptions> = {}): PoolActor => actor(threshold, delayMs, 8192, undefined, more);

  test('a burst with nothing queued or in flight is applied in the received() call, and no promise is made', async () => {
    const a = onArrival(16, 10_000);
    const t = tokens(8, 100);
    expect(a.received(batch([stored([1n, 2n], t)]))).toBeUndefined();
    expect(a.metrics().eventsApplied).toBe(1); // before the call returned: no later turn
    expect(a.received(batch([stored([3n], tokens(4, 200))]))).toBeUndefined();
    expect(a.metrics().eventsApplied).toBe(2);
    const img = await a.attach(new Recorder());
    for (const h of [...canonical(t), ...canonical(tokens(4, 200))]) expect(filterContains(img.words, h, SEED)).toBe(true);
  });

  test('a window it fills publishes its delta in the same call', async () => {
    const a = onArrival(1, 10_000);
    const rec = new Recorder();
    await a.attach(rec);
    await a.idle();
    const t = tokens(4, 300);
    expect(a.received(batch([stored([5n], t)]))).toBeUndefined();
    expect(rec.deltas.map((d) => d.sequence)).toEqual([1n]);
    expect(a.received(batch([stored([6n], tokens(4, 304), 5n)]))).toBeUndefined();
    expect(rec.deltas.map((d) => d.sequence)).toEqual([1n, 2n]);
    const img = await a.attach(new Recorder());
    expect(applyDeltas(new BigUint64Array(8192), rec.decoded(8192))).toEqual(img.words);
  });

  test('behind a queued reset a burst waits its turn (order): a promise, applied after the reset', async () => {
    const a = onArrival(16, 10_000);
    const t = tokens(4, 400);
    expect(a.received(batch([stored([7n], t)]))).toBeUndefined();
    a.reset({ workerId: 7n, dpRank: 0 });
    const t2 = tokens(4, 500);
    const later = a.received(batch([stored([8n], t2)]));
    expect(later).toBeInstanceOf(Promise);
    expect(a.metrics().eventsApplied).toBe(1);
    await later;
    const img = await a.attach(new Recorder());
    expect(filterContains(img.words, canonical(t)[0], SEED)).toBe(false); // cleared by the reset
    expect(filterContains(img.words, canonical(t2)[0], SEED)).toBe(true); // stored after it
    await a.idle();
    // Nothing queued again: back to the call.
    expect(a.received(batch([stored([9n], tokens(4, 600))]))).toBeUndefined();
  });

  test('bursts of one rank queued behind a reset keep their own events, though ingest reuses the burst, its views and its arrays', async () => {
    const a = onArrival(16, 10_000);
    const burst = new PackedBurst(new EngineBatchDecoder({ workerId: 7n, kvBlockSize: BS, eagle: false, dpStartRank: 0, dpSize: 1 }), 7n);
    let sequence = 0n;
    const views: PackedEngineEvents[] = [];
    // As a rank delivers: one message decoded into the burst, its view to the sink, then cleared.
    const deliver = (events: SimEvent[]): Promise<void> | undefined => {
      burst.add(sequence++, encodeBatch(0, events, 0, { events: 'map' }), 0);
      views.push(burst.view(false));
      const applied = a.received(views[views.length - 1]);
      burst.clear();
      return applied;
    };
    const [t1, t2, t3] = [tokens(4, 900), tokens(4, 910), tokens(4, 920)];
    expect(deliver([stored([1n], t1)])).toBeUndefined();
    a.reset({ workerId: 7n, dpRank: 0 });
    // Two bursts of the same shape wait in the mailbox at once: each must have been copied when taken.
    const second = deliver([stored([2n], t2)]);
    const third = deliver([stored([3n], t3)]);
    expect(second).toBeInstanceOf(Promise);
    expect(third).toBeInstanceOf(Promise);
    expect(views[2]).toBe(views[1]);
    expect(views[2].words).toBe(views[1].words);
    await Promise.all([second, third]);
    const img = await a.attach(new Recorder());
    expect(filterContains(img.words, canonical(t1)[0], SEED)).toBe(false); // cleared by the reset
    expect(filterContains(img.words, canonical(t2)[0], SEED)).toBe(true);
    expect(filterContains(img.words, canonical(t3)[0], SEED)).toBe(true);
    expect(a.metrics().eventsApplied).toBe(4); // three stores and the reset's clear
  });

  test('a burst above the synchronous bound still goes in slices, off the thread, with a promise', async () => {
    const a = onArrival(16, 10_000, { syncApplyBlocks: 64 });
    const n = 65;
    const big = a.received(batch([stored(Array.from({ length: n }, (_, i) => BigInt(1000 + i)), tokens(n * BS, 10_000))]));
    expect(big).toBeInstanceOf(Promise);
    expect(a.metrics().eventsApplied).toBe(0);
    // While it is in flight, a small one queues behind it rather than write beside it.
    const small = a.received(batch([stored([1n], tokens(4, 700))], 8n));
    expect(small).toBeInstanceOf(Promise);
    await small;
    expect(a.metrics().eventsApplied).toBe(2);
  });

  test('after retire() nothing is applied in the call', async () => {
    const a = onArrival(16, 10_000);
    const retired = a.retire();
    expect(a.received(batch([stored([1n], tokens(4, 800))]))).toBeInstanceOf(Promise);
    await retired;
    expect(a.metrics().eventsApplied).toBe(0);
  });
});

test('bursts handed over by another thread (events()) still collect into one inbox: a flood of one turn fills the mailbox and overflows, while received() applies each', async () => {
  const a = actor(16, 10_000, 8192);
  for (let i = 0; i <= ACTOR_MAILBOX_CAPACITY + 1; i++) expect(a.events(batch([stored([BigInt(i + 1)], tokens(4, 4 * i))])) === undefined).toBe(i > ACTOR_MAILBOX_CAPACITY - 1);
  await a.idle();
  expect(a.metrics().mailboxOverflows).toBe(2);
  const b = actor(16, 10_000, 8192);
  for (let i = 0; i <= ACTOR_MAILBOX_CAPACITY + 1; i++) expect(b.received(batch([stored([BigInt(i + 1)], tokens(4, 4 * i))]))).toBeUndefined();
  expect(b.metrics().eventsApplied).toBe(ACTOR_MAILBOX_CAPACITY + 2);
  expect(b.metrics().mailboxOverflows).toBe(0);
});

test('a generation made `after` its predecessor: no state until it settles, what arrived meanwhile applied then, in order', async () => {
  let predecessorFreed!: () => void;
  const after = new Promise<void>((resolve) => (predecessorFreed = resolve));
  const reserve = { blocks: 50_000, perSource: 50_000, sources: [{ workerId: 7n, dpRank: 0 }] };
  const a = actor(1, 1, BUCKETS, undefined, { after, reserve });
  const t = tokens(8);
  const applied = a.events(batch([stored([101n, 102n], t)]));
  a.reset({ workerId: 7n, dpRank: 0 });
  a.events(batch([stored([201n], tokens(4, 100))]));
  const image = a.attach(new Recorder());
  let attached = false;
  void image.then(() => (attached = true));
  // Nothing is made, applied or answered while the predecessor holds its tables.
  await new Promise((resolve) => setImmediate(resolve));
  expect(a.metrics().stateBytes).toBe(0);
  expect(a.metrics().eventsApplied).toBe(0);
  expect(attached).toBe(false);
  predecessorFreed();
  await applied;
  // The reservation now (owner table and the named source's), then the three events in order: the
  // reset dropped 101-102, only 201 is left.
  const img = await image;
  expect(a.metrics().stateBytes).toBeGreaterThan(40 * 50_000);
  expect(a.metrics().eventsApplied).toBe(3);
  for (const h of canonical(t)) expect(filterContains(img.words, h, SEED)).toBe(false);
  for (const h of canonical(tokens(4, 100))) expect(filterContains(img.words, h, SEED)).toBe(true);
});

test('a generation retired before its predecessor freed its tables makes its state then, and releases it', async () => {
  let predecessorFreed!: () => void;
  const after = new Promise<void>((resolve) => (predecessorFreed = resolve));
  const a = actor(1, 1, BUCKETS, undefined, { after, reserve: { blocks: 50_000, perSource: 50_000 } });
  const rec = new Recorder();
  const attached = a.attach(rec);
  const retired = a.retire();
  let released = false;
  void a.released.then(() => (released = true));
  await new Promise((resolve) => setImmediate(resolve));
  expect(released).toBe(false);
  predecessorFreed();
  await retired;
  await a.released;
  // The attach queued before the retire was answered (an empty image); then the listener heard its end.
  expect((await attached).sequence).toBe(0n);
  expect(rec.retiredCalls).toBe(1);
});

test('a reserved generation\'s tables are unmapped off the thread that ends it; `released` settles once they are', async () => {
  const reserve = { blocks: 1 << 22, perSource: 1 << 22, sources: [{ workerId: 7n, dpRank: 0 }] };
  const a = actor(1, 1, BUCKETS, undefined, { reserve });
  await waitFor(() => a.received(batch([stored([1n], tokens(4))])) === undefined, 'the reservation populated', 60_000, 20);
  await a.idle();
  const bytes = a.metrics().stateBytes;
  const before = poolStateMemory().liveBytes;
  let released = false;
  void a.released.then(() => (released = true));
  // The native release settles on a later turn of the loop, once the releaser's thread freed the
  // tables (held there and counted meanwhile: test/native/pool-release.test.ts).
  await a.retire();
  expect(released).toBe(false);
  await a.released;
  expect(before - poolStateMemory().liveBytes).toBeGreaterThanOrEqual(bytes);
});

test('a fresh reservation: bursts go to a worker until its tables are in, then are applied in the received() call again', async () => {
  // 2 Mi blocks: ~100 MiB the populating thread faults in over some 100 ms after construction.
  const reserve = { blocks: 1 << 21, perSource: 1 << 21, sources: [{ workerId: 7n, dpRank: 0 }] };
  const a = actor(1, 1, BUCKETS, undefined, { reserve });
  const first = a.received(batch([stored([1n], tokens(4))]));
  expect(first).toBeInstanceOf(Promise);
  await first;
  // Once every page is in, a burst with nothing in flight is applied in the call (no promise).
  await waitFor(() => a.received(batch([stored([2n], tokens(4, 100))])) === undefined, 'a burst applied in the call', 30_000, 20);
  expect(a.metrics().eventErrors).toBe(0);
});
