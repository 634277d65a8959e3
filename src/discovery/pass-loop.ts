// Coalesced passes over a changing input (etcd watch batches): schedule() runs `pass` now, or once
// more after the running one; changes that arrive during a pass are taken by one more pass after
// DISCOVERY_BATCH_INTERVAL_MS, so a burst of watch events costs one pass, not one per event.
import { DISCOVERY_BATCH_INTERVAL_MS } from '../config/defaults';

export class PassLoop {
  private running: Promise<void> | undefined;
  private dirty = false;
  private closed = false;

  /** `pass` must not throw (it handles its own errors). */
  constructor(private readonly pass: () => Promise<void>) {}

  schedule(): void {
    if (this.closed) return;
    this.dirty = true;
    this.running ??= this.loop().finally(() => (this.running = undefined));
  }

  /** The running pass, if any (settled when the loop has nothing left to do). */
  get idle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /** No pass starts after this; resolves once the running one ended. */
  async close(): Promise<void> {
    this.closed = true;
    await this.running;
  }

  private async loop(): Promise<void> {
    while (this.dirty && !this.closed) {
      this.dirty = false;
      await this.pass();
      if (this.dirty) await new Promise((resolve) => setTimeout(resolve, DISCOVERY_BATCH_INTERVAL_MS));
    }
  }
}
