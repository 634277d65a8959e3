// A relay that lists more than a consumer should hold (src/client/replica-budget.ts): a real grpc-js
// server on loopback whose catalog announces many pools with the largest bucket table the wire
// allows (2^24 buckets, 128 MiB each, allocated by a replica at the snapshot's first chunk), and
// answers every SubscribeKvPool with that first chunk. The consumer replicates only what its budget
// holds, says so once in an error event, and takes the rest when room is freed.
import type * as grpc from '@grpc/grpc-js';
import { ReplicaBudget } from '../../src/client/replica-budget';
import { ShardedRelayClient } from '../../src/client/shards';
import type { ClientErrorEvent } from '../../src/client/stream-events';
import { DEFAULT_CLIENT_MAX_REPLICA_BYTES, DEFAULT_CLIENT_MAX_REPLICA_POOLS } from '../../src/config/defaults';
import { encodeSnapshotChunk } from '../../src/native';
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../../src/wire/constants';
import { FilterUpdateKind } from '../../src/wire/enums';
import type { KvPoolDescriptor, ProducerIdentity, SubscribeKvPoolRequest } from '../../src/wire/types';
import { serve } from './fake-relay';
import { baseRegistration, catalogUpdate, descriptor, RELAY } from './fixtures';
import { perTestResources, record, testClient } from './helpers';
import { collectGarbage } from '../support/gc';
import { waitFor } from '../support/waitFor';

const MiB = 1024 * 1024;
const DC = 7n;
const EPOCH = 1n;

/** Pool `i` of the hostile catalog: its own identity digests, one dc, `bucketCount` buckets. */
function pool(i: number, bucketCount: bigint): KvPoolDescriptor {
  const d = descriptor(DC, [baseRegistration(`m${i}`)], { component: `c${i}` });
  const p = d.producer!;
  const digest = (fill: number) => new Uint8Array(16).fill(fill).map((b, k) => (k === 0 ? i : b));
  const producer: ProducerIdentity = {
    ...p,
    poolId: { ...p.poolId!, indexerDomain: { cacheSemantics: { ...p.poolId!.indexerDomain!.cacheSemantics!, digest: digest(1) }, routingScope: { ...p.poolId!.indexerDomain!.routingScope!, digest: digest(2) } } },
    ckfFormat: { ...p.ckfFormat!, bucketCount },
  };
  return { ...d, producer };
}

interface HostileRelay {
  address: string;
  server: grpc.Server;
  /** SubscribeKvPool calls so far. */
  subscriptions(): number;
  /** Writes a new catalog revision. */
  list(revision: bigint, pools: KvPoolDescriptor[]): void;
}

/** Lists `pools`; answers each pool subscription with the snapshot's first chunk and keeps it open. */
async function hostileRelay(pools: KvPoolDescriptor[]): Promise<HostileRelay> {
  const format = pools[0].producer!.ckfFormat!;
  // One first chunk serves every pool: same dc, epoch and format (the chunk names no pool).
  const chunk0 = encodeSnapshotChunk(format, DC, EPOCH, new BigUint64Array(Number(format.bucketCount)), 0);
  let subscriptions = 0;
  let catalogCall: grpc.ServerWritableStream<unknown, unknown> | undefined;
  const started = await serve({
    watchKvPoolCatalog: (call) => {
      catalogCall = call;
      call.write(catalogUpdate(1n, pools));
    },
    subscribeKvPool: (call) => {
      subscriptions += 1;
      const request = call.request as SubscribeKvPoolRequest;
      call.write({
        protocolVersion: RELAY_PROTOCOL_VERSION,
        relay: RELAY,
        producer: request.expectedProducer,
        baseSequence: EPOCH,
        sequence: EPOCH,
        sendTsUs: 0n,
        kind: FilterUpdateKind.SNAPSHOT_CHUNK,
        payload: chunk0,
        contractMarker: RELAY_CONTRACT_MARKER,
      });
    },
  });
  return {
    ...started,
    subscriptions: () => subscriptions,
    list: (revision, next) => catalogCall!.write(catalogUpdate(revision, next)),
  };
}

const budgetErrors = (errors: { args: [ClientErrorEvent] }[]): ClientErrorEvent[] =>
  errors.map((e) => e.args[0]).filter((e) => e.reason === 'ReplicaBudgetExceeded');

