// The policies on hand-built candidates: our time-to-first-token estimate in absolute work, the
// Dynamo-style cost, the llm-d-style scorer, consistent hashing with bounded loads, and the
// size-weighted cache-blind baselines; argument checks.
import {
  cachedFraction,
  consistentHash,
  dynamoCost,
  dynamoCostPolicy,
  estimatedTtftMs,
  kvAware,
  leastLoad,
  llmdScorer,
  policyByName,
  POLICY_NAMES,
  randomChoice,
  roundRobin,
  shortestQueue,
  uncachedTokens,
  unstretchedTtftMs,
  type Candidate,
} from '../../examples/global-router/router';

function candidate(dc: string, over: Partial<Candidate> = {}): Candidate {
  return {
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
    inflight: 0,
    awaitingFirstToken: 0,
    pendingPrefillTokens: 0,
    pendingPrefills: [],
    activeBlocks: 0,
    lastResort: false,
    ...over,
  };
}

const pick = (policy: { choose(c: readonly Candidate[], r: { tokens: ArrayLike<number> }): Candidate }, cs: Candidate[], tokens: ArrayLike<number> = [1, 2, 3]) => policy.choose(cs, { tokens }).dc;
const queued = (...prefills: number[]) => ({ pendingPrefills: prefills, pendingPrefillTokens: prefills.reduce((a, b) => a + b, 0), awaitingFirstToken: prefills.length, inflight: prefills.length });

describe('candidate arithmetic', () => {
  it.each([
    [{ matchedTokens: 250 }, 0.25, 750],
    [{ matchedTokens: null }, 0, 1000],
    [{ matchedTokens: 1200 }, 1, 0], // a block-rounded depth never counts more than the prompt
  ])('%j: cached fraction %d, uncached %d', (over, fraction, uncached) => {
    expect(cachedFraction(candidate('a', over))).toBe(fraction);
    expect(uncachedTokens(candidate('a', over))).toBe(uncached);
  });

  it('places pending prefills on the shortest of the ranks, as the DC does', () => {
    expect(shortestQueue([9000], 4)).toBe(0); // one big prompt busies one rank; three are free
    expect(shortestQueue([100, 200, 300], 2)).toBe(200); // 100 → r0, 200 → r1, 300 → r0: 400 | 200
    expect(shortestQueue([100, 200, 300], 1)).toBe(600);
  });
});

