// A source's counters (SourceStats) as fixed 8-byte slots, so they cross to the main thread inside a
// hand-off's memory: a structured clone of the same objects cost more than the rest of the
// hand-off's postMessage.
import type { IngestCounters, SourceStats } from '../types';

/** Every counter of IngestCounters, in record order. */
export const COUNTERS = Object.keys({
  events: true,
  blocks: true,
  malformed: true,
  rejectedRanks: true,
  overflows: true,
  outOfOrder: true,
  refusedPeers: true,
  gaps: true,
  replays: true,
  resets: true,
  ignored: true,
  droppedBlockSize: true,
} satisfies Record<keyof IngestCounters, true>) as (keyof IngestCounters)[];

// Slots: workerId and lastSequence (u64), then dpRank, connections, whether lastSequence is set, the
// mismatched block size, the counters.
const WORKER = 0;
const LAST = 1;
const RANK = 2;
const CONNECTIONS = 3;
const HAS_LAST = 4;
const MISMATCHED_BLOCK_SIZE = 5;
const FIRST_COUNTER = 6;
export const STATS_RECORD_SLOTS = FIRST_COUNTER + COUNTERS.length;

/** Writes `s` at slot `at` of the two views (the same bytes: f64 for numbers, u64 for the ids). */
export function writeStats(f: Float64Array, u: BigUint64Array, at: number, s: SourceStats): void {
  u[at + WORKER] = s.source.workerId;
  u[at + LAST] = s.lastSequence ?? 0n;
  f[at + RANK] = s.source.dpRank;
  f[at + CONNECTIONS] = s.connections;
  f[at + HAS_LAST] = s.lastSequence === null ? 0 : 1;
  f[at + MISMATCHED_BLOCK_SIZE] = s.mismatchedBlockSize;
  for (let c = 0; c < COUNTERS.length; c++) f[at + FIRST_COUNTER + c] = s[COUNTERS[c]];
}

export function readStats(f: Float64Array, u: BigUint64Array, at: number): SourceStats {
  const s = {
    source: { workerId: u[at + WORKER], dpRank: f[at + RANK] },
    connections: f[at + CONNECTIONS],
    lastSequence: f[at + HAS_LAST] === 1 ? u[at + LAST] : null,
    mismatchedBlockSize: f[at + MISMATCHED_BLOCK_SIZE],
  } as SourceStats;
  for (let c = 0; c < COUNTERS.length; c++) s[COUNTERS[c]] = f[at + FIRST_COUNTER + c];
  return s;
}
