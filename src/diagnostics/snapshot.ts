// What the diagnostics look at: one sample of every KV-event source and every served pool, as plain
// values (no live objects), so the rules over them are pure and a test can write them by hand.
import type { SourceStats } from '../ingest/types';

export interface SourceSnapshot {
  /** Worker id (decimal u64). */
  worker: string;
  dpRank: number;
  /** Key of the pool the source feeds. */
  pool: string;
  /** The rank's ZMQ endpoint (a bound address in bind mode). */
  endpoint: string;
  mode: 'connect' | 'bind';
  /** The pool's configured block size. */
  kvBlockSize: number;
  stats: SourceStats;
}

export interface PoolSnapshot {
  pool: string;
  /** Serving endpoint, `namespace/component/endpoint`. */
  endpoint: string;
  model: string;
  kvBlockSize: number;
  trackedBlocks: number;
  filterLoad: number;
  /** Pool streams open on its current generation. */
  subscribers: number;
  /** p99 of the relay's share of event→delta over its recent deltas; null without any. */
  deltaLatencyP99Ms: number | null;
}

export interface RelaySnapshot {
  sources: SourceSnapshot[];
  pools: PoolSnapshot[];
}

/** A source's name in logs, the status view and findings: `worker/rank`. */
export function sourceName(s: { worker: string; dpRank: number }): string {
  return `${s.worker}/${s.dpRank}`;
}
