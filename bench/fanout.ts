// Pool fan-out: one pool, 1 / 16 / 64 subscribers over loopback, a steady closed-loop stream of
// deltas (at most WINDOW deltas not yet received by every subscriber). Measures deltas/s delivered
// to all subscribers and producer→subscriber latency, against a bare grpc-js server that writes the
// same FilterUpdate bytes to the same number of streams in the same run.
import * as grpc from '@grpc/grpc-js';
import { performance } from 'perf_hooks';
import { encodeDelta } from '../src/native';
import { filterUpdateMessage } from '../src/publication/frames';
import { startRelayServer } from '../src/transport/server';
import { RELAY_CONTRACT_MARKER } from '../src/wire/constants';
import { decodeMessage } from '../src/wire/codec';
import { FilterUpdateKind } from '../src/wire/enums';
import { serviceDefinition, type KvEventRelayClient } from '../src/wire/service';
import type { ProducerIdentity, RelayIdentity } from '../src/wire/types';
import { TestSource, testProducer } from '../test/support/test-source';
import { rawClients, startBareServer } from './support/bare-grpc';
import type { BenchResult } from './support/result';
import { median, round } from './support/timing';

const SUBSCRIBERS = [1, 16, 64];
const DURATION_MS = 1000;
/** Relay and bare runs alternate this many times per size; medians are reported (the host is shared). */
const ROUNDS = 3;
const WINDOW = 8;
/** Images per delta: one publication window at the default threshold of 16 events. */
const IMAGES = 16;
const BUCKETS = 1 << 16;
const RELAY: RelayIdentity = { drtInstanceId: 1n, relayIncarnation: 2n };

interface Measurement {
  deltasPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/** Something that publishes delta `sequence` to every subscriber. */
interface Publisher {
  publish(sequence: bigint): void;
}

function images(sequence: bigint): { buckets: Uint32Array; values: BigUint64Array } {
  const buckets = new Uint32Array(IMAGES);
  const values = new BigUint64Array(IMAGES);
  for (let i = 0; i < IMAGES; i += 1) {
    buckets[i] = (Number(sequence) * IMAGES + i) % BUCKETS;
    values[i] = sequence;
  }
  return { buckets, values };
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

/** Runs the closed loop: streams are open and past their snapshot; deltas flow for DURATION_MS. */
async function measure(streams: grpc.ClientReadableStream<Buffer>[], publisher: Publisher, firstSequence: bigint): Promise<Measurement> {
  const n = streams.length;
  const publishedAt = new Map<bigint, number>();
  const receivedBy = new Map<bigint, number>();
  const latencies: number[] = [];
  let next = firstSequence;
  let completed = 0;
  let outstanding = 0;
  let stopAt = Infinity;
  let start = 0;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));

  const pump = (): void => {
    while (outstanding < WINDOW && performance.now() < stopAt) {
      publishedAt.set(next, performance.now());
      outstanding += 1;
      publisher.publish(next);
      next += 1n;
    }
    if (outstanding === 0) finish();
  };
  for (const stream of streams) {
    stream.on('data', (bytes: Buffer) => {
      const update = decodeMessage('FilterUpdate', bytes);
      if (update.kind !== FilterUpdateKind.DELTA) return;
      const now = performance.now();
      latencies.push(now - publishedAt.get(update.sequence)!);
      const count = (receivedBy.get(update.sequence) ?? 0) + 1;
      if (count < n) {
        receivedBy.set(update.sequence, count);
        return;
      }
      receivedBy.delete(update.sequence);
      publishedAt.delete(update.sequence);
      completed += 1;
      outstanding -= 1;
      setImmediate(pump);
    });
  }
  start = performance.now();
  stopAt = start + DURATION_MS;
  pump();
  await done;
  const elapsed = performance.now() - start;
  const sorted = Float64Array.from(latencies).sort();
  return { deltasPerSecond: (completed * 1000) / elapsed, p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99) };
}

async function throughRelay(n: number): Promise<Measurement> {
  const source = new TestSource();
  const producer = testProducer({ bucketCount: BUCKETS });
  const feed = source.attachPool(producer);
  const server = await startRelayServer({
    source,
    bind: '127.0.0.1:0',
    relay: RELAY,
    options: { limits: { maxSubscribersPerPool: 64, maxConnectionsPerIp: 64 }, timing: { poolHeartbeatMs: 60_000 } },
  });
  const raw = rawClients(server.address, n);
  const streams = subscribeAll(raw, 'bench', producer);
  for (const s of streams) s.on('error', () => undefined); // cancelled at the end
  await Promise.all(streams.map((s) => new Promise((resolve) => s.once('data', resolve))));
  const publisher: Publisher = {
    publish(sequence) {
      const { buckets, values } = images(sequence);
      feed.publish(Array.from(buckets, (b, i) => [b, values[i]] as [number, bigint]));
    },
  };
  const result = await measure(streams, publisher, 1n);
  for (const s of streams) s.cancel();
  for (const c of raw) c.close();
  await server.shutdown();
  return result;
}

