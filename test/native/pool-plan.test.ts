// Planned batch execution (pool_plan.cc): a batch is planned chunk by chunk from the state before the
// chunk runs, so plans go stale when an earlier event of the same batch changes what a later one sees.
// These batches are built to make the plans stale, and must leave exactly the state that the same
// events applied one call at a time leave. Raw canonical batches must match the one-op calls.
import { PoolEvent, PoolFilterState, sequenceHashesFromBlocks } from '../../src/native';
import { applyCanonical, canonicalPool, checkChainPlanning } from '../support/native-testing';
import { expectThrows } from './hashing.helpers';

const chain = (tokensHashes: bigint[]) => Array.from(sequenceHashesFromBlocks(tokensHashes));

function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

const u64 = (r: () => number) => (BigInt(Math.floor(r() * 2 ** 32)) << 32n) | BigInt(Math.floor(r() * 2 ** 32));

function applyOneByOne(pool: PoolFilterState, events: readonly PoolEvent[]): (string | null)[] {
  return events.map((ev) => {
    if (ev.kind === 'stored') {
      return pool.store(ev.workerId, ev.dpRank, ev.parentHash, ev.startPosition ?? null, ev.blockHashes, ev.tokensHashes);
    }
    if (ev.kind === 'removed') return pool.remove(ev.workerId, ev.dpRank, ev.blockHashes);
    return pool.clear(ev.workerId, ev.dpRank);
  });
}

function expectSameAsOneByOne(events: readonly PoolEvent[], bucketCount: number): PoolFilterState {
  const batched = new PoolFilterState({ bucketCount });
  const single = new PoolFilterState({ bucketCount });
  const result = batched.apply(events);
  expect(result.outcomes).toEqual(applyOneByOne(single, events));
  expect(batched.words()).toEqual(single.words());
  expect(batched.stats()).toEqual(single.stats());
  expect(batched.drain()).toEqual(single.drain());
  return batched;
}

const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => BigInt(from + i));

