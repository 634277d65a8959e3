// Events per second over a sliding window (a replica's deltas/s).
export class RateMeter {
  private readonly times: number[] = [];
  private head = 0;

  constructor(private readonly windowMs: number) {}

  record(nowMs: number): void {
    this.times.push(nowMs);
    this.prune(nowMs);
  }

  perSecond(nowMs: number): number {
    this.prune(nowMs);
    return ((this.times.length - this.head) * 1000) / this.windowMs;
  }

  private prune(nowMs: number): void {
    const oldest = nowMs - this.windowMs;
    while (this.head < this.times.length && this.times[this.head] <= oldest) this.head++;
    // Compact once the consumed prefix dominates, so memory stays proportional to the window.
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times.splice(0, this.head);
      this.head = 0;
    }
  }
}
