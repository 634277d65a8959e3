// One run: a workload window at an offered load, one policy, fresh DCs. With the relay view (the
// evaluation) the DCs are processes behind their own relays and the routers read them over gRPC
// through the WAN proxies, paced against wall time; with the oracle view the engines run in this
// process and the router reads them directly, unpaced (calibration and the view's upper bound).
import { DEFAULT_FAILURE_HOLD_MS, GlobalRouter, policyByName, type PolicyName } from '../router';
import { waitReady } from '../router/ready';
import { Rng } from '../../../src/sim/rng';
import { traceCapacityPerS, tokensCapacityPerS } from './capacity';
import { unpacedClock, wallClock } from './clock';
import { Cluster } from './cluster/cluster';
import { Replay, type DcPort, type RequestRecord, type RouterPort, type TimedAction } from './driver';
import { LLAMA3_8B_A100 } from './engine/calibration';
import type { RankConfig } from './engine/rank';
import { prefillAloneMs } from './engine/step-time';
import { LocalDc, OracleRouter } from './local-cluster';
import { summarize, type RunSummary } from './metrics';
import { DEFAULT_DCS, DEFAULT_ENGINE, DEFAULT_RUN, DEFAULT_WORKLOAD, type DcSpec, type EngineSpec, type RunDefaults, type WorkloadKind } from './options';
import { RelayRouter } from './relay-router';
import type { SimRequest } from './request';
import { readTrace, timeScaleFor, TRACE_BLOCK_TOKENS, traceRequests, windowStart, type TraceRecord } from './trace';
import { MultiTenantWorkload } from './workload';

export type View = 'relay' | 'oracle';

/** What every run of a sweep shares. */
export interface Setup {
  workload: WorkloadKind;
  dcs: readonly DcSpec[];
  engine: EngineSpec;
  run: RunDefaults;
  view: View;
  /** Routers splitting the traffic, each with its own in-flight view. */
  routers: number;
  /** Options passed to the policies (e.g. the kv-aware prefill rate). */
  prefillTokensPerMs?: number;
  /** Whether routers are told each request's TTFT SLO (the kv-aware policy's triage uses it; the others ignore it). */
  sloToRouter: boolean;
}

export function defaultSetup(): Setup {
  return { workload: DEFAULT_RUN.workload, dcs: DEFAULT_DCS, engine: DEFAULT_ENGINE, run: { ...DEFAULT_RUN }, view: 'relay', routers: 1, sloToRouter: true };
}

export function rankConfig(engine: EngineSpec): RankConfig {
  return {
    blockSize: engine.blockSize,
    capacityBlocks: Math.floor(engine.kvCapacityTokens / engine.blockSize),
    maxNumSeqs: engine.maxNumSeqs,
    maxBatchedTokens: engine.maxBatchedTokens,
    calibration: LLAMA3_8B_A100,
  };
}

/** One run's requests and the rate they are offered at. */
export interface RunLoad {
  requests: SimRequest[];
  /** 100 % load for this run's requests: what the cluster serves of this mix (capacity.ts), req/s. */
  capacityPerS: number;
  /** load × capacityPerS: the rate the requests arrive at on average. */
  offeredPerS: number;
}

/**
 * The workload's records (trace) or generator (synthetic). Load is relative to each run's own
 * request mix: a trace window's capacity is measured on that window's records (from cold caches, as
 * the run starts), because the hour's windows differ by a third in work per request (mean prompt
 * 10.7 k to 14.5 k tokens) and a rate calibrated on the whole hour overloads the heavy windows at a
 * nominal 70 %. The synthetic workload's mix is stationary: one capacity, measured on a sample.
 */
export class Workload {
  private readonly ranks: number;
  private readonly syntheticCapacityPerS: number | null;

  private constructor(
    readonly setup: Setup,
    private readonly trace: TraceRecord[] | null,
  ) {
    this.ranks = setup.dcs.reduce((n, d) => n + d.ranks, 0);
    if (trace) {
      this.syntheticCapacityPerS = null;
    } else {
      const sample = new MultiTenantWorkload({ ...DEFAULT_WORKLOAD, seed: 1 });
      const prompts = Array.from({ length: 4000 }, () => sample.next());
      this.syntheticCapacityPerS = tokensCapacityPerS(prompts, setup.engine.blockSize, LLAMA3_8B_A100, this.ranks);
    }
  }

  static load(setup: Setup): Workload {
    return new Workload(setup, setup.workload === 'trace' ? readTrace(setup.run.tracePath) : null);
  }

  /** The records of the seed's trace window (windowStart). */
  private window(seed: number): { start: number; records: TraceRecord[] } {
    const trace = this.trace!;
    const count = this.setup.run.requests;
    if (count > trace.length) throw new RangeError(`the trace has ${trace.length} records, fewer than ${count}`);
    const start = windowStart(trace.length, count, seed);
    return { start, records: trace.slice(start, start + count) };
  }

  /** 100 % load of the seed's run, req/s (see RunLoad). */
  capacityPerS(seed: number): number {
    if (this.syntheticCapacityPerS !== null) return this.syntheticCapacityPerS;
    return traceCapacityPerS(this.window(seed).records, TRACE_BLOCK_TOKENS, LLAMA3_8B_A100, this.ranks);
  }

