// The evaluation, short enough for CI, on the Mooncake trace at one load point (70 % of capacity):
// the ordering of all policies on the exact (oracle) view, then relay-fed runs with the DCs and
// relays as processes of their own, and a DC lost and back. The full sweep is `npm run sim:multidc`
// (docs/router-evaluation.md).
import { POLICY_NAMES } from '../../examples/global-router/router';
import { defaultSetup, runOnce, Workload, type RunOutput, type Setup } from '../../examples/global-router/sim/experiment';
import { runFaults } from '../../examples/global-router/sim/faults';

const TRACE = `${__dirname}/../../../shared/traces/mooncake_conversation_trace.jsonl`;
const LOAD = 0.7;
const SEED = 1;
/** Each relay-fed run starts seven processes from the sources; generous for a shared machine. */
const RUN_TIMEOUT_MS = 240_000;

function setup(over: Partial<Setup['run']>, view: Setup['view']): Setup {
  const s = defaultSetup();
  s.view = view;
  s.run = { ...s.run, tracePath: TRACE, ...over };
  return s;
}

describe('oracle view: the ordering at 70 % load', () => {
  const workload = Workload.load(setup({ requests: 700, warmup: 300 }, 'oracle'));
  const runs = new Map<string, RunOutput>();

  beforeAll(async () => {
    for (const policy of POLICY_NAMES) runs.set(policy, await runOnce(workload, { policy, load: LOAD, seed: SEED }));
  }, RUN_TIMEOUT_MS);

  it('gives kv-aware the best goodput at the TTFT SLO and the lowest median TTFT', () => {
    const summary = (p: string) => runs.get(p)!.result.summary;
    const ours = summary('kv-aware');
    for (const p of POLICY_NAMES.filter((x) => x !== 'kv-aware')) {
      expect([p, ours.goodputPerS]).toEqual([p, expect.any(Number)]);
      expect(ours.goodputPerS).toBeGreaterThan(summary(p).goodputPerS);
      expect(ours.ttftMs.p50).toBeLessThan(summary(p).ttftMs.p50);
    }
    // Every measured request was served, and the cache-aware ones reuse more than the blind ones.
    expect(ours.served).toBe(ours.requests);
    expect(ours.hitRate).toBeGreaterThan(summary('random').hitRate);
    expect(ours.hitRate).toBeGreaterThan(summary('round-robin').hitRate + 0.02);
  });
});

describe('relay view: DCs and relays in processes of their own', () => {
  const workload = Workload.load(setup({ requests: 300, warmup: 100, wallRequestsPerS: 30 }, 'relay'));

  it(
    'routes on the relays’ replicas: kv-aware reuses more and meets the SLO more often than random',
    async () => {
      const ours = await runOnce(workload, { policy: 'kv-aware', load: LOAD, seed: SEED });
      const random = await runOnce(workload, { policy: 'random', load: LOAD, seed: SEED });
      const [o, r] = [ours.result.summary, random.result.summary];
      // Every request of the window finished, each counted once by the engines and the router.
      for (const run of [ours, random]) {
        expect(run.records).toHaveLength(300);
        expect(run.records.every((x) => x.ttftMs !== null && x.e2eMs !== null && x.failures === 0)).toBe(true);
      }
      expect(o.hitRate).toBeGreaterThan(r.hitRate + 0.02);
      // What the router read from the relays is what the engines then reused, within a few points.
      expect(Math.abs(o.estimatedHitRate - o.hitRate)).toBeLessThan(0.05);
      expect(r.estimatedHitRate).toBe(0); // random never looks at the cache
      expect(o.sloAttainment).toBeGreaterThanOrEqual(r.sloAttainment);
    },
    2 * RUN_TIMEOUT_MS,
  );

  it(
    'retries what a lost DC had in flight elsewhere, routes nothing there while it is gone, and uses it again once back',
    async () => {
      const [result] = await runFaults(workload, ['dc-loss'], { policies: ['kv-aware'], load: LOAD, seed: SEED }, () => undefined);
      const during = result.timeline.filter((w) => w.fromMs >= result.faultAtMs! && w.toMs <= result.recoverAtMs!);
      expect(during.length).toBeGreaterThan(0);
      expect(during.every((w) => w.toVictim === 0)).toBe(true);
      const after = result.timeline.filter((w) => w.fromMs >= result.recoverAtMs! + (result.recoverAtMs! - result.faultAtMs!) / 2);
      expect(after.some((w) => w.toVictim > 0)).toBe(true);
      expect(result.run.summary.served).toBe(result.run.summary.requests);
    },
    RUN_TIMEOUT_MS,
  );
});
