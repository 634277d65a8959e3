// The event plane forgets what its channels held for workers discovery dropped (a Dynamo worker's
// lease ended): a real ZMQ event-plane publisher (4-frame messages) feeds a DynamoEventPlane of two
// workers; once update() no longer lists them, the channel holds no burst, source or publisher of theirs.
import { Publisher } from 'zeromq';
import { DynamoEventPlane } from '../../src/dynamo/event-plane/plane';
import type { EventChannel } from '../../src/dynamo/event-plane/channel';
import { KV_EVENT_TOPIC, type EventPlaneChannels, type WorkerRanks } from '../../src/dynamo/discovery/project';
import type { IngestSink } from '../../src/ingest/types';
import { envelopeMsgpack, routerEventMsgpack, u64be, zmqFrame } from '../support/dynamo-wire';
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
  const channels: EventPlaneChannels = { subjects: [], streams: [], zmq: [pub.lastEndpoint!], load: [] };
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
