// Ordering, replay and resets over real ZMQ sockets on loopback, against the simulated engine.
import type { SimEvent } from '../../src/sim/encode';
import { SimulatedEngine } from '../../src/sim/engine';
import { attachSubscriber, connectHarness, WORKER, type Harness } from '../support/ingest-harness';
import { tokensHashes, type UnpackedEvent } from '../support/packed';
import { waitFor } from '../support/waitFor';

const H1 = 0xab54a98ceb1f0ad2n; // ≥ 2^63: uint64 on the wire, negative as int64
const H2 = 0x1111222233334444n;
const H3 = 0xdeadbeefcafebaben;

/** A stored chain with parents, a LoRA block, an ignored CPU store, a removal and a clear. */
const SCRIPT: SimEvent[][] = [
  [{ type: 'BlockStored', blockHashes: [H1, H2], parentBlockHash: null, tokenIds: [1, 2, 3, 4, 5, 6, 7, 8], blockSize: 4 }],
  [
    { type: 'BlockStored', blockHashes: [H3], parentBlockHash: H2, tokenIds: [9, 10, 11, 12], blockSize: 4, loraName: 'adapter-a' },
    { type: 'BlockStored', blockHashes: [5n], parentBlockHash: null, tokenIds: [1, 2, 3, 4], blockSize: 4, medium: 'CPU' },
  ],
  [{ type: 'BlockRemoved', blockHashes: [H3] }],
  [{ type: 'AllBlocksCleared' }],
];

/** What the pool gets: engine ids, and the canonical hashes of the tokens (salted by the LoRA name). */
const EXPECTED: UnpackedEvent[][] = [
  [{ kind: 'stored', blockHashes: [H1, H2], parentHash: null, tokensHashes: tokensHashes([1, 2, 3, 4, 5, 6, 7, 8], 4) }],
  [{ kind: 'stored', blockHashes: [H3], parentHash: H2, tokensHashes: tokensHashes([9, 10, 11, 12], 4, 'adapter-a') }],
  [{ kind: 'removed', blockHashes: [H3] }],
  [{ kind: 'cleared' }],
];

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('decoding over ZMQ', () => {
  it.each([
    ['array events, uint64 hashes', { events: 'array', hashes: 'uint' }],
    ['map events, uint64 hashes', { events: 'map', hashes: 'uint' }],
    ['map events, int64 hashes', { events: 'map', hashes: 'int' }],
    ['array events, bytes hashes', { events: 'array', hashes: 'bytes' }],
    ['map envelope', { events: 'map', envelope: 'map' }],
  ] as const)('%s deliver the same events', async (_name, encoding) => {
    h = await connectHarness({ ...encoding, topic: 'kv@pod-1@llama' }, { topic: 'kv@' });
    for (const events of SCRIPT) await h.engine.publish(events);
    await waitFor(() => h!.sink.batches.length === SCRIPT.length, 'all batches');
    expect(h.sink.batches.map((b) => b.events)).toEqual(EXPECTED);
    expect(h.sink.batches.map((b) => b.source)).toEqual(SCRIPT.map(() => ({ workerId: WORKER, dpRank: 0 })));
    expect(h.sink.sequences()).toEqual([0n, 1n, 2n, 3n]);
    expect(h.sink.resets).toEqual([]);
    expect(h.sub.stats()).toEqual([
      { source: { workerId: WORKER, dpRank: 0 }, events: 4, blocks: 4, malformed: 0, rejectedRanks: 0, overflows: 0, outOfOrder: 0, refusedPeers: 0, gaps: 0, replays: 1, resets: 0, ignored: 1, droppedBlockSize: 0, connections: 1, lastSequence: 3n, mismatchedBlockSize: 0 },
    ]);
  });

  it('filters by topic prefix, live and in replays', async () => {
    h = await connectHarness({ topic: 'other' }, { topic: 'kv@' });
    await h.engine.publish(SCRIPT[0]);
    // A later message on a subscribed topic proves the first one was filtered, not merely late.
    await h.engine.publishRaw([Buffer.from('kv@x'), Buffer.alloc(8), Buffer.from([0x93, 0x01, 0x90, 0x00])]);
    await waitFor(() => h!.sink.batches.length === 1, 'the kv@ batch');
    expect(h.sink.batches[0]).toMatchObject({ sequence: 0n, events: [] });
    expect(h.sub.stats()[0]).toMatchObject({ events: 0, malformed: 0 });
  });
});

