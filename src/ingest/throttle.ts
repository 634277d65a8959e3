// Bounded-rate warnings: a misbehaving engine can send thousands of bad messages per second, and
// each must not become a log line.
import type { IngestLogger } from './types';

export class ThrottledLogger {
  private windowStart = -Infinity;
  private inWindow = 0;
  private suppressed = 0;

  constructor(
    private readonly logger: IngestLogger,
    private readonly maxPerWindow: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  warn(obj: object, msg: string): void {
    const t = this.now();
    if (t - this.windowStart >= this.windowMs) {
      this.windowStart = t;
      this.inWindow = 0;
    }
    if (this.inWindow >= this.maxPerWindow) {
      this.suppressed += 1;
      return;
    }
    this.inWindow += 1;
    const suppressed = this.suppressed;
    this.suppressed = 0;
    this.logger.warn(suppressed > 0 ? { ...obj, suppressed } : obj, msg);
  }
}
