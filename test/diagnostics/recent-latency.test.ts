// RecentLatency's per-pool p99 (nearest rank) over the last window, from a fixed ring.
import { RecentLatency } from '../../src/diagnostics/recent-latency';

test('p99 is the nearest-rank 99th percentile of the window\'s deltas, numerically ordered', () => {
  const r = new RecentLatency(200, 1_000);
  // 100 values 1..100 given out of order (9 before 10 as text would sort them the other way).
  for (let i = 0; i < 100; i++) r.observe('a', ((i * 37) % 100) + 1, 0);
  expect(r.p99('a', 500)).toBe(99);
  // 100 more, 1 000 each: 200 values, rank ceil(198) = the 198th = 1 000.
  for (let i = 0; i < 100; i++) r.observe('a', 1_000, 600);
  expect(r.p99('a', 700)).toBe(1_000);
  // The first 100 leave the window; a single remaining value is its own p99.
  expect(r.p99('a', 1_100)).toBe(1_000);
  expect(r.p99('b', 0)).toBeNull();
});

test('a pool whose deltas all left the window has none; a forgotten pool has none', () => {
  const r = new RecentLatency(4, 1_000);
  r.observe('a', 7, 0);
  r.observe('a', 3, 10);
  expect(r.p99('a', 20)).toBe(7);
  expect(r.p99('a', 5_000)).toBeNull();
  r.keep(new Set());
  expect(r.p99('a', 20)).toBeNull();
});