  /** The requests of one run, offered at `load` × the capacity of their own mix. */
  run(load: number, seed: number): RunLoad {
    const count = this.setup.run.requests;
    const capacityPerS = this.capacityPerS(seed);
    const offeredPerS = capacityPerS * load;
    if (!this.trace) return { requests: new MultiTenantWorkload({ ...DEFAULT_WORKLOAD, seed }).requests(count, offeredPerS), capacityPerS, offeredPerS };
    const { start, records } = this.window(seed);
    return { requests: traceRequests(this.trace, { start, count, timeScale: timeScaleFor(records, offeredPerS) }), capacityPerS, offeredPerS };
  }
}

export interface RunSpec {
  policy: PolicyName;
  load: number;
  seed: number;
  /** Faults to inject (given the cluster; relay view only). */
  faults?: (cluster: Cluster) => TimedAction[];
  onRouted?: (record: RequestRecord) => void;
}

export interface RunResult {
  policy: PolicyName;
  load: number;
  seed: number;
  view: View;
  routers: number;
  /** Whether the routers were told each request's TTFT SLO (Setup.sloToRouter; only kv-aware reads it). Absent: not told (runs before the option). */
  sloToRouter?: boolean;
  /** Simulated ms per wall ms the run was paced at (relay view). */
  speed: number | null;
  /** 100 % load for this run's window, and load × that (req/s). */
  capacityPerS: number;
  offeredPerS: number;
  summary: RunSummary;
  wallSeconds: number;
}

export interface RunOutput {
  result: RunResult;
  records: RequestRecord[];
}

export function sloMs(setup: Setup, inputTokens: number): number {
  const rtt = 2 * Math.min(...setup.dcs.map((d) => d.oneWayMs));
  const alone = prefillAloneMs(LLAMA3_8B_A100, inputTokens, setup.engine.maxBatchedTokens);
  return Math.max(setup.run.sloFloorMs, setup.run.sloScale * (alone + rtt));
}

export async function runOnce(workload: Workload, spec: RunSpec): Promise<RunOutput> {
  const { setup } = workload;
  const { requests, capacityPerS, offeredPerS: offered } = workload.run(spec.load, spec.seed);
  const started = Date.now();
  // The policies' coins are their own stream per router: arrivals do not depend on the policy.
  const coin = (i: number) => {
    const rng = new Rng((spec.seed * 7919) ^ (0x5ca1ab1e + i));
    return () => rng.next();
  };
  const policy = (i: number) => policyByName(spec.policy, { random: coin(i), prefillTokensPerMs: setup.prefillTokensPerMs });
  const config = rankConfig(setup.engine);
  const routerSlo = setup.sloToRouter ? (r: SimRequest) => sloMs(setup, r.inputTokens) : undefined;
  let records: RequestRecord[];
  let speed: number | null = null;
  if (setup.view === 'oracle') {
    const dcs = setup.dcs.map((d) => new LocalDc(d.name, d.ranks, config, d.oneWayMs));
    const routers = Array.from({ length: setup.routers }, (_, i) => new OracleRouter(dcs, policy(i), config, routerSlo));
    records = await new Replay({ requests, dcs, routers, clock: unpacedClock, failureTimeoutMs: setup.run.failureTimeoutMs, onRouted: spec.onRouted }).run();
  } else {
    speed = setup.run.speed === 'auto' ? setup.run.wallRequestsPerS / offered : setup.run.speed;
    const cluster = await Cluster.start({ dcs: setup.dcs, rank: config, model: setup.run.model, loadWindowMs: setup.run.loadWindowMs, wallPerSimMs: 1 / speed });
    const globals: GlobalRouter[] = [];
    try {
      const routers: RouterPort[] = [];
      for (let i = 0; i < setup.routers; i++) {
        // The router times its failure hold on the wall clock; the run is paced `speed` times faster,
        // so the hold is given in wall time to last its default in simulated time (as the WAN's
        // failure timeout does). The load windows' silence is already in the relays' wall-clock windows.
        const router = new GlobalRouter({
          dcs: cluster.targets(),
          subscriberId: `sim-router-${i}`,
          policy: policy(i),
          failureHoldMs: DEFAULT_FAILURE_HOLD_MS / speed,
          client: { backoff: { initialMs: 50, maxMs: 1_000 } },
        });
        globals.push(router);
        router.start();
        const missing = await waitReady(router, setup.run.model, 30_000);
        if (missing.length > 0) throw new Error(`router ${i} has no complete view of ${missing.join(', ')}`);
        routers.push(new RelayRouter(router, setup.run.model, routerSlo));
      }
      const dcs: DcPort[] = cluster.dcs;
      records = await new Replay({
        requests,
        dcs,
        routers,
        clock: wallClock(speed, setup.run.tickMs),
        failureTimeoutMs: setup.run.failureTimeoutMs,
        actions: spec.faults?.(cluster),
        onRouted: spec.onRouted,
      }).run();
    } finally {
      for (const r of globals) r.close();
      await cluster.stop();
    }
  }
  const summary = summarize(records, {
    warmup: setup.run.warmup,
    sloMs: (r) => sloMs(setup, r.inputTokens),
    ranks: Object.fromEntries(setup.dcs.map((d) => [d.name, d.ranks])),
  });
  return {
    result: { policy: spec.policy, load: spec.load, seed: spec.seed, view: setup.view, routers: setup.routers, sloToRouter: setup.sloToRouter, speed, capacityPerS, offeredPerS: offered, summary, wallSeconds: (Date.now() - started) / 1000 },
    records,
  };
}
