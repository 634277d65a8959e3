// One diagnostics sample of a running relay: every served pool with its sources (as configured, with
// the counters ingest reports for them) and its subscribers. Reads state; changes nothing.
//
// A round costs per change, not per source: the sampler keeps each source's snapshot object and
// builds a new one only when its counters, its endpoint or its pool's config changed since the last
// sample (512 idle sources rebuilt every second cost the main thread ~4 ms/s, BENCHMARKS.md). An
// unchanged source keeps the very object of the last sample, which the rules (checks.ts) take as
// "nothing new here". It reads each worker's own lists (ingest hands out the same list while nothing
// in it changed), not one flattened list of every source, and a round where no worker changed returns
// the last round's list of sources: an idle round allocates nothing per source.
import { rankEndpoint } from '../ingest/endpoints';
import { COUNTERS } from '../ingest/stats-board';
import type { KvEventEndpointConfig, SourceStats } from '../ingest/types';
import { endpointName, type PoolSpec } from '../producer/deployment';
import type { Producer } from '../producer/producer';
import { kvSourceConfigs } from '../producer/views';
import { producerKey } from '../wire/producer-key';
import type { RecentLatency } from './recent-latency';
import type { PoolSnapshot, RelaySnapshot, SourceSnapshot } from './snapshot';

export interface SampleInputs {
  producer: Pick<Producer, 'servedPools' | 'ingestWorkerStats' | 'ingestEndpoints'>;
  /** Pool streams per generation (producer key): RelayServer.poolSubscribers. */
  poolSubscribers(): Map<string, number>;
}

/** A source ingest has not reported on yet: nothing connected, nothing received. */
function noStats(workerId: bigint, dpRank: number): SourceStats {
  const s = { source: { workerId, dpRank }, connections: 0, lastSequence: null, mismatchedBlockSize: 0 } as SourceStats;
  for (const c of COUNTERS) s[c] = 0;
  return s;
}

/** The counters of a source not reported on, to compare with (their `source` is not compared). */
const NO_STATS = noStats(0n, 0);

/** Whether two samples of a source's counters say the same. */
function sameStats(a: SourceStats, b: SourceStats): boolean {
  // Ingest's board hands out the same object for a record that did not change (stats-board.ts), so
  // the fields are compared only for a source that changed or was never reported on.
  if (a === b) return true;
  if (a.connections !== b.connections || a.lastSequence !== b.lastSequence || a.mismatchedBlockSize !== b.mismatchedBlockSize) return false;
  for (const c of COUNTERS) if (a[c] !== b[c]) return false;
  return true;
}

