import { MAX_U64 } from '../../src/config/limits';
import { buildPoolLoad, type UsageObservations } from '../../src/load';
import type { KvPoolLoadEntry } from '../../src/wire/types';
import { pool, producer, worker } from './fixtures';

function usage(entries: [bigint, [number, number][]][]): UsageObservations {
  return new Map(entries.map(([id, ranks]) => [id, new Map(ranks)]));
}

type Counts = Omit<KvPoolLoadEntry, 'producer'>;

describe('buildPoolLoad', () => {
  const cases: [string, Parameters<typeof pool>[1], UsageObservations, Counts][] = [
    ['complete single-rank worker',
      [worker(1n)], usage([[1n, [[0, 0.25]]]]),
      { kvUsedBlocks: 250n, totalKvBlocks: 1000n, kvObservedRanks: 1, kvExpectedRanks: 1 }],
    ['complete across workers and DP ranks (rank usage rounded per rank)',
      [worker(1n, { dpSize: 2, totalKvBlocks: 100 }), worker(2n, { dpStartRank: 2, dpSize: 2, totalKvBlocks: 10 })],
      usage([[1n, [[0, 0.125], [1, 0.5]]], [2n, [[2, 0.05], [3, 0.04]]]]),
      // 12.5 → 13, 50, 0.5 → 1, 0.4 → 0
      { kvUsedBlocks: 64n, totalKvBlocks: 220n, kvObservedRanks: 4, kvExpectedRanks: 4 }],
    ['partial coverage: usage unpublished, capacity still complete',
      [worker(1n, { dpSize: 2 })], usage([[1n, [[0, 0.5]]]]),
      { kvUsedBlocks: 0n, totalKvBlocks: 2000n, kvObservedRanks: 1, kvExpectedRanks: 2 }],
    ['a worker never scraped is not observed',
      [worker(1n), worker(2n)], usage([[1n, [[0, 0.5]]]]),
      { kvUsedBlocks: 0n, totalKvBlocks: 2000n, kvObservedRanks: 1, kvExpectedRanks: 2 }],
    ['nothing observed',
      [worker(1n)], usage([]),
      { kvUsedBlocks: 0n, totalKvBlocks: 1000n, kvObservedRanks: 0, kvExpectedRanks: 1 }],
    ['unknown capacity (0) on one worker: total unknown, its ranks unobservable',
      [worker(1n), worker(2n, { totalKvBlocks: 0 })], usage([[1n, [[0, 0.5]]], [2n, [[0, 0.5]]]]),
      { kvUsedBlocks: 0n, totalKvBlocks: 0n, kvObservedRanks: 1, kvExpectedRanks: 2 }],
    ['unknown capacity (omitted)',
      [worker(1n, { totalKvBlocks: undefined })], usage([[1n, [[0, 0.5]]]]),
      { kvUsedBlocks: 0n, totalKvBlocks: 0n, kvObservedRanks: 0, kvExpectedRanks: 1 }],
    ['no workers: no expected ranks, nothing published',
      [], usage([]),
      { kvUsedBlocks: 0n, totalKvBlocks: 0n, kvObservedRanks: 0, kvExpectedRanks: 0 }],
    ['observations for undeclared ranks do not count',
      [worker(1n, { dpStartRank: 4 })], usage([[1n, [[0, 0.5]]]]),
      { kvUsedBlocks: 0n, totalKvBlocks: 1000n, kvObservedRanks: 0, kvExpectedRanks: 1 }],
    ['liveness does not change the expected ranks',
      [worker(1n, { live: false }), worker(2n)], usage([[2n, [[0, 1]]]]),
      { kvUsedBlocks: 0n, totalKvBlocks: 2000n, kvObservedRanks: 1, kvExpectedRanks: 2 }],
  ];

  test.each(cases)('%s', (_name, workers, observed, expected) => {
    expect(buildPoolLoad([pool(1, workers)], observed)).toEqual([{ producer: producer(1), ...expected }]);
  });

  test('sums saturate at u64::MAX', () => {
    const big = Number.MAX_SAFE_INTEGER; // 2^53 - 1 per rank; 4096 ranks exceed u64 in total
    const workers = Array.from({ length: 2 }, (_, i) => worker(BigInt(i), { dpSize: 4096, totalKvBlocks: big }));
    const full = new Map(Array.from({ length: 4096 }, (_, r) => [r, 1] as [number, number]));
    const [entry] = buildPoolLoad([pool(1, workers)], new Map([[0n, full], [1n, full]]));
    expect(entry).toEqual({ producer: producer(1), kvUsedBlocks: MAX_U64, totalKvBlocks: MAX_U64, kvObservedRanks: 8192, kvExpectedRanks: 8192 });
  });

  test('one entry per pool in input (catalog) order; an empty list is a valid idle window', () => {
    const observed = usage([[1n, [[0, 0.1]]], [2n, [[0, 0.2]]]]);
    expect(buildPoolLoad([pool(2, [worker(2n)]), pool(1, [worker(1n)])], observed).map((e) => [e.producer, e.kvUsedBlocks])).toEqual([
      [producer(2), 200n],
      [producer(1), 100n],
    ]);
    expect(buildPoolLoad([], observed)).toEqual([]);
  });
});
