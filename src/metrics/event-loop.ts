// The relay's event-loop delay for /metrics: how late a timer due at a random moment runs. Every
// gRPC write, heartbeat and ingest hand-off waits as long, so this is the relay's responsiveness
// under load (#8: p99 <= 5 ms while ingest runs at full speed).
import { monitorEventLoopDelay, type IntervalHistogram } from 'perf_hooks';
import { EVENT_LOOP_DELAY_RESOLUTION_MS } from '../config/defaults';

/** Delay quantiles of one window, in milliseconds. */
export interface EventLoopDelay {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  samples: number;
}

const NS_PER_MS = 1e6;

export class EventLoopDelayMonitor {
  private readonly histogram: IntervalHistogram;

  constructor(private readonly resolutionMs = EVENT_LOOP_DELAY_RESOLUTION_MS) {
    this.histogram = monitorEventLoopDelay({ resolution: resolutionMs });
    this.histogram.enable();
  }

  /**
   * The delays since the previous take() (or the start), then a new window begins; undefined when
   * the sampling timer has not run since. Node records the time between two runs of a timer
   * repeating every `resolutionMs`, so the delay is that time less the resolution.
   */
  take(): EventLoopDelay | undefined {
    const h = this.histogram;
    if (h.count === 0) return undefined;
    const delayMs = (ns: number): number => Math.max(0, ns / NS_PER_MS - this.resolutionMs);
    const window = { p50Ms: delayMs(h.percentile(50)), p99Ms: delayMs(h.percentile(99)), maxMs: delayMs(h.max), samples: h.count };
    h.reset();
    return window;
  }

  close(): void {
    this.histogram.disable();
  }
}