describe('kvAware (estimated time to first token)', () => {
  const rate = 10; // tokens per ms per rank

  it('prices the own uncached prefill on one rank, the queue ahead on the shortest rank, plus the round trip', () => {
    expect(estimatedTtftMs(candidate('a', { matchedTokens: 400, rttMs: 6 }), rate)).toBe(6 + 600 / 10);
    expect(estimatedTtftMs(candidate('a', { ranks: 2, ...queued(300, 500, 200) }), rate)).toBe((500 + 1000) / 10);
    // Memory pressure stretches it; a full pool is capped, not infinite.
    expect(estimatedTtftMs(candidate('a', { kvUsage: 0.5 }), rate)).toBe(200);
    expect(estimatedTtftMs(candidate('a', { kvUsage: 1 }), rate)).toBeCloseTo(2000, 6);
  });

  it('takes the cached DC until the prefill queued there outweighs what the cache saves', () => {
    const cold = candidate('cold');
    const cached = (...prefills: number[]) => candidate('cached', { matchedTokens: 600, ...queued(...prefills) });
    expect(pick(kvAware({ prefillTokensPerMs: rate }), [cached(500), cold])).toBe('cached'); // 500 + 400 < 1000
    expect(pick(kvAware({ prefillTokensPerMs: rate }), [cached(700), cold])).toBe('cold'); // 700 + 400 > 1000
  });

  it('weighs absolute work: a short cached prompt saves less than a long one', () => {
    const busy = queued(300);
    expect(pick(kvAware({ prefillTokensPerMs: rate }), [candidate('cached', { promptTokens: 200, matchedTokens: 200, ...busy }), candidate('idle', { promptTokens: 200 })])).toBe('idle');
    expect(pick(kvAware({ prefillTokensPerMs: rate }), [candidate('cached', { promptTokens: 6000, matchedTokens: 6000, ...busy }), candidate('idle', { promptTokens: 6000 })])).toBe('cached');
  });

  it('sees a big DC with one long prompt queued as free, and a far DC as farther', () => {
    const big = candidate('big', { ranks: 4, ...queued(50_000) });
    expect(pick(kvAware({ prefillTokensPerMs: rate }), [big, candidate('small', { ranks: 1, ...queued(100) })])).toBe('big');
    expect(pick(kvAware({ prefillTokensPerMs: rate }), [candidate('far', { rttMs: 80 }), candidate('near', { rttMs: 10 })])).toBe('near');
  });

  it('breaks a tie by fewer blocks in flight per rank, then with the random source', () => {
    expect(pick(kvAware(), [candidate('a', { activeBlocks: 10 }), candidate('b', { activeBlocks: 4 })])).toBe('b');
    expect(pick(kvAware({ random: () => 0.99 }), [candidate('a'), candidate('b'), candidate('c')])).toBe('c');
  });

  it('triages: a request no pool can serve within its TTFT target goes where the wait is longest', () => {
    const policy = kvAware({ prefillTokensPerMs: rate });
    const pools = [candidate('short', { ...queued(1000) }), candidate('long', { ...queued(3000) })]; // 200 ms and 400 ms
    const choose = (ttftSloMs?: number) => policy.choose(pools, { tokens: [1], ttftSloMs }).dc;
    expect(choose()).toBe('short'); // no target: the shortest wait
    expect(choose(250)).toBe('short'); // one pool meets it
    expect(choose(150)).toBe('long'); // none does: leave the short queue to requests that can still make it
  });

  it('judges a request lost on the wait without the memory stretch (the stretch is a guess)', () => {
    const policy = kvAware({ prefillTokensPerMs: rate });
    // 100 ms of prefill, 1 000 ms once stretched by 90 % KV usage: the unstretched wait meets 150 ms.
    const pools = [candidate('full', { kvUsage: 0.9 }), candidate('fuller', { kvUsage: 0.95, ...queued(2000) })];
    expect(unstretchedTtftMs(pools[0], rate)).toBe(100);
    expect(policy.choose(pools, { tokens: [1], ttftSloMs: 150 }).dc).toBe('full');
    expect(policy.choose(pools, { tokens: [1], ttftSloMs: 50 }).dc).toBe('fuller');
  });

  it('asks the router for prefix depth and rejects a bad rate', () => {
    expect(kvAware().usesPrefix).toBe(true);
    expect(() => kvAware({ prefillTokensPerMs: 0 })).toThrow(RangeError);
  });
});

describe('dynamoCost', () => {
  it('is overlap_weight × prefill blocks + decode blocks, per rank, lowest wins', () => {
    // Dynamo's worked example (blocks): prefill 8 / decode 10 → 18; prefill 5 / decode 5 → 10; prefill 2 / decode 9 → 11.
    const c = (dc: string, prefillBlocks: number, decodeBlocks: number) =>
      candidate(dc, { promptTokens: 10, matchedTokens: 10, ...queued(prefillBlocks * 10), activeBlocks: decodeBlocks - 1 });
    const cs = [c('w1', 8, 10), c('w2', 5, 5), c('w3', 2, 9)];
    expect(cs.map((x) => dynamoCost(x, 1))).toEqual([18, 10, 11]);
    expect(pick(dynamoCostPolicy(), cs)).toBe('w2');
    expect(dynamoCost(candidate('x', { ranks: 2, promptTokens: 100, activeBlocks: 10 }), 1)).toBe((10 + 20) / 2);
  });

  it('samples by softmax over normalized costs with a temperature', () => {
    const cs = [candidate('cheap', { matchedTokens: 1000 }), candidate('dear')];
    expect(pick(dynamoCostPolicy({ temperature: 1, random: () => 0 }), cs)).toBe('cheap');
    expect(pick(dynamoCostPolicy({ temperature: 1, random: () => 0.999 }), cs)).toBe('dear');
    expect(() => dynamoCostPolicy({ overlapWeight: -1 })).toThrow(RangeError);
  });
});

