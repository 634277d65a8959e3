// The soak's growth decision (bench/soak/growth.ts) on synthetic runs: steady growth fails it, a
// plateau passes it even with a dip that steepens the last half's slope, and so does warm-up growth
// that stops by mid-run.
import { memoryGrowth, slopePerMinute } from '../../bench/soak/growth';
import type { SoakSample } from '../../bench/soak/relay-host';

const MIB = 2 ** 20;
const LIMITS = { maxRssSlope: 10, maxHeapSlope: 5 };

/** One sample a second for `seconds`, RSS and heap (MiB) given per second. */
function run(seconds: number, rssMib: (t: number) => number, heapMib: (t: number) => number = () => 30): SoakSample[] {
  return Array.from({ length: seconds }, (_, t) => ({
    tMs: t * 1000,
    rssBytes: rssMib(t) * MIB,
    heapUsedBytes: heapMib(t) * MIB,
    arrayBuffersBytes: 0,
    externalBytes: 0,
    loopDelayP99Ms: 1,
    loopDelayMaxMs: 2,
  }));
}

test('the slope is per minute, by least squares', () => {
  expect(slopePerMinute([0, 1, 2, 3], [10, 10.5, 11, 11.5])).toBeCloseTo(30);
  expect(slopePerMinute([0, 60], [5, 5])).toBe(0);
  expect(slopePerMinute([1], [5])).toBe(0);
});

test('RSS growing steadily faster than the limit fails; at half the limit it passes', () => {
  const fast = memoryGrowth(run(120, (t) => 100 + (20 * t) / 60), LIMITS);
  expect(fast.rssSlope).toBeCloseTo(20);
  expect(fast).toMatchObject({ rssGrew: true, heapGrew: false });
  expect(memoryGrowth(run(120, (t) => 100 + (5 * t) / 60), LIMITS)).toMatchObject({ rssGrew: false, heapGrew: false });
});

test('a heap leak is caught on its own limit', () => {
  expect(memoryGrowth(run(120, () => 100, (t) => 30 + (8 * t) / 60), LIMITS)).toMatchObject({ rssGrew: false, heapGrew: true });
});

test('a plateau with a dip at the start of the last half is not growth, though its slope exceeds the limit', () => {
  const dip = run(60, (t) => (t >= 30 && t < 36 ? 120 : 128));
  const growth = memoryGrowth(dip, LIMITS);
  expect(growth.rssSlope).toBeGreaterThan(LIMITS.maxRssSlope);
  expect(growth.rssGrew).toBe(false);
});

test('warm-up growth that levels off by mid-run is not growth', () => {
  expect(memoryGrowth(run(120, (t) => 100 + Math.min(t, 50)), LIMITS)).toMatchObject({ rssGrew: false, heapGrew: false });
});

test('too few samples to split in halves is an error', () => {
  expect(() => memoryGrowth(run(1, () => 100), LIMITS)).toThrow(RangeError);
});
