// The kv-aware triage's budget: it gives up on no more work than the cluster's excess over its
// capacity in the sliding window, and on nothing below capacity, through the policy too.
import { excessBudgetTokens, kvAware, TriageBudget, type Candidate } from '../../examples/global-router/router';

describe('excessBudgetTokens', () => {
  it('is the offered work beyond capacity × window, less what was already given up on', () => {
    expect(excessBudgetTokens(1000, 0, 1, 1000)).toBe(0); // exactly at capacity: nothing
    expect(excessBudgetTokens(900, 0, 1, 1000)).toBe(0); // below it: nothing, never negative offered
    expect(excessBudgetTokens(1200, 0, 1, 1000)).toBe(200);
    expect(excessBudgetTokens(1200, 150, 1, 1000)).toBe(50);
    expect(excessBudgetTokens(1200, 250, 1, 1000)).toBe(-50);
  });
});

/** Requests of `tokens` arriving every `everyMs` from 0 to `untilMs`; each one asks to be given up on and is when allowed. */
function stream(budget: TriageBudget, ranks: number, tokens: number, everyMs: number, untilMs: number, startMs = 0) {
  const events: { atMs: number; givenUp: boolean }[] = [];
  for (let t = startMs; t < untilMs; t += everyMs) {
    budget.offer(t, tokens);
    const givenUp = budget.allows(t, tokens, ranks);
    if (givenUp) budget.giveUp(t, tokens);
    events.push({ atMs: t, givenUp });
  }
  return events;
}

describe('TriageBudget', () => {
  // 4 ranks × 2 tokens/ms = 8 tokens/ms; window 1 s (32 buckets of 31.25 ms).
  const options = { sustainedTokensPerMs: 2, windowMs: 1000, excess: 'cluster' as const, use: 'bound' as const };

  it('never allows giving up below capacity, however long it runs', () => {
    const budget = new TriageBudget(options);
    // 800 tokens every 125 ms = 6.4 tokens/ms (80 % of capacity) for a minute, then exactly at capacity.
    expect(stream(budget, 4, 800, 125, 60_000).some((e) => e.givenUp)).toBe(false);
    expect(stream(budget, 4, 1000, 125, 120_000, 60_000).some((e) => e.givenUp)).toBe(false);
  });

  it('above capacity gives up on about the excess and never more, in every window', () => {
    const budget = new TriageBudget(options);
    // 1 200 tokens every 125 ms = 9.6 tokens/ms: 20 % over capacity, 1 600 tokens of excess per second.
    const events = stream(budget, 4, 1200, 125, 60_000);
    const bucketMs = options.windowMs / 32;
    for (const e of events.filter((x) => x.givenUp)) {
      // The window the budget judged by: the buckets from one window before e's bucket to it.
      const start = Math.floor(e.atMs / bucketMs) * bucketMs;
      const inWindow = events.filter((x) => x.atMs > start - options.windowMs + bucketMs - 1e-9 && x.atMs <= e.atMs);
      const offered = 1200 * inWindow.length;
      const givenUp = 1200 * inWindow.filter((x) => x.givenUp).length;
      expect(givenUp).toBeLessThanOrEqual(offered - 8 * options.windowMs);
    }
    // In steady state one request in six (the 1 600 tokens of excess per second, in requests of 1 200: 1.33 of 8 per second).
    const late = events.filter((e) => e.atMs >= 10_000);
    const share = late.filter((e) => e.givenUp).length / late.length;
    expect(share).toBeGreaterThan(0.1);
    expect(share).toBeLessThanOrEqual(1600 / 9600 + 1e-9);
  });

  it('forgets an overload once it leaves the window', () => {
    const budget = new TriageBudget(options);
    for (let t = 0; t < 2000; t += 100) budget.offer(t, 2000); // 20 tokens/ms for 2 s, nothing given up
    expect(budget.allows(2000, 1, 4)).toBe(true);
    expect(budget.allows(3100, 1, 4)).toBe(false); // more than a window later, nothing offered since
  });

  it('scales capacity with the ranks it is told are eligible (a DC lost leaves less capacity)', () => {
    const budget = new TriageBudget(options);
    stream(budget, 4, 1000, 125, 5000); // 8 tokens/ms: at capacity with 4 ranks, the same over 3
    expect(budget.allows(5000, 100, 4)).toBe(false);
    expect(budget.allows(5000, 100, 3)).toBe(true);
  });

  it('rejects a bad option and ignores time running backwards', () => {
    expect(() => new TriageBudget({ ...options, sustainedTokensPerMs: 0 })).toThrow(RangeError);
    expect(() => new TriageBudget({ ...options, windowMs: Number.NaN })).toThrow(RangeError);
    const budget = new TriageBudget(options);
    budget.offer(5000, 20_000);
    budget.offer(1000, 20_000); // counted at 5 000, not in a window of its own
    expect(budget.allows(5000, 31_000, 4)).toBe(true); // 40 000 offered − 8 000 of capacity
    expect(budget.allows(6100, 1, 4)).toBe(false);
  });
});