describe('replica memory budget against a hostile relay', () => {
  const t = perTestResources();

  it('16 pools of 128 MiB listed: the default budget (1 GiB) replicates 8, reports the rest once, and holds no more', async () => {
    expect([DEFAULT_CLIENT_MAX_REPLICA_POOLS, DEFAULT_CLIENT_MAX_REPLICA_BYTES]).toEqual([256, 1024 * MiB]);
    const relay = await hostileRelay(Array.from({ length: 16 }, (_, i) => pool(i, 1n << 24n)));
    t.fake = relay.server;
    collectGarbage(); // the relay's encoding scratch (a 128 MiB table) must not be counted, then freed, in the measurement
    const before = process.memoryUsage().arrayBuffers;
    t.client = testClient(relay.address);
    const events = record(t.client);
    t.client.start();
    await waitFor(() => budgetErrors(events.error).length === 1 && relay.subscriptions() === 8, 'the budget to refuse the ninth pool', 10_000);
    // Each subscription got its first chunk: the 8 tables (128 MiB each) are allocated.
    await waitFor(() => process.memoryUsage().arrayBuffers - before >= 8 * 128 * MiB, 'the eight tables', 10_000);
    // No ninth table (the first chunks in flight are a few MiB each).
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(DEFAULT_CLIENT_MAX_REPLICA_BYTES + 128 * MiB);
    expect(relay.subscriptions()).toBe(8);
    expect(t.client.poolStates()).toHaveLength(8);
    const [error] = budgetErrors(events.error);
    expect(error).toMatchObject({ plane: 'pool', next: 'wait' });
    expect(error.message).toContain('8 catalog pool(s) not replicated');
    expect(error.message).toContain(`${128 * MiB} bytes`);
  });

  it('maxPools boundary: 40 pools listed, 32 replicated; withdrawn pools make room for the refused ones; new refusals are reported again', async () => {
    const all = Array.from({ length: 40 }, (_, i) => pool(i, 16n));
    const relay = await hostileRelay(all);
    t.fake = relay.server;
    t.client = testClient(relay.address, { memoryBudget: { maxPools: 32 } });
    const events = record(t.client);
    t.client.start();
    await waitFor(() => relay.subscriptions() === 32 && budgetErrors(events.error).length === 1, 'the 33rd pool refused');
    expect(budgetErrors(events.error)[0].message).toContain('8 catalog pool(s) not replicated');

    relay.list(2n, all.slice(8)); // 8 withdrawn: the 8 refused ones fit now
    await waitFor(() => relay.subscriptions() === 40 && t.client!.poolStates().length === 32, 'the refused pools subscribed');
    expect(budgetErrors(events.error)).toHaveLength(1);

    relay.list(3n, [...all.slice(8), pool(100, 16n)]);
    await waitFor(() => budgetErrors(events.error).length === 2, 'the new pool refused');
    expect(relay.subscriptions()).toBe(40);
  });

  it('the shards of a ShardedRelayClient share one budget; a shard that leaves frees its room for another', async () => {
    const bucketCount = 1n << 16n; // 512 KiB tables
    const a = await hostileRelay([pool(1, bucketCount), pool(2, bucketCount)]);
    const b = await hostileRelay([pool(3, bucketCount), pool(4, bucketCount)]);
    const budget = new ReplicaBudget({ maxBytes: MiB });
    const client = new ShardedRelayClient([a.address, b.address], { subscriberId: 'hostile', backoff: { initialMs: 20, maxMs: 200 }, memoryBudget: budget });
    const errors: (ClientErrorEvent & { address: string })[] = [];
    client.on('error', (e) => errors.push(e));
    try {
      client.start();
      await waitFor(() => a.subscriptions() + b.subscriptions() === 2 && errors.some((e) => e.reason === 'ReplicaBudgetExceeded'), 'two pools in, the others refused');
      expect(budget.usage()).toEqual({ pools: 2, bytes: MiB });
      const full = [a, b].find((r) => r.subscriptions() === 2) ?? a;
      const other = full === a ? b : a;
      client.setAddresses([other.address]);
      await waitFor(() => other.subscriptions() === 2 && budget.usage().pools === 2, 'the remaining shard to take the freed room');
    } finally {
      client.close();
      a.server.forceShutdown();
      b.server.forceShutdown();
    }
    expect(budget.usage()).toEqual({ pools: 0, bytes: 0 });
  });

  it('a budget below 1 pool or byte is refused at construction', () => {
    expect(() => new ReplicaBudget({ maxPools: 0 })).toThrow('memoryBudget.maxPools must be a positive integer');
    expect(() => testClient('127.0.0.1:1', { memoryBudget: { maxBytes: 0.5 } })).toThrow('memoryBudget.maxBytes must be a positive integer');
  });
});
