// Simulated time against wall time. Unpaced: the simulation runs as fast as the host allows (no
// relay in the loop, nothing real to wait for). Paced: simulated time advances `speed` ms per wall
// ms from the first call, ticking between arrivals so the DCs publish KV events as they happen; a
// host that falls behind is reported (lateMs), never silently absorbed into the results.
import { performance } from 'perf_hooks';
import type { SimClock } from './driver';

export const unpacedClock: SimClock = {
  until: async () => undefined,
  lateMs: () => 0,
};

export function wallClock(speed: number, tickMs: number): SimClock {
  if (!(speed > 0 && Number.isFinite(speed))) throw new RangeError('speed must be a positive number');
  if (!(tickMs > 0)) throw new RangeError('tickMs must be positive');
  let t0: number | null = null;
  const simNow = () => {
    t0 ??= performance.now();
    return (performance.now() - t0) * speed;
  };
  return {
    async until(simMs, onTick) {
      for (let now = simNow(); now < simMs; now = simNow()) {
        await new Promise((resolve) => setTimeout(resolve, Math.min(tickMs, (simMs - now) / speed)));
        await onTick(simNow());
      }
    },
    lateMs: (simMs) => Math.max(0, simNow() - simMs),
  };
}
