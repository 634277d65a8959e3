// One scenario of the multi-DC simulation: fresh DCs (engines + relays), a WAN delay proxy per
// relay, a GlobalRouter with one policy, and the shared request stream paced in real time. Every
// routed request becomes engine work in the chosen DC, so the caches evolve with the decisions.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { Rng } from '../../../src/sim/rng';
import { GlobalRouter, policyByName, type PolicyName } from '../router';
import { waitReady } from '../router/ready';
import { Datacenter, type Served } from './datacenter';
import { DelayProxy } from './delay-proxy';
import { DEFAULT_CLUSTER, DEFAULT_RUN, DEFAULT_WORKLOAD, type ClusterOptions, type RunOptions, type WorkloadOptions } from './options';
import { imbalance, percentile } from './stats';
import { MultiTenantWorkload } from './workload';

export interface ScenarioSpec {
  name: string;
  policy: PolicyName;
  run?: Partial<RunOptions>;
  workload?: Partial<WorkloadOptions>;
  cluster?: Partial<ClusterOptions>;
}

export interface DownDcReport {
  dc: string;
  /** Request index at which its relay was stopped. */
  downAtRequest: number;
  /** Request index at which the router saw its replica invalidated (null: never). */
  invalidatedAtRequest: number | null;
  routedAfterDown: number;
  routedAfterInvalidation: number;
  /** Hit rate of the requests after the relay went down. */
  hitRateAfterDown: number;
}

export interface ScenarioResult {
  name: string;
  policy: PolicyName;
  wanDelayMs: number;
  /** Measured requests (after warm-up) that were routed. */
  requests: number;
  /** Requests with no eligible DC. */
  rejected: number;
  /** Tokens served from cache / prompt tokens, measured in the engines. */
  hitRate: number;
  /** What the router believed: matched tokens of the chosen pool / prompt tokens. */
  estimatedHitRate: number;
  perDc: Record<string, number>;
  /** max / mean of requests per DC. */
  balance: number;
  decisionUs: { p50: number; p99: number };
  /** Simulated time to first token (queueing + prefill of the uncached part), ms. */
  ttftMs: { p50: number; p99: number };
  /** How far behind its schedule the request loop ran (machine load), ms at p99. */
  lateMsP99: number;
  down?: DownDcReport;
}

const DC_NAMES = ['dc-a', 'dc-b', 'dc-c', 'dc-d', 'dc-e', 'dc-f', 'dc-g', 'dc-h'];
const READY_TIMEOUT_MS = 30_000;
const GAUGE_INTERVAL_MS = 20;

