// Fault scenarios on the relay-fed cluster, each a run with a fault injected at 40 % of the window
// (by arrival time) and a timeline in ten windows: a whole DC lost and back with empty caches, a
// relay killed and restarted over engines that keep serving, a WAN partition between the routers
// and a DC, and two routers with separate in-flight views against one.
import type { PolicyName } from '../router';
import type { Cluster } from './cluster/cluster';
import type { RequestRecord, TimedAction } from './driver';
import { runOnce, sloMs, type RunResult, type Workload } from './experiment';
import { percentile } from './stats';

export const FAULT_NAMES = ['dc-loss', 'relay-restart', 'wan-partition', 'two-routers'] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

/** The DC each fault hits: the one that takes the most traffic (losing it costs the most). */
const VICTIM = 'dc-a';
const FAULT_AT = 0.4;
/** A lost DC comes back, and a partition heals, at this share of the window. */
const RECOVER_AT = 0.6;
const WINDOWS = 10;

export interface TimelineWindow {
  fromMs: number;
  toMs: number;
  requests: number;
  hitRate: number;
  ttftP50Ms: number;
  sloAttainment: number;
  /** Requests routed to the faulted DC (final attempt) and requests that needed a retry. */
  toVictim: number;
  retried: number;
}

export interface FaultResult {
  fault: FaultName;
  policy: PolicyName;
  routers: number;
  faultAtMs: number | null;
  recoverAtMs: number | null;
  run: RunResult;
  timeline: TimelineWindow[];
}

export interface FaultSpec {
  policies: readonly PolicyName[];
  load: number;
  seed: number;
}

function timeline(workload: Workload, records: readonly RequestRecord[]): TimelineWindow[] {
  const end = Math.max(...records.map((r) => r.arrivalMs));
  const width = end / WINDOWS;
  return Array.from({ length: WINDOWS }, (_, i) => {
    const [fromMs, toMs] = [i * width, (i + 1) * width];
    const rs = records.filter((r) => r.arrivalMs >= fromMs && (r.arrivalMs < toMs || (i === WINDOWS - 1 && r.arrivalMs <= toMs)));
    const served = rs.filter((r) => r.ttftMs !== null);
    const prompt = served.reduce((n, r) => n + r.inputTokens, 0);
    return {
      fromMs,
      toMs,
      requests: rs.length,
      hitRate: served.reduce((n, r) => n + (r.cachedTokens ?? 0), 0) / prompt,
      ttftP50Ms: percentile(served.map((r) => r.ttftMs!), 0.5),
      sloAttainment: rs.filter((r) => r.ttftMs !== null && r.ttftMs <= sloMs(workload.setup, r.inputTokens)).length / rs.length,
      toVictim: rs.filter((r) => r.dc === VICTIM).length,
      retried: rs.filter((r) => r.failures > 0).length,
    };
  });
}

function actionsFor(fault: FaultName, faultAtMs: number, recoverAtMs: number): ((cluster: Cluster) => TimedAction[]) | undefined {
  switch (fault) {
    case 'dc-loss':
      return (cluster) => [
        {
          atMs: faultAtMs,
          run: async (replay) => {
            await cluster.loseDc(VICTIM);
            replay.failInflight(VICTIM);
          },
        },
        { atMs: recoverAtMs, run: async (replay) => cluster.restoreDc(VICTIM, replay.nowMs) },
      ];
    case 'relay-restart':
      return (cluster) => [{ atMs: faultAtMs, run: async () => cluster.restartRelay(VICTIM) }];
    case 'wan-partition':
      return (cluster) => [
        { atMs: faultAtMs, run: async () => cluster.partition(VICTIM, true) },
        { atMs: recoverAtMs, run: async () => cluster.partition(VICTIM, false) },
      ];
    case 'two-routers':
      return undefined;
  }
}

export async function runFaults(workload: Workload, faults: readonly FaultName[], spec: FaultSpec, log: (line: string) => void): Promise<FaultResult[]> {
  const { requests } = workload.run(spec.load, spec.seed);
  const span = requests[requests.length - 1].arrivalMs;
  const [faultAtMs, recoverAtMs] = [FAULT_AT * span, RECOVER_AT * span];
  const results: FaultResult[] = [];
  for (const fault of faults) {
    for (const policy of spec.policies) {
      const variants = fault === 'two-routers' ? [1, 2] : [1];
      for (const routers of variants) {
        const saved = workload.setup.routers;
        workload.setup.routers = routers;
        try {
          const { result, records } = await runOnce(workload, { policy, load: spec.load, seed: spec.seed, faults: actionsFor(fault, faultAtMs, recoverAtMs) });
          const timed = fault === 'dc-loss' || fault === 'wan-partition';
          results.push({ fault, policy, routers, faultAtMs: fault === 'two-routers' ? null : faultAtMs, recoverAtMs: timed ? recoverAtMs : null, run: result, timeline: timeline(workload, records) });
          const s = result.summary;
          log(`${fault} ${policy} routers=${routers}: goodput ${s.goodputPerS.toFixed(2)}/s, SLO ${(100 * s.sloAttainment).toFixed(1)} %, hit ${(100 * s.hitRate).toFixed(1)} %, retried ${s.retried}`);
        } finally {
          workload.setup.routers = saved;
        }
      }
    }
  }
  return results;
}

const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)} %` : '-');

export function faultsTable(results: readonly FaultResult[]): string {
  const out: string[] = [];
  for (const r of results) {
    const s = r.run.summary;
    const when = r.faultAtMs === null ? '' : ` (fault at ${(r.faultAtMs / 1000).toFixed(0)} s${r.recoverAtMs === null ? '' : `, recovery at ${(r.recoverAtMs / 1000).toFixed(0)} s`}, simulated)`;
    out.push(`### ${r.fault}, ${r.policy}, ${r.routers} router(s)${when}\n`);
    out.push(`Measured: goodput ${s.goodputPerS.toFixed(2)} req/s, SLO ${pct(s.sloAttainment)}, hit ${pct(s.hitRate)}, router estimate ${pct(s.estimatedHitRate)}, TTFT p50 ${s.ttftMs.p50.toFixed(0)} ms, retried ${s.retried}.\n`);
    out.push(`| Window (s) | Requests | Hit rate | TTFT p50 (ms) | SLO met | To ${VICTIM} | Retried |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |`);
    for (const w of r.timeline) {
      out.push(`| ${(w.fromMs / 1000).toFixed(0)}–${(w.toMs / 1000).toFixed(0)} | ${w.requests} | ${pct(w.hitRate)} | ${Number.isFinite(w.ttftP50Ms) ? w.ttftP50Ms.toFixed(0) : '-'} | ${pct(w.sloAttainment)} | ${w.toVictim} | ${w.retried} |`);
    }
    out.push('');
  }
  return `${out.join('\n')}\n`;
}
