// The server side of bench/fanout-scale in a process of its own, so that its CPU time (all threads)
// and memory are the server's alone:
//   node fanout-host.js relay|bare POOLS BUCKETS
// `relay` serves the pools through the relay's transport and publication (startRelayServer over a
// TestSource); `bare` is a grpc-js server that writes the same FilterUpdate bytes to every open
// SubscribeKvPool call of the pool. Driven over the IPC channel:
//   → {address}                     once listening
//   ← {cmd: 'memory'}               → {memory: process.memoryUsage() after full collections}
//   ← {cmd: 'start', window}        publish up to `window` deltas ahead of delivery, per pool
//   ← {acks: [pool, delivered, …]}  deltas every subscriber of the pool received
//   ← {cmd: 'pause'}                publish no more → {paused: deltas published per pool}
import type * as grpc from '@grpc/grpc-js';
import { encodeDelta, encodeSnapshotChunks } from '../../src/native';
import { filterUpdateMessage } from '../../src/publication/frames';
import { startRelayServer } from '../../src/transport/server';
import { FilterUpdateKind } from '../../src/wire/enums';
import type { RelayIdentity, SubscribeKvPoolRequest } from '../../src/wire/types';
import { TestSource, testProducer } from '../../test/support/test-source';
import { startBareServer } from './bare-grpc';

export const FANOUT_RELAY: RelayIdentity = { drtInstanceId: 1n, relayIncarnation: 2n };
/** Images per delta: one publication window at the default threshold of 16 events. */
export const FANOUT_IMAGES = 16;

/** The producer of pool `pool` (0-based) in both processes. */
export function fanoutProducer(pool: number, buckets: number) {
  return testProducer({ pool: pool + 1, bucketCount: buckets });
}

/** Delta `sequence` of a pool: FANOUT_IMAGES bucket images. */
function images(sequence: bigint, buckets: number): Array<[number, bigint]> {
  return Array.from({ length: FANOUT_IMAGES }, (_, i) => [(Number(sequence) * FANOUT_IMAGES + i) % buckets, sequence]);
}

type Publish = (pool: number, sequence: bigint) => void;

async function relayServer(pools: number, buckets: number, subscribers: number): Promise<{ address: string; publish: Publish }> {
  const source = new TestSource();
  const feeds = Array.from({ length: pools }, (_, p) => source.attachPool(fanoutProducer(p, buckets)));
  const server = await startRelayServer({
    source,
    bind: '127.0.0.1:0',
    relay: FANOUT_RELAY,
    options: {
      limits: {
        maxPoolStreamsTotal: subscribers,
        maxSubscribersPerPool: Math.ceil(subscribers / pools),
        maxInitializedPoolHubs: pools,
        maxConnections: subscribers + 16,
        // Every subscriber of the bench connects from 127.0.0.1.
        maxConnectionsPerIp: subscribers + 16,
      },
      timing: { poolHeartbeatMs: 600_000 },
    },
  });
  return { address: server.address, publish: (pool, sequence) => void feeds[pool].publish(images(sequence, buckets)) };
}

async function bareServer(pools: number, buckets: number): Promise<{ address: string; publish: Publish }> {
  const calls = Array.from({ length: pools }, () => new Set<grpc.ServerWritableStream<unknown, unknown>>());
  const producers = Array.from({ length: pools }, (_, p) => fanoutProducer(p, buckets));
  // The bytes the relay sends a new subscriber of a fresh pool: its snapshot at sequence 0, one
  // chunk at these sizes, encoded once per pool.
  const snapshots = producers.map((producer) =>
    encodeSnapshotChunks(producer.ckfFormat!, producer.poolId!.dcId, 0n, new BigUint64Array(buckets)).map((chunk) =>
      filterUpdateMessage(FANOUT_RELAY, producer, 0n, 0n, FilterUpdateKind.SNAPSHOT_CHUNK, chunk),
    ),
  );
  const server = await startBareServer((call) => {
    const request = call.request as SubscribeKvPoolRequest;
    const pool = Number(request.expectedProducer!.poolId!.dcId & 0xffff_ffffn) - 1;
    calls[pool].add(call);
    call.on('cancelled', () => calls[pool].delete(call));
    for (const chunk of snapshots[pool]) call.write(chunk);
  });
  return {
    address: server.address,
    publish(pool, sequence) {
      const producer = producers[pool];
      const pairs = images(sequence, buckets);
      const bucketIds = Uint32Array.from(pairs, ([b]) => b);
      const values = BigUint64Array.from(pairs, ([, v]) => v);
      const payload = encodeDelta(producer.ckfFormat!, producer.poolId!.dcId, sequence - 1n, sequence, bucketIds, values);
      const bytes = filterUpdateMessage(FANOUT_RELAY, producer, sequence - 1n, sequence, FilterUpdateKind.DELTA, payload);
      for (const call of calls[pool]) call.write(bytes);
    },
  };
}

interface Command {
  cmd?: 'memory' | 'start' | 'pause';
  window?: number;
  acks?: number[];
}

async function main(mode: string, pools: number, buckets: number, subscribers: number): Promise<void> {
  const { address, publish } = mode === 'relay' ? await relayServer(pools, buckets, subscribers) : await bareServer(pools, buckets);
  const published = new Array<number>(pools).fill(0);
  const delivered = new Array<number>(pools).fill(0);
  let window = 0;
  const topUp = (pool: number): void => {
    while (published[pool] - delivered[pool] < window) {
      published[pool] += 1;
      publish(pool, BigInt(published[pool]));
    }
  };
  process.on('message', (message: Command) => {
    if (message.acks) {
      for (let i = 0; i < message.acks.length; i += 2) {
        delivered[message.acks[i]] = message.acks[i + 1];
        topUp(message.acks[i]);
      }
    } else if (message.cmd === 'memory') {
      global.gc!();
      global.gc!();
      process.send!({ memory: process.memoryUsage() });
    } else if (message.cmd === 'start') {
      window = message.window!;
      for (let p = 0; p < pools; p += 1) topUp(p);
    } else if (message.cmd === 'pause') {
      window = 0;
      process.send!({ paused: published });
    }
  });
  process.send!({ address });
}

if (require.main === module) {
  main(process.argv[2], Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5])).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