describe('plans made stale by earlier events of the same batch', () => {
  test('a child whose parent is stored earlier in the batch chains from it', () => {
    const t = [11n, 12n, 13n, 14n];
    const events: PoolEvent[] = [
      { kind: 'stored', workerId: 1n, dpRank: 0, parentHash: null, blockHashes: [1n, 2n], tokensHashes: t.slice(0, 2) },
      { kind: 'stored', workerId: 1n, dpRank: 0, parentHash: 2n, blockHashes: [3n, 4n], tokensHashes: t.slice(2) },
    ];
    const pool = expectSameAsOneByOne(events, 64);
    for (const c of chain(t)) expect(pool.owners(c)).toBe(1);
  });

  test('a parent re-mapped earlier in the batch (removed, stored again with other tokens) is followed', () => {
    const setup: PoolEvent[] = [
      { kind: 'stored', workerId: 1n, dpRank: 0, parentHash: null, blockHashes: [1n], tokensHashes: [100n] },
    ];
    const events: PoolEvent[] = [
      ...setup,
      { kind: 'removed', workerId: 1n, dpRank: 0, blockHashes: [1n] },
      { kind: 'stored', workerId: 1n, dpRank: 0, parentHash: null, blockHashes: [1n], tokensHashes: [200n] },
      { kind: 'stored', workerId: 1n, dpRank: 0, parentHash: 1n, blockHashes: [2n], tokensHashes: [300n] },
    ];
    // The parent is already stored when the batch is planned, with the old hash.
    const batched = new PoolFilterState({ bucketCount: 64 });
    const single = new PoolFilterState({ bucketCount: 64 });
    batched.apply(setup);
    applyOneByOne(single, setup);
    expect(batched.apply(events.slice(1)).outcomes).toEqual(applyOneByOne(single, events.slice(1)));
    expect(batched.words()).toEqual(single.words());
    expect(batched.stats()).toEqual(single.stats());
    expect(batched.owners(chain([200n, 300n])[1])).toBe(1);
    expect(batched.owners(chain([100n, 300n])[1])).toBe(0);
  });

  test('removals of blocks stored earlier in the batch, repeated ids, and a clear between stores', () => {
    const events: PoolEvent[] = [
      { kind: 'stored', workerId: 1n, dpRank: 0, parentHash: null, blockHashes: ids(1, 8), tokensHashes: ids(1001, 8) },
      { kind: 'stored', workerId: 2n, dpRank: 0, parentHash: null, blockHashes: ids(1, 8), tokensHashes: ids(1001, 8) },
      { kind: 'removed', workerId: 1n, dpRank: 0, blockHashes: [8n, 7n, 7n, 6n, 99n] },
      { kind: 'cleared', workerId: 2n, dpRank: 0 },
      { kind: 'stored', workerId: 2n, dpRank: 0, parentHash: 3n, blockHashes: ids(20, 4), tokensHashes: ids(2001, 4) },
      { kind: 'stored', workerId: 1n, dpRank: 0, parentHash: 3n, blockHashes: ids(20, 4), tokensHashes: ids(2001, 4) },
      { kind: 'removed', workerId: 2n, dpRank: 0, blockHashes: ids(1, 8) },
      { kind: 'stored', workerId: 1n, dpRank: 0, parentHash: null, blockHashes: [8n], tokensHashes: [1008n] },
    ];
    const pool = expectSameAsOneByOne(events, 64);
    expect(pool.stats().unknownRemovals).toBe(1 + 1 + 8); // repeated 7, 99, and worker 2 after its clear
    expect(pool.stats().parentNotFound).toBe(1); // worker 2's parent went with the clear
  });

  test('a random workload in one batch spanning many plan chunks, with chains crossing them', () => {
    const r = rng(5);
    const events: PoolEvent[] = [];
    const stored = new Map<bigint, bigint[]>(); // worker -> its live ids
    let nextId = 1n;
    for (let e = 0; e < 600; e++) {
      const worker = BigInt(1 + Math.floor(r() * 3));
      const live = stored.get(worker) ?? [];
      const roll = r();
      if (roll < 0.6 || live.length === 0) {
        const n = 1 + Math.floor(r() * 24);
        const parent = live.length > 0 && r() < 0.7 ? live[Math.floor(r() * live.length)] : null;
        const blockHashes = Array.from({ length: n }, () => nextId++);
        const tokensHashes = Array.from({ length: n }, () => u64(r) % 50n); // shared hashes: owner counting
        events.push({ kind: 'stored', workerId: worker, dpRank: 0, parentHash: parent, blockHashes, tokensHashes });
        stored.set(worker, [...live, ...blockHashes]);
      } else if (roll < 0.97) {
        const n = Math.min(live.length, 1 + Math.floor(r() * 30));
        const gone = live.splice(live.length - n, n).reverse();
        if (r() < 0.2) gone.push(gone[0], nextId + 1000n); // a repeat and an unknown id
        events.push({ kind: 'removed', workerId: worker, dpRank: 0, blockHashes: gone });
      } else {
        events.push({ kind: 'cleared', workerId: worker, dpRank: 0 });
        stored.set(worker, []);
      }
    }
    expect(events.reduce((n, ev) => n + (ev.kind === 'cleared' ? 0 : ev.blockHashes.length), 0)).toBeGreaterThan(4 * 512);
    expectSameAsOneByOne(events, 256);
  });
});

