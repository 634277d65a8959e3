// A worker's kv_metrics reports on the ZMQ plane are cleared when the connection to its publisher
// drops (the worker's load becomes unobserved, as when the NATS connection drops), and observed again
// with the next report once the SUB has reconnected to a publisher at that endpoint.
import { Publisher } from 'zeromq';
import { DynamoEventPlane } from '../../src/dynamo/event-plane/plane';
import { KV_METRICS_TOPIC, type EventPlaneChannels } from '../../src/dynamo/discovery/project';
import { activeLoadMsgpack, envelopeMsgpack, u64be, zmqFrame } from '../support/dynamo-wire';
import { waitFor } from '../support/waitFor';

const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

test('a ZMQ kv_metrics publisher that goes away leaves its worker’s load unobserved until its next report', async () => {
  let pub = new Publisher();
  await pub.bind('tcp://127.0.0.1:*');
  const endpoint = pub.lastEndpoint!;
  const plane = new DynamoEventPlane({ sink: { events: () => undefined, reset: () => undefined }, logger });
  const channels: EventPlaneChannels = { subjects: [], streams: [], zmq: [], load: [], loadZmq: [endpoint] };
  let sequence = 0n;
  const report = async (kvUsedBlocks: number): Promise<void> => {
    const envelope = envelopeMsgpack({ publisherId: 77n, sequence, publishedAt: 1n, topic: KV_METRICS_TOPIC, payload: activeLoadMsgpack({ workerId: 41n, dpRank: 0, kvUsedBlocks }) });
    await pub.send([Buffer.from(KV_METRICS_TOPIC), u64be(77n), u64be(sequence++), zmqFrame(envelope)]);
  };
  const observed = (): number | undefined => plane.reportedBlocks().get(41n)?.get(0);
  try {
    await plane.update(channels, new Map([[41n, { dpStartRank: 0, dpSize: 1 }]]));
    await waitFor(async () => observed() === 5 || (await report(5), false), 'the first report', 5_000, 20);

    pub.close();
    await waitFor(() => observed() === undefined, 'the report cleared once the publisher went away', 10_000);
    expect(plane.reportedBlocks().has(41n)).toBe(false);

    // The worker comes back at the same endpoint: the SUB reconnects and its next report is observed.
    pub = new Publisher();
    await waitFor(
      async () => {
        try {
          await pub.bind(endpoint);
          return true;
        } catch {
          return false; // the closed socket's listener is still being torn down
        }
      },
      'the endpoint bound again',
      10_000,
      20,
    );
    sequence = 0n;
    await waitFor(async () => observed() === 6 || (await report(6), false), 'the report after the reconnect', 15_000, 20);
  } finally {
    await plane.close();
    pub.close();
  }
});
