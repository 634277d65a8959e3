// The status document: what `GET /status` on the metrics listener answers and `kv-dc-relay status`
// shows. Plain JSON (u64 values as decimal strings); built purely from a snapshot, the rules' memory
// and findings.
import { sourceMemory, type CheckName, type Finding, type FindingFields, type Memory } from './checks';
import { CHECK_MESSAGES } from './speaker';
import type { PoolSnapshot, RelaySnapshot } from './snapshot';

export interface RelayStatusInfo {
  dcId: string;
  /** Decimal u64, as the "listening" log line says it. */
  relayIncarnation: string;
  /** The gRPC listener. */
  address: string;
  uptimeSeconds: number;
}

export interface SourceStatus {
  worker: string;
  dpRank: number;
  pool: string;
  endpoint: string;
  mode: 'connect' | 'bind';
  connected: boolean;
  /** Seconds without a connection (since start or since it was lost); null while connected. */
  notConnectedSeconds: number | null;
  connections: number;
  lastSequence: string | null;
  /** Seconds since the last engine message (to within the diagnostics' 1 s sampling); null before the first. */
  lastEventAgeSeconds: number | null;
  events: number;
  gaps: number;
  replays: number;
  resets: number;
  drops: { malformed: number; outOfOrder: number; rejectedRanks: number; overflows: number; blockSize: number };
  kvBlockSize: number;
  /** The engine's block size when its stores were dropped for it; null when none was. */
  receivedBlockSize: number | null;
}

/** A pool as sampled (snapshot.ts). */
export type PoolStatus = PoolSnapshot;

export interface WarningStatus {
  check: CheckName;
  subject: string;
  message: string;
  forSeconds: number;
  fields: FindingFields;
}

export interface StatusDocument {
  relay: RelayStatusInfo;
  sources: SourceStatus[];
  pools: PoolStatus[];
  warnings: WarningStatus[];
}

const age = (now: number, then: number | undefined): number | null => (then === undefined ? null : Math.round(now - then) / 1000);

/** `memory`: the rules' memory observed from `snapshot` (evaluate's). */
export function statusDocument(relay: RelayStatusInfo, snapshot: RelaySnapshot, memory: Memory, findings: readonly Finding[], now: number): StatusDocument {
  const sources = snapshot.sources.map((s, i): SourceStatus => {
    const st = s.stats;
    const m = sourceMemory(memory, i);
    return {
      worker: s.worker,
      dpRank: s.dpRank,
      pool: s.pool,
      endpoint: s.endpoint,
      mode: s.mode,
      connected: st.connections > 0,
      notConnectedSeconds: st.connections > 0 ? null : age(now, m?.disconnectedSinceMs),
      connections: st.connections,
      lastSequence: st.lastSequence === null ? null : st.lastSequence.toString(),
      lastEventAgeSeconds: age(now, m?.lastEventMs),
      events: st.events,
      gaps: st.gaps,
      replays: st.replays,
      resets: st.resets,
      drops: { malformed: st.malformed, outOfOrder: st.outOfOrder, rejectedRanks: st.rejectedRanks, overflows: st.overflows, blockSize: st.droppedBlockSize },
      kvBlockSize: s.kvBlockSize,
      receivedBlockSize: st.mismatchedBlockSize > 0 ? st.mismatchedBlockSize : null,
    };
  });
  const warnings = findings.map((f): WarningStatus => ({
    check: f.check,
    subject: f.subject,
    message: CHECK_MESSAGES[f.check].begins,
    forSeconds: age(now, f.sinceMs)!,
    fields: f.fields,
  }));
  return { relay, sources, pools: snapshot.pools.map((p) => ({ ...p })), warnings };
}
