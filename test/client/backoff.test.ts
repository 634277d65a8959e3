import { Backoff, DEFAULT_BACKOFF, recoveryMaxMs } from '../../src/client/backoff';

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

describe('Backoff recovery phase', () => {
  const options = (now: () => number) => ({ initialMs: 100, maxMs: 5_000, recoveryMaxMs: 250, recoveryWindowMs: 10_000, random: () => 0.999999, now });

  it('after recover() starts from the initial delay, stays under the recovery cap for the window, then doubles on to maxMs', () => {
    let now = 0;
    const b = new Backoff(options(() => now));
    for (let i = 0; i < 8; i++) b.next();
    b.recover();
    const inWindow = Array.from({ length: 5 }, () => b.next());
    expect(inWindow).toEqual([100, 200, 250, 250, 250]);
    now = 10_000;
    expect(Array.from({ length: 6 }, () => b.next())).toEqual([500, 1000, 2000, 4000, 5000, 5000]);
  });

  it('without recover() grows as before, whatever the recovery options', () => {
    const b = new Backoff(options(() => 0));
    expect(Array.from({ length: 7 }, () => b.next())).toEqual([100, 200, 400, 800, 1600, 3200, 5000]);
  });

  it('keeps the recovery cap within initialMs..maxMs (a custom maxMs below it wins)', () => {
    expect(recoveryMaxMs({ initialMs: 20, maxMs: 200, recoveryMaxMs: 250 })).toBe(200);
    expect(recoveryMaxMs({ initialMs: 500, maxMs: 5_000, recoveryMaxMs: 250 })).toBe(500);
    expect(recoveryMaxMs({ initialMs: 20, maxMs: 200 })).toBe(200);
    expect(recoveryMaxMs(DEFAULT_BACKOFF)).toBe(250);
  });
});
