import { Backoff, DEFAULT_BACKOFF } from '../../src/client/backoff';

describe('Backoff', () => {
  it('doubles from 100 ms to a 5 s cap with equal jitter', () => {
    const low = new Backoff({ ...DEFAULT_BACKOFF, random: () => 0 });
    const high = new Backoff({ ...DEFAULT_BACKOFF, random: () => 0.999999 });
    const lows = Array.from({ length: 9 }, () => low.next());
    const highs = Array.from({ length: 9 }, () => high.next());
    expect(lows).toEqual([50, 100, 200, 400, 800, 1600, 2500, 2500, 2500]);
    expect(highs).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
  });

  it('starts again from the initial delay after reset', () => {
    const b = new Backoff({ ...DEFAULT_BACKOFF, random: () => 0 });
    b.next();
    b.next();
    b.reset();
    expect(b.next()).toBe(50);
  });

  it('exposes its cap', () => {
    expect(new Backoff(DEFAULT_BACKOFF).maxMs).toBe(5_000);
  });

  it('rejects inconsistent bounds', () => {
    expect(() => new Backoff({ initialMs: 0, maxMs: 10 })).toThrow(RangeError);
    expect(() => new Backoff({ initialMs: 10, maxMs: 5 })).toThrow(RangeError);
  });
});
