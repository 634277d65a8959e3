// Drives simulated engines' workloads in the background for chaos tests: one loop per worker that
// publishes a workload step every few ms to whatever engine currently serves that worker (so a test
// can kill and replace an engine under load), with ranks that can be silenced.
import type { SimulatedEngine } from '../../src/sim';

const STEP_MS = 15;

export class EngineLoad {
  private running = true;
  private readonly loops: Promise<void>[] = [];
  private readonly current = new Map<number, SimulatedEngine>();
  /** `${workerId}/${rank}` of ranks that publish nothing (their workload steps are skipped). */
  readonly silent = new Set<string>();
  /** Batches published per worker. */
  readonly published = new Map<number, number>();

  /** Starts (or, for a known worker, redirects) the load of `workerId` to `engine`. */
  drive(workerId: number, engine: SimulatedEngine): void {
    const known = this.current.has(workerId);
    this.current.set(workerId, engine);
    if (!known) this.loops.push(this.loop(workerId));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async loop(workerId: number): Promise<void> {
    while (this.running) {
      const engine = this.current.get(workerId)!;
      const { rank, events } = engine.workload.step();
      if (events.length > 0 && !this.silent.has(`${workerId}/${rank}`)) {
        await engine.publish(events, { rank });
        this.published.set(workerId, (this.published.get(workerId) ?? 0) + 1);
      }
      await new Promise((resolve) => setTimeout(resolve, STEP_MS));
    }
  }
}