describe('llmdScorer', () => {
  it('adds 3 × cached fraction, 2 × min-max queue score and 2 × free KV', () => {
    const cached = candidate('cached', { matchedTokens: 500, ...queued(1, 1) }); // 1.5 + 0 + 2 = 3.5
    const idle = candidate('idle', { kvUsage: 0.2 }); // 0 + 2 + 1.6 = 3.6
    expect(pick(llmdScorer(), [cached, idle])).toBe('idle');
    expect(pick(llmdScorer(), [candidate('cached', { matchedTokens: 600, ...queued(1, 1) }), idle])).toBe('cached'); // 3.8
    expect(pick(llmdScorer({ weights: { prefix: 0, queue: 1, kvUsage: 0 } }), [cached, idle])).toBe('idle');
  });
});

describe('consistentHash (bounded loads)', () => {
  const key = (n: number) => Uint32Array.from({ length: 1024 }, (_, i) => n * 7919 + i);

  it('sends one prefix to one DC, and keys in proportion to ranks', () => {
    const policy = consistentHash();
    const cs = [candidate('big', { ranks: 3 }), candidate('small', { ranks: 1 })];
    expect(pick(policy, cs, key(1))).toBe(pick(policy, cs, key(1)));
    const counts = { big: 0, small: 0 };
    for (let n = 0; n < 2000; n++) counts[pick(policy, cs, key(n)) as 'big' | 'small']++;
    expect(counts.big / 2000).toBeGreaterThan(0.65);
    expect(counts.big / 2000).toBeLessThan(0.85);
  });

  it('spills to the next DC on the ring once the owner is above c × its share', () => {
    const policy = consistentHash({ loadFactor: 1.25 });
    const free = [candidate('a'), candidate('b')];
    const owner = pick(policy, free, key(5));
    const other = owner === 'a' ? 'b' : 'a';
    // 10 in flight at the owner, 0 elsewhere: bound ⌈1.25 × 11 / 2⌉ = 7.
    const loaded = free.map((c) => (c.dc === owner ? { ...c, inflight: 10 } : c));
    expect(pick(policy, loaded, key(5))).toBe(other);
    expect(() => consistentHash({ loadFactor: 0.5 })).toThrow(RangeError);
  });
});

describe('cache-blind baselines', () => {
  it('least-load picks the fewest requests in flight per rank', () => {
    expect(pick(leastLoad(), [candidate('a', { inflight: 4, ranks: 4 }), candidate('b', { inflight: 2 })])).toBe('a');
    expect(leastLoad().usesPrefix).toBe(false);
  });

  it('random draws in proportion to ranks', () => {
    const cs = [candidate('a', { ranks: 3 }), candidate('b', { ranks: 1 })];
    expect(pick(randomChoice({ random: () => 0.74 }), cs)).toBe('a');
    expect(pick(randomChoice({ random: () => 0.76 }), cs)).toBe('b');
  });

  it('round-robin interleaves in proportion to ranks and skips a pool that dropped out', () => {
    const rr = roundRobin();
    const cs = [candidate('a', { ranks: 2 }), candidate('b', { ranks: 1 })];
    expect([pick(rr, cs), pick(rr, cs), pick(rr, cs), pick(rr, cs), pick(rr, cs), pick(rr, cs)]).toEqual(['a', 'b', 'a', 'a', 'b', 'a']);
    expect(pick(rr, [candidate('b', { ranks: 1 })])).toBe('b');
  });

  it('policyByName knows every listed policy', () => {
    expect(POLICY_NAMES.map((n) => policyByName(n).name)).toEqual([...POLICY_NAMES]);
  });
});
