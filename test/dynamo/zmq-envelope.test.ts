// A ZMQ event-plane message is [topic, publisher_id u64 BE, sequence u64 BE, frame]. As Dynamo's own
// subscriber does (zmq_transport.rs decode_multipart and ValidatedZmqSource), one whose topic frame is
// not exactly the channel's topic, whose id frames are not 8 bytes, or whose id frames disagree with
// the envelope inside its frame is dropped and counted malformed; the next good message is applied.
// Real PUB sockets feed a DynamoEventPlane, for KV events and for kv_metrics alike.
import { Publisher } from 'zeromq';
import { DynamoEventPlane } from '../../src/dynamo/event-plane/plane';
import { KV_EVENT_TOPIC, KV_METRICS_TOPIC, type EventPlaneChannels, type WorkerRanks } from '../../src/dynamo/discovery/project';
import { activeLoadMsgpack, envelopeMsgpack, routerEventMsgpack, u64be, zmqFrame } from '../support/dynamo-wire';
import { waitFor } from '../support/waitFor';

const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
const WORKER = 41n;
const PUBLISHER = 541n;
const workers = new Map<bigint, WorkerRanks>([[WORKER, { dpStartRank: 0, dpSize: 2 }]]);

/** A message's four frames from its parts; a case replaces the ones it makes wrong. */
interface Parts {
  topic: Buffer;
  publisher: Buffer;
  sequence: Buffer;
  frame: Buffer;
}

const good = (p: Parts): Buffer[] => [p.topic, p.publisher, p.sequence, p.frame];

/** Each bad message's frames, from the good message it spoils (same envelope: publisher 541, sequence n). */
const BAD: [string, (good: Parts) => Buffer[]][] = [
  ['a topic frame that only shares the topic as a prefix', (g) => [Buffer.concat([g.topic, Buffer.from('-x')]), g.publisher, g.sequence, g.frame]],
  ['a publisher_id frame that disagrees with the envelope', (g) => [g.topic, u64be(PUBLISHER + 1n), g.sequence, g.frame]],
  ['a sequence frame that disagrees with the envelope', (g) => [g.topic, g.publisher, u64be(g.sequence.readBigUInt64BE(0) + 7n), g.frame]],
  ['a short publisher_id frame', (g) => [g.topic, g.publisher.subarray(4), g.sequence, g.frame]],
  ['a short sequence frame', (g) => [g.topic, g.publisher, g.sequence.subarray(0, 7), g.frame]],
  ['three frames', (g) => [g.topic, g.publisher, g.frame]],
];

/** `body` gets the publisher, the plane and the envelope sequences of the KV events it applied. */
async function withPublisher(channels: (endpoint: string) => EventPlaneChannels, body: (pub: Publisher, plane: DynamoEventPlane, applied: Set<bigint>) => Promise<void>): Promise<void> {
  const pub = new Publisher();
  await pub.bind('tcp://127.0.0.1:*');
  const applied = new Set<bigint>();
  const sink = { events: (b: { sequences: BigUint64Array }) => void b.sequences.forEach((s) => applied.add(s)), reset: () => undefined };
  const plane = new DynamoEventPlane({ sink, logger });
  try {
    await plane.update(channels(pub.lastEndpoint!), workers);
    await body(pub, plane, applied);
  } finally {
    await plane.close();
    pub.close();
  }
}

describe.each(BAD)('a ZMQ message with %s', (_, spoil) => {
  test('KV events: counted malformed, not applied; the good message after it is', async () => {
    await withPublisher(
      (e) => ({ subjects: [], streams: [], zmq: [e], load: [], loadZmq: [] }),
      async (pub, plane, applied) => {
        let next = 0n;
        const parts = (sequence: bigint): Parts => {
          const blocks = [{ blockHash: 100n + sequence, tokensHash: 900n + sequence }];
          const payload = routerEventMsgpack({ workerId: WORKER, residencyDomain: 'worker', eventId: sequence, data: { stored: { parentHash: null, blocks } } });
          const envelope = envelopeMsgpack({ publisherId: PUBLISHER, sequence, publishedAt: 1n, topic: KV_EVENT_TOPIC, payload });
          return { topic: Buffer.from(KV_EVENT_TOPIC), publisher: u64be(PUBLISHER), sequence: u64be(sequence), frame: zmqFrame(envelope) };
        };
        // The SUB joins asynchronously: good messages until one is applied.
        await waitFor(
          async () => {
            await pub.send(good(parts(next++)));
            return applied.size > 0;
          },
          'the SUB joined',
          5_000,
          20,
        );
        // The bad and the good message carry the same envelope (sequence n, after every warm-up one on
        // the same connection): had the bad one been applied, the good one would be a duplicate.
        const p = parts(next);
        await pub.send(spoil(p));
        await pub.send(good(p));
        await waitFor(() => applied.has(next), 'the good message was applied');
        expect(plane.metrics()).toMatchObject({ malformed: 1, duplicates: 0 });
      },
    );
  });

  test('kv_metrics: counted malformed, not applied; the good report after it is', async () => {
    await withPublisher(
      (e) => ({ subjects: [], streams: [], zmq: [], load: [], loadZmq: [e] }),
      async (pub, plane) => {
        let next = 0n;
        const parts = (dpRank: number, kvUsedBlocks: number): Parts => {
          const sequence = next++;
          const envelope = envelopeMsgpack({ publisherId: PUBLISHER, sequence, publishedAt: 1n, topic: KV_METRICS_TOPIC, payload: activeLoadMsgpack({ workerId: WORKER, dpRank, kvUsedBlocks }) });
          return { topic: Buffer.from(KV_METRICS_TOPIC), publisher: u64be(PUBLISHER), sequence: u64be(sequence), frame: zmqFrame(envelope) };
        };
        await waitFor(
          async () => {
            await pub.send(good(parts(0, 1)));
            return plane.reportedBlocks().get(WORKER)?.get(0) === 1;
          },
          'the SUB joined',
          5_000,
          20,
        );
        const malformed = plane.metrics().malformed;
        // The bad report is rank 1's; the good one after it rank 0's.
        await pub.send(spoil(parts(1, 666)));
        await pub.send(good(parts(0, 7)));
        await waitFor(() => plane.reportedBlocks().get(WORKER)?.get(0) === 7, 'the good report was applied');
        expect(plane.reportedBlocks().get(WORKER)?.has(1)).toBe(false);
        expect(plane.metrics().malformed).toBe(malformed + 1);
      },
    );
  });
});