/** The same bytes through a grpc-js server with nothing but a set of open calls. */
async function throughBareServer(n: number, producer: ProducerIdentity): Promise<Measurement> {
  const calls = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  let opened: () => void = () => undefined;
  const allOpen = new Promise<void>((resolve) => (opened = resolve));
  const server = await startBareServer((call) => {
    calls.add(call);
    call.on('cancelled', () => calls.delete(call));
    call.write(Buffer.alloc(0)); // stands in for the snapshot
    if (calls.size === n) opened();
  });
  const raw = rawClients(server.address, n);
  const streams = subscribeAll(raw, 'bare', producer);
  await allOpen;
  for (const s of streams) s.on('error', () => undefined); // cancelled at the end
  await Promise.all(streams.map((s) => new Promise((resolve) => s.once('data', resolve))));
  const format = producer.ckfFormat!;
  const publisher: Publisher = {
    publish(sequence) {
      const { buckets, values } = images(sequence);
      const payload = encodeDelta(format, producer.poolId!.dcId, sequence - 1n, sequence, buckets, values);
      const bytes = filterUpdateMessage(RELAY, producer, sequence - 1n, sequence, FilterUpdateKind.DELTA, payload);
      for (const call of calls) call.write(bytes);
    },
  };
  const result = await measure(streams, publisher, 1n);
  for (const s of streams) s.cancel();
  for (const c of raw) c.close();
  await server.close();
  return result;
}

/** One SubscribeKvPool call per client, reading the response bytes as they arrive. */
function subscribeAll(clients: grpc.Client[], prefix: string, producer: ProducerIdentity): grpc.ClientReadableStream<Buffer>[] {
  return clients.map(
    (c, i) =>
      (c as unknown as KvEventRelayClient).subscribeKvPool({
        subscriberId: `${prefix}-${i}`,
        contractMarker: RELAY_CONTRACT_MARKER,
        expectedProducer: producer,
      }) as unknown as grpc.ClientReadableStream<Buffer>,
  );
}

function medianOf(runs: Measurement[]): Measurement {
  return {
    deltasPerSecond: median(runs.map((m) => m.deltasPerSecond)),
    p50Ms: median(runs.map((m) => m.p50Ms)),
    p99Ms: median(runs.map((m) => m.p99Ms)),
  };
}

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const producer = testProducer({ bucketCount: BUCKETS });
  for (const n of SUBSCRIBERS) {
    const bareRuns: Measurement[] = [];
    const relayRuns: Measurement[] = [];
    for (let r = 0; r < ROUNDS; r += 1) {
      bareRuns.push(await throughBareServer(n, producer));
      relayRuns.push(await throughRelay(n));
    }
    const bare = medianOf(bareRuns);
    const relay = medianOf(relayRuns);
    const note = `${IMAGES}-image deltas, ${WINDOW} in flight, ${n} connection(s), median of ${ROUNDS} alternating runs`;
    results.push({
      name: `pool fan-out to ${n} subscriber(s): deltas/s delivered to all`,
      value: round(relay.deltasPerSecond, 0),
      unit: 'deltas/s',
      baseline: { name: 'bare grpc-js server, same bytes', value: round(bare.deltasPerSecond, 0) },
      ratio: round(relay.deltasPerSecond / bare.deltasPerSecond, 2),
      note,
    });
    results.push({
      name: `pool fan-out to ${n} subscriber(s): p50 producer→subscriber latency`,
      value: round(relay.p50Ms, 3),
      unit: 'ms',
      baseline: { name: 'bare grpc-js server', value: round(bare.p50Ms, 3) },
      ratio: round(relay.p50Ms / bare.p50Ms, 2),
    });
    results.push({
      name: `pool fan-out to ${n} subscriber(s): p99 producer→subscriber latency`,
      value: round(relay.p99Ms, 3),
      unit: 'ms',
      baseline: { name: 'bare grpc-js server', value: round(bare.p99Ms, 3) },
      ratio: round(relay.p99Ms / bare.p99Ms, 2),
    });
  }
  return results;
}
