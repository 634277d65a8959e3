// The relay's diagnostics: every DIAGNOSTICS_INTERVAL_MS a round samples every source and pool,
// evaluates the rules (checks.ts) and says what began, still holds or ended (speaker.ts) in the JSON
// log. The status view and the metrics read the same state. The clock is injected: tests drive the
// rounds themselves (tick()) over snapshots they write.
import { monotonicMs } from '../clock';
import { everyInterval } from '../periodic';
import {
  DELTA_LATENCY_RECENT_MS,
  DELTA_LATENCY_RECENT_SAMPLES,
  DIAGNOSTICS_BLOCK_SIZE_HOLD_MS,
  DIAGNOSTICS_MAX_LINES_PER_ROUND,
  DIAGNOSTICS_NOT_CONNECTED_MS,
  DIAGNOSTICS_POOL_EMPTY_MS,
  DIAGNOSTICS_REPEAT_MS,
} from '../config/defaults';
import { CHECKS, EMPTY_MEMORY, evaluate, hasSubject, sourceMemory, type CheckName, type Finding, type Memory, type Thresholds } from './checks';
import { RecentLatency } from './recent-latency';
import type { RelaySnapshot } from './snapshot';
import { Speaker } from './speaker';
import { statusDocument, type RelayStatusInfo, type StatusDocument } from './status';

export interface DiagnosticsLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface DiagnosticsOptions {
  /** One sample of every source and pool; `latency` holds each pool's recent delta latencies. */
  sample(latency: RecentLatency, now: number): RelaySnapshot;
  relayInfo(): RelayStatusInfo;
  logger: DiagnosticsLogger;
  /** Milliseconds of a monotonic clock (default: src/clock.ts). */
  now?: () => number;
  thresholds?: Partial<Thresholds>;
  repeatMs?: number;
  maxLinesPerRound?: number;
}

/** What /metrics exports of the diagnostics. */
export interface DiagnosticsMetrics {
  /** Per check, the sources or pools for which it holds now. */
  active: Record<CheckName, number>;
  /** Per source, seconds since its last engine message (or since it was first sampled, before any). */
  lastEventAge: { worker: string; dpRank: number; seconds: number }[];
}

export class Diagnostics {
  readonly latency = new RecentLatency(DELTA_LATENCY_RECENT_SAMPLES, DELTA_LATENCY_RECENT_MS);
  private readonly now: () => number;
  private readonly thresholds: Thresholds;
  private readonly speaker: Speaker;
  private memory: Memory = EMPTY_MEMORY;
  private snapshot: RelaySnapshot = { sources: [], pools: [] };
  private findings: Finding[] = [];
  /** Stops the rounds (start()). */
  private stopRounds: (() => void) | undefined;

  constructor(private readonly options: DiagnosticsOptions) {
    this.now = options.now ?? monotonicMs;
    this.thresholds = {
      notConnectedMs: DIAGNOSTICS_NOT_CONNECTED_MS,
      poolEmptyMs: DIAGNOSTICS_POOL_EMPTY_MS,
      blockSizeHoldMs: DIAGNOSTICS_BLOCK_SIZE_HOLD_MS,
      ...options.thresholds,
    };
    this.speaker = new Speaker(options.repeatMs ?? DIAGNOSTICS_REPEAT_MS, options.maxLinesPerRound ?? DIAGNOSTICS_MAX_LINES_PER_ROUND);
  }

  /** Observes the pool's delta latency (the producer's onDeltaPublished). */
  deltaPublished(pool: string, latencyMs: number): void {
    this.latency.observe(pool, latencyMs, this.now());
  }

  /** One round: sample, evaluate, log what began, still holds (rate-limited) or ended. */
  tick(): void {
    const now = this.now();
    this.snapshot = this.options.sample(this.latency, now);
    this.latency.keep(new Set(this.snapshot.pools.map((p) => p.pool)));
    const { memory, findings } = evaluate(this.memory, this.snapshot, now, this.thresholds);
    this.memory = memory;
    this.findings = findings;
    // The memory has every source and pool of this snapshot: no set of every name per round.
    const present = { has: (subject: string) => hasSubject(memory, subject) };
    for (const line of this.speaker.round(findings, now, present)) this.options.logger[line.level](line.fields, line.msg);
  }

  /** Rounds every `intervalMs` until close(), on the timer the relay's other work of that interval shares (src/periodic.ts). */
  start(intervalMs: number): void {
    this.stopRounds ??= everyInterval(intervalMs, () => this.tick());
  }

  close(): void {
    this.stopRounds?.();
    this.stopRounds = undefined;
  }

  /** The status view now: a fresh sample, judged against the last round's memory (which it leaves as is). */
  status(): StatusDocument {
    const now = this.now();
    const snapshot = this.options.sample(this.latency, now);
    const { memory, findings } = evaluate(this.memory, snapshot, now, this.thresholds);
    return statusDocument(this.options.relayInfo(), snapshot, memory, findings, now);
  }

  /** As of the last round. */
  metrics(): DiagnosticsMetrics {
    const now = this.now();
    const active = Object.fromEntries(CHECKS.map((c) => [c, 0])) as Record<CheckName, number>;
    for (const f of this.findings) active[f.check] += 1;
    // The last round's memory was observed from its snapshot: a source's memory is at its position.
    const lastEventAge = this.snapshot.sources.map((s, i) => {
      const m = sourceMemory(this.memory, i);
      const then = m?.lastEventMs ?? m?.firstSeenMs ?? now;
      return { worker: s.worker, dpRank: s.dpRank, seconds: Math.max(0, now - then) / 1000 };
    });
    return { active, lastEventAge };
  }
}
