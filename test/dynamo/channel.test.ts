// One event-plane channel's turn (src/dynamo/event-plane/channel.ts) over the real native decoder and
// Dynamo's envelope bytes: a worker's consecutive messages of one rank reach the sink as one batch
// (ranks interleaved stay apart, in order), each worker has its burst, the counters and the last
// sequence are per (worker, rank), and a gap's reset follows what the turn delivered before it.
import { INGEST_RETAINED_BUFFER_BYTES } from '../../src/config/defaults';
import { EventChannel, type ChannelContext, type PlaneCounters } from '../../src/dynamo/event-plane/channel';
import { KV_EVENT_TOPIC } from '../../src/dynamo/discovery/project';
import { sourceKey } from '../../src/dynamo/event-plane/order';
import { SourceGate } from '../../src/dynamo/event-plane/source-gate';
import { MESSAGE_INFO_STRIDE, type IngestSink, type ResetReason, type SourceKey, type SourceStats } from '../../src/ingest/types';
import { META_STRIDE, packedBlockCount, RouterEventBatchDecoder } from '../../src/native';
import { envelopeMsgpack, routerEventMsgpack } from '../support/dynamo-wire';
import { waitFor } from '../support/waitFor';

/** What the sink saw, copied (the burst's arrays are reused after the call). */
type Seen =
  | { kind: 'events'; workerId: bigint; batches: { dpRank: number; events: number; sequence: bigint }[]; blocks: number; words: bigint[] }
  | { kind: 'reset'; source: string; reason: ResetReason };

function setup(workers: [bigint, { dpStartRank: number; dpSize: number }][], maxPublishers = 16) {
  const seen: Seen[] = [];
  const sink: IngestSink = {
    events(b) {
      const batches = [];
      let metaStart = 0;
      for (let i = 0; i < b.messages; i++) {
        const metaEnd = b.messageInfo[i * MESSAGE_INFO_STRIDE + 1];
        batches.push({ dpRank: b.messageInfo[i * MESSAGE_INFO_STRIDE], events: (metaEnd - metaStart) / META_STRIDE, sequence: b.sequences[i] });
        metaStart = metaEnd;
      }
      let blocks = 0;
      for (let at = 0; at < b.meta.length; at += META_STRIDE) blocks += packedBlockCount(b.meta, at);
      seen.push({ kind: 'events', workerId: b.workerId, batches, blocks, words: [...b.words] });
      return undefined;
    },
    reset(source, reason) {
      seen.push({ kind: 'reset', source: sourceKey(source), reason });
    },
  };
  const stats = new Map<string, SourceStats>();
  const counters: PlaneCounters = { messages: 0, malformed: 0, otherTopic: 0, unknownWorker: 0, duplicates: 0, gaps: 0, loadFaults: 0 };
  const ctx: ChannelContext = {
    sink,
    decoder: new RouterEventBatchDecoder(KV_EVENT_TOPIC),
    maxPublishers,
    workers: () => new Map(workers),
    gate: new SourceGate(),
    stats: (source: SourceKey) => {
      const key = sourceKey(source);
      if (!stats.has(key)) {
        stats.set(key, { source, events: 0, blocks: 0, malformed: 0, rejectedRanks: 0, overflows: 0, outOfOrder: 0, refusedPeers: 0, gaps: 0, replays: 0, resets: 0, ignored: 0, droppedBlockSize: 0, connections: 0, lastSequence: null, mismatchedBlockSize: 0 });
      }
      return stats.get(key)!;
    },
    counters,
    warn: () => undefined,
  };
  return { channel: new EventChannel('namespace.t.component.c.kv-events', 'envelope', ctx), seen, stats, counters };
}

