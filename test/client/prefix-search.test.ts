import fc from 'fast-check';
import { findPrefixDepth, linearPrefixDepth } from '../../src/client/prefix-search';

const probeOf = (mask: number[]) => (pos: number) => mask[pos] === 1;

describe('prefix search (hashing-ckf-cbi1.md §2.6)', () => {
  const masks = [1, 1, 1, 0, 1, 1, 1, 1];

  it('reproduces the upstream search test', () => {
    expect(findPrefixDepth(masks.length, probeOf(masks), 1)).toBe(8);
    expect(findPrefixDepth(masks.length, probeOf(masks), 8)).toBe(3);
    expect(linearPrefixDepth(masks.length, probeOf(masks))).toBe(3);
  });

  it('returns 0 for an empty query or a first-block miss', () => {
    expect(findPrefixDepth(0, () => true, 2)).toBe(0);
    expect(findPrefixDepth(5, (p) => p !== 0, 2)).toBe(0);
  });

  it('falls back to a linear scan when the window misses at its first position', () => {
    // Galloping hits 0,1,2,4,8 (lowerPred ends at 4), binary search settles on [8, 9); with w = 2
    // the window [7, 9) misses at 7, its start, so positions 5..7 are scanned: 5 misses.
    const mask = [1, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    expect(findPrefixDepth(mask.length, probeOf(mask), 2)).toBe(5);
    expect(findPrefixDepth(mask.length, probeOf(mask), 1)).toBe(9);
    expect(findPrefixDepth(mask.length, probeOf(mask), 8)).toBe(3);
  });

  it('equals the linear oracle on every monotone prefix', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 1, max: 8 }), (n, k, w) => {
        const depth = Math.min(k, n);
        const probe = (p: number) => p < depth;
        expect(findPrefixDepth(n, probe, w)).toBe(depth);
      }),
    );
  });

  it('never reports more than the probed evidence allows and never less than the true prefix', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { maxLength: 64 }), fc.integer({ min: 1, max: 8 }), (bits, w) => {
        const probe = (p: number) => bits[p] === true;
        const depth = findPrefixDepth(bits.length, probe, w);
        expect(depth).toBeGreaterThanOrEqual(linearPrefixDepth(bits.length, probe));
        expect(depth).toBeLessThanOrEqual(bits.length);
        if (depth < bits.length) expect(bits[depth]).toBe(false);
      }),
    );
  });

  it('rejects a verification window below 1', () => {
    expect(() => findPrefixDepth(4, () => true, 0)).toThrow(RangeError);
  });
});