describe('kvAware with the triage budget', () => {
  const rate = 10; // tokens per ms per rank
  const pool = (dc: string, queuedTokens: number): Candidate => ({
    dc,
    poolKey: `pool-${dc}`,
    endpoint: 'prod.backend.generate',
    promptTokens: 1000,
    matchedTokens: 0,
    blockSize: 10,
    ranks: 1,
    capacity: 10,
    kvUsage: null,
    rttMs: 0,
    inflight: 1,
    awaitingFirstToken: 1,
    pendingPrefillTokens: queuedTokens,
    pendingPrefills: [queuedTokens],
    activeBlocks: 0,
    lastResort: false,
  });
  // Waits 200 and 400 ms: a 150 ms target is met nowhere, so every request is judged lost.
  const pools = [pool('short', 1000), pool('long', 3000)];

  it('routes a request judged lost by the normal score while the cluster is below capacity', () => {
    // 2 ranks × 1 token/ms sustained; 1 000-token requests every 1 000 ms: half of capacity.
    const policy = kvAware({ prefillTokensPerMs: rate, triageBudget: { sustainedTokensPerMs: 1, windowMs: 10_000, excess: 'cluster', use: 'bound' } });
    for (let t = 0; t < 60_000; t += 1000) expect(policy.choose(pools, { tokens: [1], ttftSloMs: 150, atMs: t }).dc).toBe('short');
  });

  it('above capacity gives up on the excess only: the rest goes to the shortest wait', () => {
    // 1 000-token requests every 250 ms = 4 tokens/ms against 2: half the work is excess.
    const policy = kvAware({ prefillTokensPerMs: rate, triageBudget: { sustainedTokensPerMs: 1, windowMs: 10_000, excess: 'cluster', use: 'bound' } });
    const chosen: string[] = [];
    for (let t = 0; t < 60_000; t += 250) chosen.push(policy.choose(pools, { tokens: [1], ttftSloMs: 150, atMs: t }).dc);
    const late = chosen.slice(80); // after the first 20 s
    const share = late.filter((dc) => dc === 'long').length / late.length;
    expect(share).toBeGreaterThan(0.4);
    expect(share).toBeLessThanOrEqual(0.5);
    // A request that meets its target somewhere is never given up on, budget or not.
    expect(policy.choose(pools, { tokens: [1], ttftSloMs: 250, atMs: 60_000 }).dc).toBe('short');
  });

  it("'kept' measures the excess over the pools other than the target, whose capacity the given-up work takes", () => {
    const kept = kvAware({ prefillTokensPerMs: rate, triageBudget: { sustainedTokensPerMs: 1, windowMs: 10_000, excess: 'kept', use: 'bound' } });
    const cluster = kvAware({ prefillTokensPerMs: rate, triageBudget: { sustainedTokensPerMs: 1, windowMs: 10_000, excess: 'cluster', use: 'bound' } });
    const chosen = (policy: typeof kept) => Array.from({ length: 60 }, (_, i) => policy.choose(pools, { tokens: [1], ttftSloMs: 150, atMs: i * 500 }).dc);
    // 2 tokens/ms offered: the whole cluster's capacity (nothing to give up), twice the kept pool's (half of it).
    expect(chosen(cluster).filter((dc) => dc === 'long')).toHaveLength(0);
    const late = chosen(kept).slice(20);
    expect(late.filter((dc) => dc === 'long').length / late.length).toBeGreaterThan(0.4);
    expect(late.filter((dc) => dc === 'long').length / late.length).toBeLessThanOrEqual(0.5);
  });

  it('unbounded (null) gives up on every request judged lost, as before the budget', () => {
    const policy = kvAware({ prefillTokensPerMs: rate, triageBudget: null });
    for (let t = 0; t < 10_000; t += 1000) expect(policy.choose(pools, { tokens: [1], ttftSloMs: 150, atMs: t }).dc).toBe('long');
  });
});
