// Where the deployment advertises its KV event sources (v1/event_sources), the event plane trusts an
// envelope's publisher only for the (worker, dp rank) it is advertised for, and an Ambiguous rank not
// at all (fail closed; identity-topology-load.md §5.2): real ZMQ PUB sockets feed a DynamoEventPlane
// whose sink records what it applied and which sources it reset.
import { Publisher } from 'zeromq';
import { DynamoEventPlane } from '../../src/dynamo/event-plane/plane';
import { KV_EVENT_TOPIC, type EventPlaneChannels, type WorkerRanks } from '../../src/dynamo/discovery/project';
import { sourceKey } from '../../src/dynamo/event-plane/order';
import type { AdvertisedSources } from '../../src/dynamo/event-plane/source-gate';
import type { IngestSink } from '../../src/ingest/types';
import { envelopeMsgpack, routerEventMsgpack, u64be, zmqFrame } from '../support/dynamo-wire';
import { waitFor } from '../support/waitFor';

const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
const W = 41n; // ranks 0 and 1, with advertised publishers
const OTHER = 42n; // an endpoint without v1/event_sources entries
const workers = new Map<bigint, WorkerRanks>([
  [W, { dpStartRank: 0, dpSize: 2 }],
  [OTHER, { dpStartRank: 0, dpSize: 1 }],
]);
const P0 = 501n;
const P1 = 502n;

/** `body` gets a send(worker, rank, publisher) that returns the message's unique block id, and what the sink saw. */
async function withPlane(body: (o: { plane: DynamoEventPlane; channels: EventPlaneChannels; send: (workerId: bigint, dpRank: number, publisher: bigint) => Promise<bigint>; applied: Set<bigint>; resets: string[] }) => Promise<void>): Promise<void> {
  const pub = new Publisher();
  await pub.bind('tcp://127.0.0.1:*');
  const applied = new Set<bigint>();
  const resets: string[] = [];
  const sink: IngestSink = {
    events: (b) => void b.words.forEach((w) => applied.add(w)),
    reset: (source, reason) => void resets.push(`${sourceKey(source)} ${reason}`),
  };
  const plane = new DynamoEventPlane({ sink, logger });
  const channels: EventPlaneChannels = { subjects: [], streams: [], zmq: [pub.lastEndpoint!], load: [], loadZmq: [] };
  const sequences = new Map<bigint, bigint>();
  let block = 10_000n;
  const send = async (workerId: bigint, dpRank: number, publisher: bigint): Promise<bigint> => {
    const sequence = sequences.get(publisher) ?? 0n;
    sequences.set(publisher, sequence + 1n);
    const id = block++;
    const payload = routerEventMsgpack({ workerId, residencyDomain: 'worker', eventId: sequence, dpRank, data: { stored: { parentHash: null, blocks: [{ blockHash: id, tokensHash: id + 1_000_000n }] } } });
    const envelope = envelopeMsgpack({ publisherId: publisher, sequence, publishedAt: 1n, topic: KV_EVENT_TOPIC, payload });
    await pub.send([Buffer.from(KV_EVENT_TOPIC), u64be(publisher), u64be(sequence), zmqFrame(envelope)]);
    return id;
  };
  try {
    await body({ plane, channels, send, applied, resets });
  } finally {
    await plane.close();
    pub.close();
  }
}

/** Sends until the event is applied (the SUB joins asynchronously; a PUB drops what no one hears). */
async function sendUntilApplied(send: () => Promise<bigint>, applied: Set<bigint>, what: string): Promise<void> {
  const sent: bigint[] = [];
  await waitFor(async () => sent.some((id) => wasApplied(applied, id)) || (sent.push(await send()), false), what, 5_000, 20);
}

/** The sink's words carry a stored block's engine id or its tokens hash (id + 1e6). */
function wasApplied(applied: Set<bigint>, id: bigint): boolean {
  return applied.has(id) || applied.has(id + 1_000_000n);
}

test('an envelope publisher advertised for another (worker, rank) is dropped and counted malformed; unadvertised endpoints as before', async () => {
  await withPlane(async ({ plane, channels, send, applied }) => {
    const sources: AdvertisedSources = { publishers: [[P0, { workerId: W, dpRank: 0 }], [P1, { workerId: W, dpRank: 1 }]], ambiguous: [] };
    await plane.update(channels, workers, sources);
    await sendUntilApplied(() => send(W, 0, P0), applied, 'rank 0 from its own publisher');
    const before = plane.metrics().malformed;

    // P0 speaks for rank 0 only: its event for rank 1 is dropped; rank 1's own publisher and the
    // worker of an endpoint without entries (any publisher) are applied as before. One socket: in order.
    const foreign = await send(W, 1, P0);
    const own = await send(W, 1, P1);
    const unadvertised = await send(OTHER, 0, 777n);
    await waitFor(() => wasApplied(applied, own) && wasApplied(applied, unadvertised), 'the events after it applied');
    expect(wasApplied(applied, foreign)).toBe(false);
    expect(plane.metrics().malformed - before).toBe(1);
    expect(plane.stats().find((s) => s.source.workerId === W && s.source.dpRank === 1)!.malformed).toBe(1);

    // Without advertised sources the same message is applied, as it was before event sources existed.
    await plane.update(channels, workers);
    const again = await send(W, 1, P0);
    await waitFor(() => wasApplied(applied, again), 'the same publisher’s event for rank 1, ungated');
    expect(plane.metrics().malformed - before).toBe(1);
  });
});

