// Event-loop stall monitor: a chain of setImmediate callbacks; the longest gap between two of
// them is the longest time the loop could not run JavaScript callbacks.
import { performance } from 'perf_hooks';

export interface StallReport {
  /** Longest gap between two consecutive loop turns, in milliseconds. */
  maxStallMs: number;
  /** Loop turns observed. */
  turns: number;
}

export interface StallMonitor {
  stop(): StallReport;
}

export function monitorStalls(): StallMonitor {
  let last = performance.now();
  let maxStallMs = 0;
  let turns = 0;
  let handle: NodeJS.Immediate | undefined;
  const tick = (): void => {
    const now = performance.now();
    maxStallMs = Math.max(maxStallMs, now - last);
    last = now;
    turns++;
    handle = setImmediate(tick);
  };
  handle = setImmediate(tick);
  return {
    stop(): StallReport {
      if (handle) clearImmediate(handle);
      handle = undefined;
      // The gap still open at stop() counts too.
      maxStallMs = Math.max(maxStallMs, performance.now() - last);
      return { maxStallMs, turns };
    },
  };
}

/** Runs `work` while monitoring the event loop. */
export async function withStallMonitor<T>(work: () => Promise<T>): Promise<{ result: T; stall: StallReport }> {
  const monitor = monitorStalls();
  try {
    const result = await work();
    return { result, stall: monitor.stop() };
  } catch (error) {
    monitor.stop();
    throw error;
  }
}