function sameEndpoints(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A worker's sources as last sampled: what they were built from, and their snapshots by rank offset. */
interface WorkerSources {
  config: KvEventEndpointConfig;
  /** The lists read (kept to know them again: ingest hands out the same ones while nothing changed). */
  stats: readonly SourceStats[];
  endpoints: readonly string[];
  readonly snapshots: readonly SourceSnapshot[];
}

export class RelaySampler {
  /** Source snapshots built so far (a new source, or one whose counters, endpoint or pool changed). */
  built = 0;
  /** The last round's workers, in its order, and by id; and its sources, handed out again while no worker changed. */
  private order: WorkerSources[] = [];
  private workers = new Map<bigint, WorkerSources>();
  private sources: SourceSnapshot[] = [];
  /** Each served pool's source configs, while its spec stays the same object. */
  private readonly configs = new WeakMap<PoolSpec, KvEventEndpointConfig[]>();

  constructor(private readonly inputs: SampleInputs) {}

  sample(latency: RecentLatency, now: number): RelaySnapshot {
    const subscribers = this.inputs.poolSubscribers();
    const pools: PoolSnapshot[] = [];
    // This round's workers: a new list only from the first worker that is not the last round's.
    let round: WorkerSources[] | undefined;
    let count = 0;
    let moved = false;
    const served = this.inputs.producer.servedPools();
    for (let p = 0; p < served.length; p++) {
      const { spec, producer: generation } = served[p];
      const metrics = served[p].metrics();
      pools.push({
        pool: spec.key,
        endpoint: endpointName(spec.servingEndpoint),
        model: spec.endpoint.model.name,
        kvBlockSize: spec.querySemantics.kvBlockSize,
        trackedBlocks: metrics.trackedBlocks,
        filterLoad: metrics.filterLoad,
        subscribers: subscribers.get(producerKey(generation)) ?? 0,
        deltaLatencyP99Ms: latency.p99(spec.key, now),
      });
      let configs = this.configs.get(spec);
      if (!configs) this.configs.set(spec, (configs = kvSourceConfigs([spec])));
      // Indexed loops: this runs once a second, too rarely to be optimized, and an unoptimized
      // for-of makes an iterator result per step (per source).
      for (let c = 0; c < configs.length; c++) {
        const worker = this.worker(spec.key, configs[c]);
        const was = this.order[count];
        if (round === undefined && worker !== was) round = this.order.slice(0, count);
        round?.push(worker);
        if (worker.config.workerId !== was?.config.workerId) moved = true;
        count += 1;
      }
    }
    if (round === undefined && count !== this.order.length) round = this.order.slice(0, count);
    if (round !== undefined) {
      // Workers no longer served are forgotten with their snapshots; while the same workers are
      // served in the same order, only the changed ones are replaced (a busy relay's round).
      if (moved || count !== this.order.length) this.workers = new Map(round.map((w) => [w.config.workerId, w]));
      else for (let i = 0; i < count; i++) if (round[i] !== this.order[i]) this.workers.set(round[i].config.workerId, round[i]);
      this.order = round;
      this.sources = round.flatMap((w) => w.snapshots);
    }
    return { sources: this.sources, pools };
  }

  /** A worker's snapshots: the last ones where nothing changed, a new one per changed rank. */
  private worker(pool: string, config: KvEventEndpointConfig): WorkerSources {
    const { producer } = this.inputs;
    const stats = producer.ingestWorkerStats(config.workerId);
    // Bound endpoints (bind mode, port 0) as the subscriber chose them; else as configured.
    const bound = producer.ingestEndpoints(config.workerId);
    const kept = this.workers.get(config.workerId);
    const last = kept?.config === config && sameEndpoints(kept.endpoints, bound) ? kept : undefined;
    if (last && (last.stats === stats || unchangedRanks(last.snapshots, stats))) {
      // Known again by identity next time (a list read anew, e.g. a restarted thread's merged counters).
      last.stats = stats;
      last.endpoints = bound;
      return last;
    }
    const snapshots: SourceSnapshot[] = [];
    for (let i = 0; i < config.dpSize; i++) {
      const dpRank = config.dpStartRank + i;
      const now = rankStats(stats, dpRank);
      const before = last?.snapshots[i];
      if (before && sameStats(before.stats, now ?? NO_STATS)) {
        snapshots.push(before);
        continue;
      }
      this.built += 1;
      snapshots.push({
        worker: String(config.workerId),
        dpRank,
        pool,
        endpoint: bound[i] ?? rankEndpoint(config.endpoint, dpRank, config.dpStartRank),
        mode: config.mode,
        kvBlockSize: config.kvBlockSize,
        stats: now ?? noStats(config.workerId, dpRank),
      });
    }
    return { config, stats, endpoints: bound, snapshots };
  }
}

/** Whether every rank's counters in `stats` say what its snapshot says. */
function unchangedRanks(snapshots: readonly SourceSnapshot[], stats: readonly SourceStats[]): boolean {
  for (let i = 0; i < snapshots.length; i++) if (!sameStats(snapshots[i].stats, rankStats(stats, snapshots[i].dpRank) ?? NO_STATS)) return false;
  return true;
}

/** The counters of `dpRank` among a worker's (a handful of ranks). */
function rankStats(stats: readonly SourceStats[], dpRank: number): SourceStats | undefined {
  for (let i = 0; i < stats.length; i++) if (stats[i].source.dpRank === dpRank) return stats[i];
  return undefined;
}