test('an Ambiguous rank has its events dropped and is reset once when it becomes Ambiguous, and once when it is Active again', async () => {
  await withPlane(async ({ plane, channels, send, applied, resets }) => {
    const active: AdvertisedSources = { publishers: [[P0, { workerId: W, dpRank: 0 }], [P1, { workerId: W, dpRank: 1 }]], ambiguous: [] };
    await plane.update(channels, workers, active);
    await sendUntilApplied(() => send(W, 0, P0), applied, 'rank 0 applied while Active');
    expect(resets).toEqual([]);

    const ambiguous: AdvertisedSources = { publishers: [...active.publishers, [503n, { workerId: W, dpRank: 0 }]], ambiguous: [{ workerId: W, dpRank: 0 }] };
    await plane.update(channels, workers, ambiguous);
    expect(resets).toEqual([`${W}:0 restart`]);
    // Another discovery pass with the rank still Ambiguous: no second reset.
    await plane.update(channels, workers, ambiguous);
    expect(resets).toEqual([`${W}:0 restart`]);
    const dropped = [await send(W, 0, P0), await send(W, 0, 503n)];
    const rank1 = await send(W, 1, P1);
    await waitFor(() => wasApplied(applied, rank1), 'rank 1 (Active) applied');
    expect(dropped.filter((id) => wasApplied(applied, id))).toEqual([]);
    expect(plane.stats().find((s) => s.source.workerId === W && s.source.dpRank === 0)!.rejectedRanks).toBe(2);

    // The extra incarnation gone: Active again, reset once more, and its events applied.
    await plane.update(channels, workers, active);
    expect(resets).toEqual([`${W}:0 restart`, `${W}:0 restart`]);
    const back = await send(W, 0, P0);
    await waitFor(() => wasApplied(applied, back), 'rank 0 applied once Active again');
    expect(resets.filter((r) => r.endsWith('restart'))).toHaveLength(2);
  });
});

test('an Active rank takes events only from its advertised publisher: another one, advertised nowhere, is dropped and counted malformed', async () => {
  await withPlane(async ({ plane, channels, send, applied }) => {
    const sources: AdvertisedSources = { publishers: [[P0, { workerId: W, dpRank: 0 }]], ambiguous: [] };
    await plane.update(channels, workers, sources);
    await sendUntilApplied(() => send(W, 0, P0), applied, 'rank 0 from its own publisher');
    const before = plane.metrics().malformed;

    // A publisher with no entry (a restarted worker's new incarnation not advertised yet) for Active
    // rank 0 is refused; for rank 1, which has no entry (Missing), it is applied as before.
    const stranger = await send(W, 0, 601n);
    const missingRank = await send(W, 1, 601n);
    const own = await send(W, 0, P0);
    await waitFor(() => wasApplied(applied, own) && wasApplied(applied, missingRank), 'the events after it applied');
    expect(wasApplied(applied, stranger)).toBe(false);
    expect(plane.metrics().malformed - before).toBe(1);
    expect(plane.stats().find((s) => s.source.workerId === W && s.source.dpRank === 0)!.malformed).toBe(1);
  });
});

test('every change of a rank\'s binding but Missing -> Active resets it once: its entry gone, its publisher replaced', async () => {
  await withPlane(async ({ plane, channels, resets }) => {
    const rank0 = (publisher: bigint): AdvertisedSources => ({ publishers: [[publisher, { workerId: W, dpRank: 0 }]], ambiguous: [] });
    await plane.update(channels, workers, rank0(P0)); // Missing -> Active: no reset
    await plane.update(channels, workers, rank0(P0));
    expect(resets).toEqual([]);
    await plane.update(channels, workers, rank0(P1)); // Active(P0) -> Active(P1) in one pass
    expect(resets).toEqual([`${W}:0 restart`]);
    await plane.update(channels, workers, { publishers: [[P1, { workerId: W, dpRank: 1 }]], ambiguous: [] }); // rank 0 Active -> Missing; rank 1 Missing -> Active
    expect(resets).toEqual([`${W}:0 restart`, `${W}:0 restart`]);
  });
});