describe('stores continuing a chain stored earlier in the same chunk', () => {
  test('are planned from the planned end of that chain (their owner and filter lines asked for ahead)', () => {
    // 4 chains × 16 events × 4 blocks: one plan chunk, every event after a chain's first continues it.
    // Planned before from the lineage table only, where the parent was not yet: 4 × 15 stores unplanned.
    expect(checkChainPlanning(4, 16, 4)).toEqual({ unplannedStores: 0, errors: 0, lineageEntries: 256 });
  });

  test('look back a bounded number of planned stores, so a chunk plans in linear time whatever it holds', () => {
    // 32 chains interleaved: each chain's previous event is 32 stores back, past the look-back, so
    // stores go unplanned (those whose parent's end is still among the last planned ones do not);
    // they run as before, unplanned.
    const run = checkChainPlanning(32, 4, 2);
    expect(run.unplannedStores).toBeGreaterThanOrEqual(32);
    expect(run).toMatchObject({ errors: 0, lineageEntries: 256 });
  });

  test('a planned chain end that another source, a failed store or a re-store makes wrong is corrected at execution', () => {
    const events: PoolEvent[] = [
      { kind: 'stored', workerId: 1n, dpRank: 0, parentHash: null, blockHashes: [1n, 2n], tokensHashes: [11n, 12n] },
      // The same engine id ending another source's chain.
      { kind: 'stored', workerId: 2n, dpRank: 0, parentHash: null, blockHashes: [5n, 2n], tokensHashes: [15n, 16n] },
      { kind: 'stored', workerId: 2n, dpRank: 0, parentHash: 2n, blockHashes: [6n], tokensHashes: [17n] },
      { kind: 'stored', workerId: 1n, dpRank: 0, parentHash: 2n, blockHashes: [3n], tokensHashes: [13n] },
      // A store that fails (its id already maps to another hash) after a good one: planning takes its
      // end as the latest, execution finds the first.
      { kind: 'stored', workerId: 3n, dpRank: 0, parentHash: null, blockHashes: [30n], tokensHashes: [31n] },
      { kind: 'stored', workerId: 3n, dpRank: 0, parentHash: null, blockHashes: [30n], tokensHashes: [32n] },
      { kind: 'stored', workerId: 3n, dpRank: 0, parentHash: 30n, blockHashes: [33n], tokensHashes: [34n] },
      // Removed and stored again with other tokens: the later end holds.
      { kind: 'stored', workerId: 4n, dpRank: 0, parentHash: null, blockHashes: [40n], tokensHashes: [41n] },
      { kind: 'removed', workerId: 4n, dpRank: 0, blockHashes: [40n] },
      { kind: 'stored', workerId: 4n, dpRank: 0, parentHash: null, blockHashes: [40n], tokensHashes: [42n] },
      { kind: 'stored', workerId: 4n, dpRank: 0, parentHash: 40n, blockHashes: [43n], tokensHashes: [44n] },
      // A parent nowhere: not stored, not planned.
      { kind: 'stored', workerId: 5n, dpRank: 0, parentHash: 99n, blockHashes: [50n], tokensHashes: [51n] },
      { kind: 'stored', workerId: 5n, dpRank: 0, parentHash: 50n, blockHashes: [52n], tokensHashes: [53n] },
    ];
    const pool = expectSameAsOneByOne(events, 64);
    expect(pool.owners(chain([11n, 12n, 13n])[2])).toBe(1);
    expect(pool.owners(chain([15n, 16n, 17n])[2])).toBe(1);
    expect(pool.owners(chain([31n, 34n])[1])).toBe(1);
    expect(pool.owners(chain([32n, 34n])[1])).toBe(0);
    expect(pool.owners(chain([42n, 44n])[1])).toBe(1);
    expect(pool.stats().parentNotFound).toBe(2);
  });
});

describe('raw canonical batches', () => {
  test('applyCanonical gives the outcomes and state of one insertCanonical / removeCanonical call per op', () => {
    const r = rng(9);
    const hashes = Array.from({ length: 900 }, () => u64(r));
    const ops: { op: 'insert' | 'remove'; hash: bigint }[] = [];
    for (let i = 0; i < 6000; i++) {
      // A small filter (capacity failures, relocations), shared owners and unknown removals.
      ops.push({ op: r() < 0.6 ? 'insert' : 'remove', hash: hashes[Math.floor(r() * hashes.length)] });
    }
    const batched = canonicalPool({ bucketCount: 128 });
    const single = canonicalPool({ bucketCount: 128 });
    const outcomes = applyCanonical(batched, ops);
    const expected = ops.map(({ op, hash }) =>
      op === 'insert' ? single.insertCanonical(hash).outcome : single.removeCanonical(hash).outcome,
    );
    expect(outcomes).toEqual(expected);
    expect(new Set(expected)).toEqual(
      new Set(['inserted', 'owner_bumped', 'capacity_exhausted', 'removed', 'owner_decremented', 'released_not_resident', 'unknown_removal']),
    );
    expect(batched.words()).toEqual(single.words());
    expect(batched.stats()).toEqual(single.stats());
    for (const h of hashes) expect(batched.owners(h)).toBe(single.owners(h));
  });

  test('applyCanonicalBatch checks its arguments', () => {
    const pool = canonicalPool({ bucketCount: 16 });
    const native = pool as unknown as { applyCanonicalBatch(o: unknown, h: unknown): unknown };
    expectThrows(() => native.applyCanonicalBatch(new Uint8Array(2), new BigUint64Array(1)), 'RangeError');
    expectThrows(() => native.applyCanonicalBatch(new Uint8Array([2]), new BigUint64Array(1)), 'RangeError');
    expectThrows(() => native.applyCanonicalBatch(new Uint32Array(1), new BigUint64Array(1)), 'TypeError');
    expect(pool.stats().pendingEvents).toBe(0);
  });
});