/** An envelope of publisher `publisher` with a store of `blocks` fresh blocks of worker `workerId`, rank `dpRank`. */
function message(publisher: bigint, sequence: number, workerId: bigint, dpRank: number, blocks = 2): Buffer {
  const hashes = Array.from({ length: blocks }, (_, b) => ({ blockHash: BigInt(1000 * sequence + b + 1), tokensHash: BigInt(7000 * sequence + b + 1) }));
  const payload = routerEventMsgpack({ workerId, residencyDomain: 'worker', eventId: sequence, dpRank, data: { stored: { parentHash: null, blocks: hashes } } });
  return envelopeMsgpack({ publisherId: publisher, sequence: BigInt(sequence), publishedAt: 1n, topic: KV_EVENT_TOPIC, payload });
}

const events = (seen: Seen[]) => seen.filter((s): s is Extract<Seen, { kind: 'events' }> => s.kind === 'events');

test("a worker's consecutive messages of one rank are one batch; interleaved ranks stay apart, in order", async () => {
  const { channel, seen, stats } = setup([[5n, { dpStartRank: 0, dpSize: 2 }]]);
  const ranks = [0, 0, 1, 1, 1, 0];
  ranks.forEach((rank, seq) => channel.push(message(9n, seq, 5n, rank)));
  await waitFor(() => seen.length > 0, 'the turn delivered');
  expect(seen).toEqual([
    {
      kind: 'events',
      workerId: 5n,
      batches: [
        { dpRank: 0, events: 2, sequence: 1n },
        { dpRank: 1, events: 3, sequence: 4n },
        { dpRank: 0, events: 1, sequence: 5n },
      ],
      blocks: 12,
      // Per store: the engine block ids, then the worker, then tokens_hash per block (the pool's layout).
      words: expect.arrayContaining([1n, 2n, 5001n, 5002n, 7001n, 7002n, 35001n, 35002n]),
    },
  ]);
  expect(stats.get('5:0')).toMatchObject({ events: 3, blocks: 6, lastSequence: 5n });
  expect(stats.get('5:1')).toMatchObject({ events: 3, blocks: 6, lastSequence: 4n });
});

test('each worker has its burst; unknown workers and undeclared ranks are counted, not delivered', async () => {
  const { channel, seen, stats, counters } = setup([
    [1n, { dpStartRank: 0, dpSize: 1 }],
    [2n, { dpStartRank: 0, dpSize: 1 }],
  ]);
  channel.push(message(11n, 0, 1n, 0));
  channel.push(message(12n, 0, 2n, 0, 3));
  channel.push(message(13n, 0, 3n, 0));
  channel.push(message(11n, 1, 1n, 0));
  channel.push(message(12n, 1, 2n, 4));
  await waitFor(() => seen.length >= 2, 'the turn delivered');
  expect(events(seen).map((e) => [e.workerId, e.batches.length, e.blocks])).toEqual([
    [1n, 1, 4],
    [2n, 1, 3],
  ]);
  expect(counters).toMatchObject({ messages: 5, unknownWorker: 1 });
  expect(stats.get('2:4')).toMatchObject({ rejectedRanks: 1, events: 0 });
  expect([...stats.keys()].sort()).toEqual(['1:0', '2:0', '2:4']);
});

test("a gap's reset reaches the sink after what the turn delivered before it, then the rest follows", async () => {
  const { channel, seen, counters } = setup([[1n, { dpStartRank: 0, dpSize: 1 }]]);
  for (const seq of [0, 1, 5, 6]) channel.push(message(21n, seq, 1n, 0));
  await waitFor(() => seen.length >= 3, 'the turn delivered');
  expect(seen.map((s) => (s.kind === 'reset' ? `${s.reason} ${s.source}` : `events ${s.batches.map((b) => `${b.events}@${b.sequence}`).join(',')}`))).toEqual([
    'events 2@1',
    'gap 1:0',
    'events 2@6',
  ]);
  expect(counters.gaps).toBe(1);
});