describe('one receive arena per thread', () => {
  let other: Harness | undefined;
  afterEach(async () => {
    await other?.close();
    other = undefined;
  });

  /** A store of `blocks` blocks of 4 tokens: `blocks` of 1 000 make a payload of ~20 KB. */
  const store = (first: number, blocks: number): SimEvent => ({
    type: 'BlockStored',
    blockHashes: Array.from({ length: blocks }, (_, i) => BigInt(first + i) << 32n),
    parentBlockHash: null,
    tokenIds: Array.from({ length: 4 * blocks }, (_, i) => 70_000 + first + i),
    blockSize: 4,
  });
  const expected = (e: SimEvent & { type: 'BlockStored' }): UnpackedEvent => ({
    kind: 'stored',
    blockHashes: e.blockHashes,
    parentHash: null,
    tokensHashes: tokensHashes(e.tokenIds, 4),
  });

  it('two subscribers whose messages outgrow it, then shrink it again, each deliver exactly what their engine sent', async () => {
    h = await connectHarness();
    other = await connectHarness();
    // Small, past the first arena (64 KiB), past what is kept (256 KiB: given back after the read), small.
    const sizes = [[4, 1], [4_000, 2], [1, 16_000], [3, 3]];
    const sent: [SimEvent & { type: 'BlockStored' }, SimEvent & { type: 'BlockStored' }][] = [];
    for (const [a, b] of sizes) {
      const pair = [store(sent.length * 100_000, a), store(sent.length * 100_000 + 50_000, b)] as [SimEvent & { type: 'BlockStored' }, SimEvent & { type: 'BlockStored' }];
      sent.push(pair);
      await h.engine.publish([pair[0]]);
      await other.engine.publish([pair[1]]);
    }
    await waitFor(() => h!.sink.batches.length === sizes.length && other!.sink.batches.length === sizes.length, 'every batch of both');
    expect(h.sink.batches.map((b) => b.events)).toEqual(sent.map(([a]) => [expected(a)]));
    expect(other.sink.batches.map((b) => b.events)).toEqual(sent.map(([, b]) => [expected(b)]));
    expect([h.sink.sequences(), other.sink.sequences()]).toEqual([[0n, 1n, 2n, 3n], [0n, 1n, 2n, 3n]]);
    expect([h.sub.stats()[0].malformed, other.sub.stats()[0].malformed]).toEqual([0, 0]);
  });
});

describe('replay', () => {
  it('asks for replay from 0 on first connect', async () => {
    const engine = await new SimulatedEngine({ http: false }).start();
    // Published before the relay connected: only the replay buffer has these batches.
    for (const events of SCRIPT) await engine.publish(events, { dropLive: true });
    h = await attachSubscriber(engine);
    await engine.publish([{ type: 'AllBlocksCleared' }]);
    await waitFor(() => h!.sink.batches.length === 5, 'replayed and live batches');
    expect(h.sink.sequences()).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(h.sink.batches.slice(0, 4).map((b) => b.events)).toEqual(EXPECTED);
    expect(h.sub.stats()[0]).toMatchObject({ replays: 1, gaps: 0, resets: 0 });
  });

  it('a long replay with live traffic behind it yields one contiguous stream', async () => {
    const engine = await new SimulatedEngine({ http: false }).start();
    for (let i = 0; i < 600; i++) await engine.publish([{ type: 'AllBlocksCleared' }], { dropLive: true });
    h = await attachSubscriber(engine);
    // Live batches arrive while the replay runs, and keep arriving while the held-back ones drain.
    for (let i = 0; i < 400; i++) await engine.publish([{ type: 'AllBlocksCleared' }]);
    await waitFor(() => h!.sink.batches.length === 1000, 'replayed and live batches');
    expect(h.sink.sequences()).toEqual(Array.from({ length: 1000 }, (_, i) => BigInt(i)));
    // One round: 600 replies fill the replay queue, but the live batches held behind the replay
    // continue from where it ended, so no round is needed to check for a dropped tail.
    expect(h.sub.stats()[0]).toMatchObject({ gaps: 0, resets: 0, replays: 1, malformed: 0 });
  });

  it('a replay larger than the engine ROUTER pipe: replies it drops are asked for again', async () => {
    const engine = await new SimulatedEngine({ http: false }).start();
    const tokens = Array.from({ length: 16 }, (_, i) => i);
    for (let i = 0; i < 10_000; i++) {
      await engine.publish([{ type: 'BlockStored', blockHashes: [BigInt(i + 1)], parentBlockHash: null, tokenIds: tokens, blockSize: 16 }], { dropLive: true });
    }
    h = await attachSubscriber(engine);
    await waitFor(() => h!.sink.batches.length === 10_000, 'the whole replay buffer', 15_000);
    expect(h.sink.sequences().every((seq, i) => seq === BigInt(i))).toBe(true);
    expect(h.sub.stats()[0]).toMatchObject({ gaps: 0, resets: 0 });
  });

  it.each([['topic'], ['legacy']] as const)('a gap is filled by replay from last+1 (%s reply layout)', async (replayLayout) => {
    h = await connectHarness({ replayLayout });
    await h.engine.publish(SCRIPT[0]);
    await h.engine.publish(SCRIPT[1]);
    await waitFor(() => h!.sink.batches.length === 2, 'first batches');
    await h.engine.publish(SCRIPT[2], { dropLive: true });
    await h.engine.publish([], { dropLive: true });
    await h.engine.publish(SCRIPT[3]);
    await h.engine.publish([]);
    await waitFor(() => h!.sink.batches.length === 6, 'replayed gap and live batches');
    expect(h.sink.sequences()).toEqual([0n, 1n, 2n, 3n, 4n, 5n]);
    expect(h.sink.batches[2].events).toEqual(EXPECTED[2]);
    expect(h.sink.resets).toEqual([]);
    expect(h.sub.stats()[0]).toMatchObject({ gaps: 1, replays: 2, resets: 0 });
  });

  it('a gap the replay buffer cannot cover resets the source and continues live', async () => {
    h = await connectHarness();
    await h.engine.publish(SCRIPT[0]);
    await waitFor(() => h!.sink.batches.length === 1, 'first batch');
    h.engine.skip(3); // sequences 1..3 never existed in the buffer
    await h.engine.publish(SCRIPT[1]);
    await h.engine.publish(SCRIPT[2]);
    await waitFor(() => h!.sink.batches.length === 3, 'batches after the gap');
    expect(h.sink.calls.map((c) => (c.kind === 'batch' ? c.batch.sequence : c.reason))).toEqual([0n, 'gap', 4n, 5n]);
    expect(h.sink.resets[0].source).toEqual({ workerId: WORKER, dpRank: 0 });
    expect(h.sub.stats()[0]).toMatchObject({ gaps: 1, replays: 2, resets: 1 });
  });

  it('without a replay endpoint a gap resets the source', async () => {
    h = await connectHarness({ replay: false }, { replayEndpoint: undefined });
    await h.engine.publish(SCRIPT[0]);
    await h.engine.publish(SCRIPT[1], { dropLive: true });
    await h.engine.publish(SCRIPT[2]);
    await waitFor(() => h!.sink.batches.length === 2, 'batches around the gap');
    expect(h.sink.calls.map((c) => (c.kind === 'batch' ? c.batch.sequence : c.reason))).toEqual([0n, 'gap', 2n]);
    expect(h.sub.stats()[0]).toMatchObject({ gaps: 1, replays: 0, resets: 1 });
  });

  it('a replay endpoint that never answers times out, then the source continues live', async () => {
    // Point the replay client at a port nobody serves.
    h = await connectHarness({ replay: false }, { replayEndpoint: 'tcp://127.0.0.1:1' }, { replayIdleTimeoutMs: 300 });
    await h.engine.publish(SCRIPT[0]);
    await h.engine.publish(SCRIPT[1]);
    await waitFor(() => h!.sink.batches.length === 2, 'live batches after the initial replay timed out');
    await h.engine.publish(SCRIPT[2], { dropLive: true });
    await h.engine.publish(SCRIPT[3]);
    await waitFor(() => h!.sink.batches.length === 3, 'live batch after the gap replay timed out');
    expect(h.sink.calls.map((c) => (c.kind === 'batch' ? c.batch.sequence : c.reason))).toEqual([0n, 1n, 'gap', 3n]);
    expect(h.sub.stats()[0]).toMatchObject({ gaps: 1, replays: 2, resets: 1 });
    expect(h.warnings.some((w) => w.msg.includes('replay incomplete'))).toBe(true);
  });
});