export async function runScenario(spec: ScenarioSpec): Promise<ScenarioResult> {
  const run: RunOptions = { ...DEFAULT_RUN, ...spec.run };
  const cluster: ClusterOptions = { ...DEFAULT_CLUSTER, ...spec.cluster };
  const workloadOptions: WorkloadOptions = { ...DEFAULT_WORKLOAD, ...spec.workload };
  if (!(cluster.dcs >= 1 && cluster.dcs <= DC_NAMES.length)) throw new RangeError(`dcs must be in 1..${DC_NAMES.length}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-dc-relay-multidc-'));
  const dcs: Datacenter[] = [];
  const proxies: DelayProxy[] = [];
  let router: GlobalRouter | undefined;
  const timers = new Set<NodeJS.Timeout>();
  try {
    for (const name of DC_NAMES.slice(0, cluster.dcs)) dcs.push(await Datacenter.start(name, cluster, run.model, dir));
    for (const dc of dcs) proxies.push(await DelayProxy.start({ target: dc.relayAddress, delayMs: run.wanDelayMs }));
    // The policy's coin is its own stream: arrivals must not depend on which policy runs.
    const coin = new Rng(workloadOptions.seed ^ 0x5ca1ab1e);
    router = new GlobalRouter({
      dcs: dcs.map((dc, i) => ({ name: dc.name, address: proxies[i].address })),
      subscriberId: 'multidc-sim',
      policy: policyByName(spec.policy, { random: () => coin.next() }),
      client: { backoff: { initialMs: 50, maxMs: 1_000 } },
    });
    router.start();
    const missing = await waitReady(router, run.model, READY_TIMEOUT_MS);
    if (missing.length > 0) throw new Error(`no complete view of ${missing.join(', ')} after ${READY_TIMEOUT_MS} ms`);
    return await drive(spec, run, workloadOptions, dcs, router, timers);
  } finally {
    for (const t of timers) clearTimeout(t);
    router?.close();
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(dcs.map((dc) => dc.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function drive(
  spec: ScenarioSpec,
  run: RunOptions,
  workloadOptions: WorkloadOptions,
  dcs: Datacenter[],
  router: GlobalRouter,
  timers: Set<NodeJS.Timeout>,
): Promise<ScenarioResult> {
  const workload = new MultiTenantWorkload(workloadOptions);
  const arrivals = new Rng(workloadOptions.seed ^ 0xa441a1);
  const byName = new Map(dcs.map((dc) => [dc.name, dc]));
  const warmup = Math.floor(run.requests * run.warmup);
  const downAt = run.relayDownAt === undefined ? undefined : Math.floor(run.requests * run.relayDownAt);
  const t0 = performance.now();
  const clock = () => performance.now() - t0;
  const gauges = setInterval(() => dcs.forEach((dc) => dc.publishGauges(clock())), GAUGE_INTERVAL_MS);

  const perDc: Record<string, number> = Object.fromEntries(dcs.map((dc) => [dc.name, 0]));
  const decisionUs: number[] = [];
  const ttft: number[] = [];
  const late: number[] = [];
  let promptTokens = 0;
  let cachedTokens = 0;
  let estimatedTokens = 0;
  let rejected = 0;
  let down: DownDcReport | undefined;
  let afterDown = { prompt: 0, cached: 0 };
  let index = 0;
  router.on('replicaInvalidated', (dc) => {
    if (down && dc === down.dc && down.invalidatedAtRequest === null) down.invalidatedAtRequest = index;
  });

  try {
    let arrivalMs = 0;
    for (; index < run.requests; index++) {
      arrivalMs += -Math.log(1 - arrivals.next()) * run.intervalMs;
      const wait = arrivalMs - clock();
      // Behind schedule, still let pending I/O (relay deltas on their way to the router) run first.
      await (wait > 0 ? sleep(wait) : new Promise(setImmediate));
      late.push(Math.max(0, clock() - arrivalMs));
      if (index === downAt) {
        const victim = busiest(dcs, perDc);
        down = { dc: victim.name, downAtRequest: index, invalidatedAtRequest: null, routedAfterDown: 0, routedAfterInvalidation: 0, hitRateAfterDown: NaN };
        await victim.stopRelay();
      }
      const request = workload.next();
      const afterInvalidation = down !== undefined && down.invalidatedAtRequest !== null;
      const started = performance.now();
      const decision = router.route({ model: run.model, tokens: request.tokens });
      const tookUs = (performance.now() - started) * 1000;
      const chosen = decision.chosen;
      if (!chosen) {
        if (index >= warmup) rejected++;
        continue;
      }
      const served: Served = await byName.get(chosen.dc)!.serve(request, arrivalMs);
      const release = setTimeout(() => {
        timers.delete(release);
        decision.release();
      }, Math.max(0, served.finishMs - clock()));
      timers.add(release);
      if (down && chosen.dc === down.dc) {
        down.routedAfterDown++;
        if (afterInvalidation) down.routedAfterInvalidation++;
      }
      if (down) afterDown = { prompt: afterDown.prompt + served.promptTokens, cached: afterDown.cached + served.cachedTokens };
      if (index < warmup) continue;
      perDc[chosen.dc]++;
      decisionUs.push(tookUs);
      ttft.push(served.firstTokenMs - arrivalMs);
      promptTokens += served.promptTokens;
      cachedTokens += served.cachedTokens;
      estimatedTokens += Math.min(chosen.matchedTokens ?? 0, served.promptTokens);
    }
  } finally {
    clearInterval(gauges);
  }
  if (down) down.hitRateAfterDown = afterDown.cached / afterDown.prompt;
  return {
    name: spec.name,
    policy: spec.policy,
    wanDelayMs: run.wanDelayMs,
    requests: decisionUs.length,
    rejected,
    hitRate: cachedTokens / promptTokens,
    estimatedHitRate: estimatedTokens / promptTokens,
    perDc,
    balance: imbalance(Object.values(perDc)),
    decisionUs: { p50: percentile(decisionUs, 0.5), p99: percentile(decisionUs, 0.99) },
    ttftMs: { p50: percentile(ttft, 0.5), p99: percentile(ttft, 0.99) },
    lateMsP99: percentile(late, 0.99),
    down,
  };
}

/** The DC that took the most requests so far: losing its relay costs the most. */
function busiest(dcs: Datacenter[], perDc: Record<string, number>): Datacenter {
  return dcs.reduce((a, b) => (perDc[b.name] > perDc[a.name] ? b : a));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
