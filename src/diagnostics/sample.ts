// One diagnostics sample of a running relay: every served pool with its sources (as configured, with
// the counters ingest reports for them) and its subscribers. Reads state; changes nothing.
import { rankEndpoint } from '../ingest/endpoints';
import { sourcesOf } from '../ingest/sources';
import { COUNTERS } from '../ingest/stats-board';
import type { SourceKey, SourceStats } from '../ingest/types';
import { endpointName } from '../producer/deployment';
import type { Producer } from '../producer/producer';
import { kvSourceConfigs } from '../producer/views';
import { producerKey } from '../wire/producer-key';
import type { RecentLatency } from './recent-latency';
import { sourceName, type PoolSnapshot, type RelaySnapshot, type SourceSnapshot } from './snapshot';

export interface SampleInputs {
  producer: Pick<Producer, 'servedPools' | 'ingestStats' | 'ingestEndpoints'>;
  /** Pool streams per generation (producer key): RelayServer.poolSubscribers. */
  poolSubscribers(): Map<string, number>;
}

/** A source ingest has not reported on yet: nothing connected, nothing received. */
function noStats(source: SourceKey): SourceStats {
  const s = { source, connections: 0, lastSequence: null, mismatchedBlockSize: 0 } as SourceStats;
  for (const c of COUNTERS) s[c] = 0;
  return s;
}

export function sampleRelay(inputs: SampleInputs, latency: RecentLatency, now: number): RelaySnapshot {
  const stats = new Map(inputs.producer.ingestStats().map((s) => [sourceName({ worker: String(s.source.workerId), dpRank: s.source.dpRank }), s]));
  const subscribers = inputs.poolSubscribers();
  const pools: PoolSnapshot[] = [];
  const sources: SourceSnapshot[] = [];
  for (const { spec, metrics, producer } of inputs.producer.servedPools()) {
    pools.push({
      pool: spec.key,
      endpoint: endpointName(spec.servingEndpoint),
      model: spec.endpoint.model.name,
      kvBlockSize: spec.querySemantics.kvBlockSize,
      trackedBlocks: metrics.trackedBlocks,
      filterLoad: metrics.filterLoad,
      subscribers: subscribers.get(producerKey(producer)) ?? 0,
      deltaLatencyP99Ms: latency.p99(spec.key, now),
    });
    for (const config of kvSourceConfigs([spec])) {
      // Bound endpoints (bind mode, port 0) as the subscriber chose them; else as configured.
      const bound = inputs.producer.ingestEndpoints(config.workerId);
      sourcesOf(config).forEach((key, i) => {
        const worker = String(key.workerId);
        sources.push({
          worker,
          dpRank: key.dpRank,
          pool: spec.key,
          endpoint: bound[i] ?? rankEndpoint(config.endpoint, key.dpRank, config.dpStartRank),
          mode: config.mode,
          kvBlockSize: config.kvBlockSize,
          stats: stats.get(sourceName({ worker, dpRank: key.dpRank })) ?? noStats(key),
        });
      });
    }
  }
  return { sources, pools };
}
