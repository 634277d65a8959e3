// A kv_metrics message on the ZMQ plane whose envelope names another topic, publisher or sequence than
// its frames is a fault of its publisher, as in Dynamo's relay (metrics_subscriber.rs `fault_for_event`:
// IdentityMismatch, then `clear_load_observations`): the load that publisher reported is cleared (its
// workers' load is unobserved until their next good report), the fault is counted and logged, and
// another publisher's load is kept. On NATS, a message that does not decode is such a fault of its
// subject (Dynamo's TypedEventSubscriber yields an error there). Real PUB sockets and a real
// nats-server feed a DynamoEventPlane.
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { Publisher } from 'zeromq';
import { DynamoEventPlane } from '../../src/dynamo/event-plane/plane';
import { KV_METRICS_TOPIC, type EventPlaneChannels } from '../../src/dynamo/discovery/project';
import { activeLoadMsgpack, envelopeMsgpack, u64be, zmqFrame } from '../support/dynamo-wire';
import { describeWithNatsAndEtcd, NatsServer } from '../support/nats';
import { waitFor } from '../support/waitFor';

/** A worker's kv_metrics PUB: its publisher id and next sequence. */
class LoadPublisher {
  readonly pub = new Publisher();
  sequence = 0n;
  constructor(
    readonly publisherId: bigint,
    readonly workerId: bigint,
  ) {}
  async bind(): Promise<string> {
    await this.pub.bind('tcp://127.0.0.1:*');
    return this.pub.lastEndpoint!;
  }
  /** One report; `spoil` changes what the envelope names (frames stay the publisher's own). */
  async report(kvUsedBlocks: number, spoil: { publisherId?: bigint; sequence?: bigint; topic?: string } = {}): Promise<void> {
    const sequence = this.sequence++;
    const payload = activeLoadMsgpack({ workerId: this.workerId, dpRank: 0, kvUsedBlocks });
    const envelope = envelopeMsgpack({ publisherId: spoil.publisherId ?? this.publisherId, sequence: spoil.sequence ?? sequence, publishedAt: 1n, topic: spoil.topic ?? KV_METRICS_TOPIC, payload });
    await this.pub.send([Buffer.from(KV_METRICS_TOPIC), u64be(this.publisherId), u64be(sequence), zmqFrame(envelope)]);
  }
}

const MISMATCHES: [string, (p: LoadPublisher) => { publisherId?: bigint; sequence?: bigint; topic?: string }][] = [
  ['another publisher', (p) => ({ publisherId: p.publisherId + 1n })],
  ['another sequence', (p) => ({ sequence: p.sequence + 5n })],
  ['another topic', () => ({ topic: 'kv-events' })],
];

test.each(MISMATCHES)('an envelope naming %s than its frames clears that publisher’s load (counted, logged); another publisher’s load is kept', async (_, spoil) => {
  const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
  const logger = { info: () => undefined, warn: (obj: object, msg?: string) => void warnings.push({ obj: obj as Record<string, unknown>, msg: msg ?? '' }), error: () => undefined };
  const a = new LoadPublisher(71n, 41n);
  const b = new LoadPublisher(72n, 42n);
  const plane = new DynamoEventPlane({ sink: { events: () => undefined, reset: () => undefined }, logger });
  const observed = (worker: bigint): number | undefined => plane.reportedBlocks().get(worker)?.get(0);
  try {
    const channels: EventPlaneChannels = { subjects: [], streams: [], zmq: [], load: [], loadZmq: [await a.bind(), await b.bind()] };
    const ranks = { dpStartRank: 0, dpSize: 1 };
    await plane.update(channels, new Map([[41n, ranks], [42n, ranks]]));
    // The SUBs join asynchronously: reports until each is observed.
    await waitFor(async () => observed(41n) === 5 || (await a.report(5), false), 'worker 41’s first report', 5_000, 20);
    await waitFor(async () => observed(42n) === 9 || (await b.report(9), false), 'worker 42’s first report', 5_000, 20);
    const before = plane.metrics();

    await a.report(666, spoil(a));
    await waitFor(() => observed(41n) === undefined, 'worker 41’s load cleared by its publisher’s fault');
    expect(plane.reportedBlocks().has(41n)).toBe(false);
    expect(observed(42n)).toBe(9);
    expect(plane.metrics()).toMatchObject({ malformed: before.malformed + 1, loadFaults: before.loadFaults + 1 });
    const logged = warnings.filter((w) => /kv_metrics channel fault/.test(w.msg));
    expect(logged.map((w) => w.obj.cleared)).toEqual([['41']]);

    // The publisher's next good report is observed again.
    await a.report(6);
    await waitFor(() => observed(41n) === 6, 'worker 41’s next report');
    expect(observed(42n)).toBe(9);
  } finally {
    await plane.close();
    a.pub.close();
    b.pub.close();
  }
});

describeWithNatsAndEtcd('kv_metrics on NATS', () => {
  let nats: NatsServer;
  let nc: NatsConnection;
  beforeEach(async () => {
    nats = await new NatsServer().start();
    nc = await connect({ servers: nats.url });
  });
  afterEach(async () => {
    await nc.close();
    await nats.stop();
  });

  test('a message that does not decode clears the load reported on its subject (counted, logged); another subject’s load is kept', async () => {
    const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
    const logger = { info: () => undefined, warn: (obj: object, msg?: string) => void warnings.push({ obj: obj as Record<string, unknown>, msg: msg ?? '' }), error: () => undefined };
    const plane = new DynamoEventPlane({ natsServers: [nats.url], sink: { events: () => undefined, reset: () => undefined }, logger });
    const subjects = ['namespace.ns.component.a.endpoint.generate.kv_metrics', 'namespace.ns.component.b.endpoint.generate.kv_metrics'];
    let sequence = 0n;
    const report = async (subject: string, workerId: bigint, kvUsedBlocks: number): Promise<void> => {
      nc.publish(subject, envelopeMsgpack({ publisherId: 7n + workerId, sequence: sequence++, publishedAt: 1n, topic: KV_METRICS_TOPIC, payload: activeLoadMsgpack({ workerId, dpRank: 0, kvUsedBlocks }) }));
      await nc.flush();
    };
    const observed = (worker: bigint): number | undefined => plane.reportedBlocks().get(worker)?.get(0);
    try {
      const ranks = { dpStartRank: 0, dpSize: 1 };
      await plane.update({ subjects: [], streams: [], zmq: [], load: subjects, loadZmq: [] }, new Map([[41n, ranks], [42n, ranks]]));
      // Core NATS drops what is published before the subscription: reports until each is observed.
      await waitFor(async () => observed(41n) === 5 || (await report(subjects[0], 41n, 5), false), 'worker 41’s first report', 5_000, 20);
      await waitFor(async () => observed(42n) === 9 || (await report(subjects[1], 42n, 9), false), 'worker 42’s first report', 5_000, 20);
      const before = plane.metrics();

      nc.publish(subjects[0], Buffer.from('not msgpack'));
      await nc.flush();
      await waitFor(() => observed(41n) === undefined, 'worker 41’s load cleared by its subject’s fault');
      expect(observed(42n)).toBe(9);
      expect(plane.metrics()).toMatchObject({ malformed: before.malformed + 1, loadFaults: before.loadFaults + 1 });
      expect(warnings.filter((w) => /kv_metrics channel fault/.test(w.msg)).map((w) => [w.obj.channel, w.obj.cleared])).toEqual([[subjects[0], ['41']]]);

      await report(subjects[0], 41n, 6);
      await waitFor(() => observed(41n) === 6, 'worker 41’s next report');
    } finally {
      await plane.close();
    }
  });
});
