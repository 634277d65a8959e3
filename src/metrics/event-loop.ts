// The relay's event-loop delay for /metrics: how late a timer due at a random moment runs. Every
// gRPC write, heartbeat and ingest hand-off waits as long, so this is the relay's responsiveness
// under load (#8: p99 <= 5 ms while ingest runs at full speed). Measured per loop iteration by the
// native LoopDelay (no timer of its own: node's monitorEventLoopDelay woke an idle relay 20 times a
// second to sample, issue 30 item 2).
import { LoopDelay } from '../native';

/** Delay quantiles of one window, in milliseconds. */
export interface EventLoopDelay {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Loop iterations the window saw. */
  samples: number;
}

export class EventLoopDelayMonitor {
  private readonly loop = new LoopDelay();

  /**
   * The delays since the previous take() (or the start), then a new window begins; undefined when
   * the loop has not iterated since. The max is the longest busy stretch (a block of the loop).
   */
  take(): EventLoopDelay | undefined {
    return this.loop.take();
  }

  close(): void {
    this.loop.close();
  }
}
