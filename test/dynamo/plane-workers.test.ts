// The event plane forgets what its channels held for workers discovery dropped (a Dynamo worker's
// lease ended): a real ZMQ event-plane publisher (4-frame messages) feeds a DynamoEventPlane of two
// workers; once update() no longer lists them, the channel holds no burst, source or publisher of theirs.
import { Publisher } from 'zeromq';
import { DynamoEventPlane } from '../../src/dynamo/event-plane/plane';
import type { EventChannel } from '../../src/dynamo/event-plane/channel';
import { KV_EVENT_TOPIC, KV_METRICS_TOPIC, type EventPlaneChannels, type WorkerRanks } from '../../src/dynamo/discovery/project';
import type { IngestSink } from '../../src/ingest/types';
import { activeLoadMsgpack, envelopeMsgpack, routerEventMsgpack, u64be, zmqFrame } from '../support/dynamo-wire';
import { waitFor } from '../support/waitFor';

const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

test('a channel drops the bursts, sources and publishers of workers discovery no longer lists', async () => {
  const pub = new Publisher();
  await pub.bind('tcp://127.0.0.1:*');
  const delivered = new Set<bigint>();
  const sink: IngestSink = {
    events: (b) => void delivered.add(b.workerId),
    reset: () => undefined,
  };
  const plane = new DynamoEventPlane({ sink, logger });
  const channels: EventPlaneChannels = { subjects: [], streams: [], zmq: [pub.lastEndpoint!], load: [], loadZmq: [] };
  const workers = new Map<bigint, WorkerRanks>([
    [41n, { dpStartRank: 0, dpSize: 1 }],
    [42n, { dpStartRank: 0, dpSize: 1 }],
  ]);
  try {
    await plane.update(channels, workers);
    const sequences = new Map<bigint, number>();
    const send = async (workerId: bigint): Promise<void> => {
      const sequence = sequences.get(workerId) ?? 0;
      sequences.set(workerId, sequence + 1);
      const blocks = [{ blockHash: BigInt(100 * sequence + 1), tokensHash: BigInt(900 * sequence + 1) }];
      const payload = routerEventMsgpack({ workerId, residencyDomain: 'worker', eventId: sequence, data: { stored: { parentHash: null, blocks } } });
      const envelope = envelopeMsgpack({ publisherId: 500n + workerId, sequence: BigInt(sequence), publishedAt: 1n, topic: KV_EVENT_TOPIC, payload });
      await pub.send([Buffer.from(KV_EVENT_TOPIC), u64be(500n + workerId), u64be(BigInt(sequence)), zmqFrame(envelope)]);
    };
    // The SUB joins asynchronously: send until both workers' events arrived.
    await waitFor(
      async () => {
        await send(41n);
        await send(42n);
        return delivered.size === 2;
      },
      'both workers delivered',
      5_000,
      20,
    );
    const channel = (plane as unknown as { live: Map<string, { channel?: EventChannel }> }).live.get(`zmq:${pub.lastEndpoint}`)!.channel!;
    expect(channel.held()).toMatchObject({ workers: 2, sources: 2, publishers: 2 });
    await plane.update(channels, new Map([[41n, workers.get(41n)!]]));
    expect(channel.held()).toMatchObject({ workers: 1, sources: 1, publishers: 1 });
    expect(plane.stats().map((s) => s.source.workerId)).toEqual([41n]);
    await plane.update(channels, new Map());
    expect(channel.held()).toMatchObject({ workers: 0, sources: 0, publishers: 0 });
  } finally {
    await plane.close();
    pub.close();
  }
});

test('kv_metrics on the ZMQ plane: each rank’s latest kv_used_blocks from a real publisher; a bad frame is counted, not applied', async () => {
  const pub = new Publisher();
  await pub.bind('tcp://127.0.0.1:*');
  const plane = new DynamoEventPlane({ sink: { events: () => undefined, reset: () => undefined }, logger });
  const channels: EventPlaneChannels = { subjects: [], streams: [], zmq: [], load: [], loadZmq: [pub.lastEndpoint!] };
  let sequence = 0n;
  const report = async (workerId: bigint, dpRank: number, kvUsedBlocks: number, frame = zmqFrame): Promise<void> => {
    const envelope = envelopeMsgpack({ publisherId: 77n, sequence, publishedAt: 1n, topic: KV_METRICS_TOPIC, payload: activeLoadMsgpack({ workerId, dpRank, kvUsedBlocks }) });
    await pub.send([Buffer.from(KV_METRICS_TOPIC), u64be(77n), u64be(sequence++), frame(envelope)]);
  };
  try {
    await plane.update(channels, new Map([[41n, { dpStartRank: 0, dpSize: 2 }]]));
    await waitFor(async () => {
      if (plane.reportedBlocks().get(41n)?.get(1) === 9) return true;
      await report(41n, 1, 9);
      return false;
    }, 'rank 1 reported over ZMQ', 5_000, 20);
    // A frame whose header lies about its length, and one of another version: malformed, nothing applied.
    await report(41n, 0, 5, (e) => Buffer.concat([zmqFrame(e), Buffer.from([0])]));
    await report(41n, 0, 6, (e) => Object.assign(zmqFrame(e), { 0: 2 }));
    // An undeclared rank is ignored; the next good report still lands (same socket, in order).
    await report(41n, 5, 1);
    await report(41n, 0, 3);
    await waitFor(() => plane.reportedBlocks().get(41n)?.get(0) === 3, 'rank 0 reported');
    expect(plane.reportedBlocks().get(41n)?.has(5)).toBe(false);
    expect(plane.metrics().malformed).toBe(2);
  } finally {
    await plane.close();
    pub.close();
  }
});
