// The pools an ingest thread hosts (pool-host.ts), driven through its host interface as the thread
// drives it: this test stands in for the thread's port (HostThread: what the host posts is kept).
// Each generation leaves the host's map once its native state is freed, however it ended: a pool
// re-fenced again and again keeps one entry, its live generation's.
import { PoolCounters } from '../../src/producer/pool-counters';
import { createHost } from '../../src/producer/pool-host';
import type { FromPoolHost, HostedPoolOptions, ToPoolHost } from '../../src/producer/pool-host-protocol';
import type { ProducerIdentity } from '../../src/wire/types';
import { packEngineBatch } from '../support/packed';
import { waitFor } from '../support/waitFor';

const SEED = 0x5deece66d1b54a33n;
const producer: ProducerIdentity = {
  producerIncarnation: 42n,
  layoutGeneration: 1n,
  ckfFormat: { formatVersion: 1, seed: SEED, bucketCount: 1024n, fingerprintBits: 16, slotsPerBucket: 4 },
};
const options: HostedPoolOptions = {
  key: 'pool',
  producer,
  dcId: 0x04f110c98b1bfc48n,
  publicationThreshold: 1,
  publicationDelayMs: 1,
  reserve: { blocks: 1 << 16, perSource: 1 << 16, sources: [{ workerId: 7n, dpRank: 0 }] },
};

/** A batch the native state refuses (an event kind it does not know): its generation fences. */
function refused() {
  const b = packEngineBatch(7n, [{ type: 'AllBlocksCleared' }], { kvBlockSize: 4 });
  return { ...b, meta: Uint32Array.from(b.meta, (v, i) => (i === 0 ? 99 : v)) };
}

test('a re-fenced pool\'s generations leave the host once their states are freed: after N fences one entry is left', async () => {
  const posted: FromPoolHost[] = [];
  const host = createHost({ post: (m) => posted.push(m as FromPoolHost), overflowed: () => undefined });
  const open = (pool: number): void =>
    host.receive({ type: 'open', pool, options, counters: new PoolCounters().shared, unhandled: new SharedArrayBuffer(4), awaitPredecessor: pool > 1 } satisfies ToPoolHost);
  const heard = (type: FromPoolHost['type'], pool: number) => posted.some((m) => m.type === type && m.pool === pool);
  const generations = 5;
  open(1);
  for (let pool = 1; pool <= generations; pool++) {
    expect(host.sink(pool)).toBeDefined();
    // As the producer does: the next generation opens at the fence and makes its state once this one's is freed.
    host.receive({ type: 'events', pool, burst: refused() } satisfies ToPoolHost);
    await waitFor(() => heard('ended', pool), `generation ${pool} fenced`);
    expect(posted.find((m) => m.type === 'ended' && m.pool === pool)).toMatchObject({ how: 'fenced' });
    open(pool + 1);
    await waitFor(() => heard('released', pool), `generation ${pool} freed`);
    host.receive({ type: 'predecessorReleased', pool: pool + 1 } satisfies ToPoolHost);
  }
  const live = Array.from({ length: generations + 1 }, (_, i) => i + 1).filter((pool) => host.sink(pool) !== undefined);
  expect(live).toEqual([generations + 1]);
  // A retired one leaves too, once freed.
  host.receive({ type: 'retire', pool: generations + 1 } satisfies ToPoolHost);
  await waitFor(() => heard('released', generations + 1), 'the last generation freed');
  expect(host.sink(generations + 1)).toBeUndefined();
});