test('a duplicate within a turn is dropped and counted; the batch goes on', async () => {
  const { channel, seen, stats, counters } = setup([[1n, { dpStartRank: 0, dpSize: 1 }]]);
  for (const seq of [0, 1, 1, 2]) channel.push(message(31n, seq, 1n, 0));
  await waitFor(() => seen.length > 0, 'the turn delivered');
  expect(events(seen)[0].batches).toEqual([{ dpRank: 0, events: 3, sequence: 2n }]);
  expect(counters.duplicates).toBe(1);
  expect(stats.get('1:0')).toMatchObject({ outOfOrder: 1, lastSequence: 2n });
});

test('a channel fed by workers that then leave holds nothing for them afterwards (bursts, sources, publishers)', async () => {
  const ids = Array.from({ length: 200 }, (_, i) => BigInt(100 + i));
  const workers: [bigint, { dpStartRank: number; dpSize: number }][] = ids.map((id) => [id, { dpStartRank: 0, dpSize: 2 }]);
  const { channel, seen } = setup(workers, 1024);
  // Each worker its own publisher (a Dynamo worker process), on both of its ranks.
  for (const id of ids) for (let seq = 0; seq < 2; seq++) channel.push(message(1000n + id, seq, id, seq));
  await waitFor(() => events(seen).length === ids.length, 'every worker delivered');
  expect(channel.held()).toMatchObject({ workers: 200, sources: 400, publishers: 200 });
  // Discovery dropped all but the first (their leases ended).
  const staying = new Map([workers[0]]);
  channel.forgetWorkers(staying);
  expect(channel.held()).toMatchObject({ workers: 1, sources: 2, publishers: 1 });
  channel.forgetWorkers(new Map());
  expect(channel.held()).toMatchObject({ workers: 0, sources: 0, publishers: 0 });
});

test("a worker that comes back after it left starts afresh: its publisher's first message is not a duplicate", async () => {
  const workers: [bigint, { dpStartRank: number; dpSize: number }][] = [[7n, { dpStartRank: 0, dpSize: 1 }]];
  const { channel, seen, counters } = setup(workers);
  for (const seq of [0, 1]) channel.push(message(70n, seq, 7n, 0));
  await waitFor(() => events(seen).length === 1, 'the turn delivered');
  channel.forgetWorkers(new Map());
  for (const seq of [0, 1]) channel.push(message(70n, seq, 7n, 0));
  await waitFor(() => events(seen).length === 2, 'the next turn delivered');
  expect(counters.duplicates).toBe(0);
  expect(events(seen)[1].batches).toEqual([{ dpRank: 0, events: 2, sequence: 1n }]);
});

test("a channel's retained bytes drop back after one outsized turn", async () => {
  const { channel, seen } = setup([[3n, { dpStartRank: 0, dpSize: 1 }]]);
  channel.push(message(30n, 0, 3n, 0));
  await waitFor(() => events(seen).length === 1, 'a small turn delivered');
  const before = channel.held().bytes;
  let during = 0;
  const decoder = (channel as unknown as { ctx: ChannelContext }).ctx.decoder;
  const decoderBefore = decoder.byteLength;
  // 64 stores of 1000 blocks: megabytes of arena, decoded words and burst.
  for (let seq = 1; seq <= 64; seq++) channel.push(message(30n, seq, 3n, 0, 1000));
  const sink = (channel as unknown as { ctx: ChannelContext }).ctx.sink;
  const deliver = sink.events.bind(sink);
  sink.events = (b) => {
    during = Math.max(during, channel.held().bytes + decoder.byteLength);
    return deliver(b);
  };
  await waitFor(() => events(seen).length === 2, 'the outsized turn delivered');
  expect(events(seen)[1].blocks).toBe(64_000);
  expect(during).toBeGreaterThan(4 * 1024 * 1024);
  expect(channel.held().bytes).toBe(before);
  // Its per-message records grew with the turn's 65 messages (under the bound); the megabytes of words went back.
  expect(decoder.byteLength).toBeLessThan(decoderBefore + INGEST_RETAINED_BUFFER_BYTES);
});
