// The turns of the event loop a scrape renders in: work checks `due` as it goes and yields with next()
// once its turn took sliceMs, so gRPC streams, heartbeats and ingest hand-offs wait a slice, not a scrape.

export class ScrapeTurns {
  private start = performance.now();

  constructor(private readonly sliceMs: number) {}

  /** This turn took its slice. */
  get due(): boolean {
    return performance.now() - this.start >= this.sliceMs;
  }

  /** Resumes on a later turn of the event loop. */
  async next(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    this.start = performance.now();
  }

  /** next() if this turn took its slice. */
  async pace(): Promise<void> {
    if (this.due) await this.next();
  }
}
