// One kv_metrics channel of the event plane (a NATS subject, a ZMQ publisher): the workers' ActiveLoad
// it carries recorded as each rank's latest kv_used_blocks (no expiry, as in Dynamo), and its faults.
// A fault of the channel clears the load that came through it (its workers are unobserved until their
// next good report), as Dynamo's relay clears its pool's observations at each error its kv_metrics
// subscription yields (lib/llm/src/kv_dc_relay `run_load_collector` -> `clear_load_observations`): on
// NATS a message whose envelope or payload does not decode (TypedEventSubscriber yields Err); on ZMQ
// also an envelope that names another topic, publisher or sequence than its frames, and a dropped
// connection (lib/llm/src/kv_router/metrics_subscriber.rs `fault_for_event`).
import type { WorkerRanks } from '../discovery/project';
import type { ActiveLoadReport } from './active-load';
import type { PlaneCounters } from './channel';

/** Worker -> rank -> its latest kv_used_blocks. */
export type ReportedLoad = Map<bigint, Map<number, number>>;

export class LoadFeed {
  /** The workers whose load this channel set (those of the deployment: forgetWorkers drops the others). */
  private readonly fed = new Set<bigint>();

  constructor(
    private readonly channel: string,
    private readonly reported: ReportedLoad,
    private readonly workers: () => ReadonlyMap<bigint, WorkerRanks>,
    private readonly counters: PlaneCounters,
    private readonly warn: (obj: object, msg: string) => void,
  ) {}

  /** A decoded message, or why it is not one (counted malformed, and a fault of the channel). */
  receive(load: ActiveLoadReport | string): void {
    if (typeof load === 'string') {
      this.counters.malformed += 1;
      return this.fault('malformed or mismatched message', load);
    }
    const ranks = this.workers().get(load.workerId);
    // A router's report (no kv_used_blocks) is advisory; an undeclared worker or rank is ignored.
    if (load.kvUsedBlocks === undefined || !ranks || load.dpRank < ranks.dpStartRank || load.dpRank >= ranks.dpStartRank + ranks.dpSize) return;
    const byRank = this.reported.get(load.workerId) ?? this.reported.set(load.workerId, new Map()).get(load.workerId)!;
    byRank.set(load.dpRank, load.kvUsedBlocks);
    this.fed.add(load.workerId);
  }

  /** Clears the load this channel set; counted and logged. */
  fault(why: string, err?: string): void {
    this.counters.loadFaults += 1;
    this.warn({ channel: this.channel, err, cleared: [...this.fed].map(String) }, `Dynamo kv_metrics channel fault (${why}): the load it reported is cleared until the next report`);
    for (const id of this.fed) this.reported.delete(id);
    this.fed.clear();
  }

  forgetWorkers(workers: ReadonlyMap<bigint, WorkerRanks>): void {
    for (const id of this.fed) if (!workers.has(id)) this.fed.delete(id);
  }
}
