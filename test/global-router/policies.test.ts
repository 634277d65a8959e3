// The router's scoring on hand-built candidates: the KV-aware trade-off between cached prefix and
// load, the baselines, and the argument checks.
import {
  cachedFraction,
  kvAware,
  loadOnly,
  policyByName,
  POLICY_NAMES,
  randomChoice,
  roundRobin,
  utilization,
  type Candidate,
} from '../../examples/global-router/router';

function candidate(dc: string, over: Partial<Candidate> = {}): Candidate {
  return { dc, poolKey: `pool-${dc}`, endpoint: 'prod.backend.generate', promptTokens: 1000, matchedTokens: 0, inflight: 0, capacity: 10, kvUsage: null, lastResort: false, ...over };
}

const pick = (policy: { choose(c: readonly Candidate[]): Candidate }, cs: Candidate[]) => policy.choose(cs).dc;

describe('cachedFraction and utilization', () => {
  it.each([
    [{ matchedTokens: 250 }, 0.25],
    [{ matchedTokens: null }, 0],
    [{ matchedTokens: 1200 }, 1], // a block-rounded depth never counts more than the prompt
    [{ promptTokens: 0, matchedTokens: 0 }, 0],
  ])('cachedFraction(%j) = %d', (over, expected) => {
    expect(cachedFraction(candidate('a', over))).toBe(expected);
  });

  it.each([
    [{ inflight: 5, capacity: 10, kvUsage: null }, 0.5],
    [{ inflight: 5, capacity: 10, kvUsage: 0.8 }, 0.8], // the relay sees traffic this router did not send
    [{ inflight: 15, capacity: 10, kvUsage: 0.2 }, 1.5], // the router's own count is ahead of a lagging window
  ])('utilization(%j) = %d', (over, expected) => {
    expect(utilization(candidate('a', over))).toBe(expected);
  });
});

describe('kvAware', () => {
  it('picks the deepest cached prefix when loads are equal', () => {
    expect(pick(kvAware(), [candidate('a', { matchedTokens: 200 }), candidate('b', { matchedTokens: 900 }), candidate('c', { matchedTokens: null })])).toBe('b');
  });

  it('gives up a cached prefix once its DC is busier by more than the prefix is worth (default weights 1:1)', () => {
    const cached = (inflight: number) => candidate('cached', { matchedTokens: 600, inflight });
    const idle = candidate('idle', { matchedTokens: 0 });
    expect(pick(kvAware(), [cached(5), idle])).toBe('cached'); // 0.6 − 0.5 > 0
    expect(pick(kvAware(), [cached(7), idle])).toBe('idle'); // 0.6 − 0.7 < 0
  });

  it('weights move the trade-off: loadWeight 0 ignores load, prefixWeight 0 is load-only', () => {
    const cs = [candidate('cached', { matchedTokens: 600, inflight: 9 }), candidate('idle')];
    expect(pick(kvAware({ loadWeight: 0 }), cs)).toBe('cached');
    expect(pick(kvAware({ prefixWeight: 0 }), cs)).toBe('idle');
  });

  it('breaks an equal score by lower utilization, then with the random source', () => {
    // a: 0.5 − 2/4 = 0; b: 0.25 − 1/4 = 0 → b is less loaded.
    expect(pick(kvAware(), [candidate('a', { matchedTokens: 500, inflight: 2, capacity: 4 }), candidate('b', { matchedTokens: 250, inflight: 1, capacity: 4 })])).toBe('b');
    const twins = [candidate('a'), candidate('b'), candidate('c')];
    expect(pick(kvAware({ random: () => 0 }), twins)).toBe('a');
    expect(pick(kvAware({ random: () => 0.99 }), twins)).toBe('c');
  });

  it('counts an unknown depth (replica absent or stale) as nothing cached, never as a miss penalty', () => {
    const unknown = candidate('unknown', { matchedTokens: null });
    expect(pick(kvAware(), [unknown, candidate('busy', { inflight: 1 })])).toBe('unknown');
  });

  it('asks the router for prefix depth', () => {
    expect(kvAware().usesPrefix).toBe(true);
  });

  it.each([{ prefixWeight: -1 }, { loadWeight: Number.NaN }, { loadWeight: Infinity }])('rejects %j', (o) => {
    expect(() => kvAware(o)).toThrow(RangeError);
  });
});

describe('baselines', () => {
  it('load-only picks the least utilized pool and ignores the cache', () => {
    const cs = [candidate('a', { matchedTokens: 1000, inflight: 2 }), candidate('b', { inflight: 1 }), candidate('c', { kvUsage: 0.9 })];
    expect(pick(loadOnly(), cs)).toBe('b');
    expect(loadOnly().usesPrefix).toBe(false);
  });

  it('round-robin cycles over whatever is eligible', () => {
    const rr = roundRobin();
    const three = [candidate('a'), candidate('b'), candidate('c')];
    expect([pick(rr, three), pick(rr, three), pick(rr, three), pick(rr, three)]).toEqual(['a', 'b', 'c', 'a']);
    expect([pick(rr, [candidate('a'), candidate('c')]), pick(rr, [candidate('a'), candidate('c')])]).toEqual(['a', 'c']); // b dropped out; the cycle goes on
  });

  it('random draws from the injected source', () => {
    const values = [0.1, 0.5, 0.9];
    const random = randomChoice({ random: () => values.shift()! });
    const three = [candidate('a'), candidate('b'), candidate('c')];
    expect([pick(random, three), pick(random, three), pick(random, three)]).toEqual(['a', 'b', 'c']);
  });

  it('policyByName knows every listed policy', () => {
    expect(POLICY_NAMES.map((n) => policyByName(n).name)).toEqual([...POLICY_NAMES]);
  });
});