describe('restarts and lost connections', () => {
  it('a sequence going backwards (engine restart) resets the source and replays the new engine from 0', async () => {
    h = await connectHarness();
    for (const events of SCRIPT.slice(0, 3)) await h.engine.publish(events);
    await waitFor(() => h!.sink.batches.length === 3, 'first run');
    h.engine.restart();
    await h.engine.publish(SCRIPT[0], { dropLive: true });
    // Three contiguous live messages below the old sequence confirm the restart (one would be a stray).
    for (const events of SCRIPT.slice(1, 4)) await h.engine.publish(events);
    await waitFor(() => h!.sink.batches.length === 7, 'the restarted engine');
    expect(h.sink.calls.map((c) => (c.kind === 'batch' ? c.batch.sequence : c.reason))).toEqual([0n, 1n, 2n, 'restart', 0n, 1n, 2n, 3n]);
    expect(h.sink.batches[3].events).toEqual(EXPECTED[0]);
    expect(h.sub.stats()[0]).toMatchObject({ resets: 1, replays: 2 });
  });

  it('a lost connection resets the source; the reconnected engine is replayed from 0', async () => {
    h = await connectHarness();
    await h.engine.publish(SCRIPT[0]);
    await waitFor(() => h!.sink.batches.length === 1, 'first engine');
    const port = Number(h.engine.pubEndpoint.split(':').pop());
    const replayPort = Number(h.engine.replayEndpoint!.split(':').pop());
    await h.engine.stop();
    await waitFor(() => h!.sink.resets.length === 1, 'the disconnect reset');
    expect(h.sink.resets).toEqual([{ source: { workerId: WORKER, dpRank: 0 }, reason: 'disconnect' }]);

    const engine = await new SimulatedEngine({ http: false, port, replayPort }).start();
    h.engine = engine;
    await engine.publish(SCRIPT[1], { dropLive: true }); // before the relay reconnects
    await engine.waitForSubscribers();
    await engine.publish(SCRIPT[2]);
    await waitFor(() => h!.sink.batches.length === 3, 'the second engine');
    expect(h.sink.calls.map((c) => (c.kind === 'batch' ? c.batch.sequence : c.reason))).toEqual([0n, 'disconnect', 0n, 1n]);
    expect(h.sink.batches[1].events).toEqual(EXPECTED[1]);
  });
});
