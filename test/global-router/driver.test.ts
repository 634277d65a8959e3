// The replay on simulated time keeps every router's book exact: at each decision, what the policy
// sees in flight at a DC is exactly the requests routed there whose completion had reached the
// router by then, whatever the host's speed; TTFT is first token at the engine plus both WAN legs.
import { leastLoad, type Candidate, type Policy } from '../../examples/global-router/router';
import { unpacedClock } from '../../examples/global-router/sim/clock';
import { drive, type RouterPort } from '../../examples/global-router/sim/driver';
import { LocalDc, OracleRouter } from '../../examples/global-router/sim/local-cluster';
import { rankConfig } from '../../examples/global-router/sim/experiment';
import { DEFAULT_ENGINE } from '../../examples/global-router/sim/options';
import { MultiTenantWorkload } from '../../examples/global-router/sim/workload';

describe('replay driver', () => {
  it('shows each policy decision the exact in-flight work, and measures TTFT across the WAN', async () => {
    const config = rankConfig({ ...DEFAULT_ENGINE, kvCapacityTokens: 60_000 });
    const dcs = [new LocalDc('near', 2, config, 5), new LocalDc('far', 1, config, 30)];
    const seen: { atMs: number; inflight: Record<string, number> }[] = [];
    const inner = leastLoad({ random: () => 0 });
    let now = 0;
    const recording: Policy = {
      name: 'recording',
      usesPrefix: false,
      choose: (cs: readonly Candidate[], r) => {
        seen.push({ atMs: now, inflight: Object.fromEntries(cs.map((c) => [c.dc, c.inflight])) });
        return inner.choose(cs, r);
      },
    };
    const router = new OracleRouter(dcs, recording, config);
    const requests = new MultiTenantWorkload({ seed: 3 }).requests(300, 40); // heavy enough to queue
    const records = await drive({
      requests,
      dcs,
      routers: [{ route: (req, t) => ((now = t), router.route(req)) }],
      clock: unpacedClock,
    });
    expect(records.every((r) => r.ttftMs !== null && r.e2eMs !== null)).toBe(true);
    const oneWay = { near: 5, far: 30 } as Record<string, number>;
    // Ground truth from the records: routed before t, its last token back after t.
    seen.forEach(({ atMs, inflight }, i) => {
      for (const dc of ['near', 'far']) {
        const truth = records.filter((r) => r.id < i && r.dc === dc && r.arrivalMs + r.e2eMs! > atMs).length;
        expect([i, dc, inflight[dc]]).toEqual([i, dc, truth]);
      }
    });
    expect(Math.max(...seen.map((s) => s.inflight.near + s.inflight.far))).toBeGreaterThan(5);
    // Nothing comes back sooner than the two WAN legs.
    for (const r of records) expect(r.ttftMs!).toBeGreaterThan(2 * oneWay[r.dc!]);
  });

  it('tells the router when an attempt fails (its health signal) and retries the request elsewhere', async () => {
    const config = rankConfig({ ...DEFAULT_ENGINE, kvCapacityTokens: 60_000 });
    const cut = new LocalDc('cut', 1, config, 5);
    cut.reachable = false; // a WAN partition: requests sent there get no answer
    const dcs = [cut, new LocalDc('ok', 1, config, 5)];
    const outcomes: string[] = [];
    const attempted = new Set<number>();
    // First attempt of every request to the cut DC, the retry to the other.
    const router: RouterPort = {
      route: (req) => {
        const dc = attempted.has(req.id) ? 'ok' : 'cut';
        attempted.add(req.id);
        const note = (what: string) => () => void outcomes.push(`${req.id} ${dc} ${what}`);
        return { dc, matchedTokens: null, booking: { firstToken: note('firstToken'), release: note('release'), fail: note('fail') } };
      },
    };
    const requests = new MultiTenantWorkload({ seed: 3 }).requests(3, 10);
    const records = await drive({ requests, dcs, routers: [router], clock: unpacedClock, failureTimeoutMs: 700 });
    for (const r of records) {
      expect(r).toMatchObject({ dc: 'ok', failures: 1 });
      expect(r.ttftMs!).toBeGreaterThan(700); // the failed attempt's timeout counts
      expect(outcomes.filter((o) => o.startsWith(`${r.id} `))).toEqual([`${r.id} cut fail`, `${r.id} ok firstToken`, `${r.id} ok release`]);
    }
  });
});
