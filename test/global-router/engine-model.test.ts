// The calibrated engine model on simulated time: step costs, the shared block pool, chunked prefill
// and continuous batching, prefix reuse only of computed blocks, cached decode blocks, preemption
// under KV pressure, and the DC's rank choice.
import { BlockPool } from '../../examples/global-router/sim/engine/block-pool';
import { LLAMA3_8B_A100, type EngineCalibration } from '../../examples/global-router/sim/engine/calibration';
import { DcEngine, type EngineOutput } from '../../examples/global-router/sim/engine/dc-engine';
import type { EngineRequest, RankConfig } from '../../examples/global-router/sim/engine/rank';
import { linearMs, prefillPairs, stepMs } from '../../examples/global-router/sim/engine/step-time';

const CAL: EngineCalibration = LLAMA3_8B_A100;
const BS = 16;

function config(over: Partial<RankConfig> = {}): RankConfig {
  return { blockSize: BS, capacityBlocks: 4096, maxNumSeqs: 64, maxBatchedTokens: 2048, calibration: CAL, ...over };
}

/** A request whose prompt is `prompt` and whose answer is `output` tokens (ids from `outputSeed`). */
function request(id: number, prompt: number[], output: number, outputSeed = 1_000_000 + id * 10_000): EngineRequest {
  const tokens = Uint32Array.from([...prompt, ...Array.from({ length: output }, (_, i) => outputSeed + i)]);
  return { id, tokens, promptTokens: prompt.length, outputTokens: output };
}

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
const of = <K extends EngineOutput['kind']>(out: EngineOutput[], kind: K) => out.filter((o): o is Extract<EngineOutput, { kind: K }> => o.kind === kind);

describe('step time', () => {
  it('interpolates the measured non-attention time and extrapolates past the last point', () => {
    expect(linearMs(CAL, 1)).toBe(9.7);
    expect(linearMs(CAL, 8192)).toBe(544.38);
    expect(linearMs(CAL, 6144)).toBeCloseTo((273.49 + 544.38) / 2, 6);
    expect(linearMs(CAL, 65536)).toBeCloseTo(2178.03 + (2178.03 - 1092.92) * 2, 3);
  });

  it('counts causal attention pairs of a chunk after a cached prefix', () => {
    expect(prefillPairs(0, 4)).toBe(10); // 1 + 2 + 3 + 4
    expect(prefillPairs(100, 4)).toBe(410);
  });

  it('prices a 12k-token prefill near one second and a long-context decode step by the KV it reads', () => {
    const prefill = stepMs(CAL, { tokens: 12_000, prefillPairs: prefillPairs(0, 12_000), decodeContextTokens: 0 });
    expect(prefill).toBeGreaterThan(900);
    expect(prefill).toBeLessThan(1100);
    const decode = stepMs(CAL, { tokens: 32, prefillPairs: 0, decodeContextTokens: 32 * 12_000 });
    // 32 × 12k tokens × 128 KiB read at 1.44 TB/s ≈ 35 ms, plus the weights (10.9 ms).
    expect(decode).toBeGreaterThan(40);
    expect(decode).toBeLessThan(52);
  });
});

describe('BlockPool', () => {
  it('keeps freed full blocks reusable and evicts the least recently freed first', () => {
    const pool = new BlockPool(3);
    const [a, b, c] = [pool.allocate(), pool.allocate(), pool.allocate()];
    expect(pool.free).toBe(0);
    pool.register(a, 11);
    pool.register(b, 12);
    expect(pool.register(c, 12)).toBe(false); // an equal block stays private
    for (const block of [c, b, a]) pool.release(block); // a request frees its tail first
    expect([pool.free, pool.used, pool.cachedBlocks]).toEqual([3, 0, 2]);
    expect(pool.match([11, 12, 13])).toBe(2);
    pool.allocate(); // the blank block (c) first
    pool.allocate(); // then the least recently freed: b
    expect(pool.drainRemoved()).toEqual([12]);
    expect(pool.match([11, 12])).toBe(1);
    pool.acquire(11); // a hit takes the block out of the eviction order
    expect(() => pool.allocate()).toThrow(/no free KV block/);
  });

  it('rejects misuse', () => {
    const pool = new BlockPool(1);
    expect(() => pool.acquire(5)).toThrow(/not cached/);
    const block = pool.allocate();
    pool.release(block);
    expect(() => pool.release(block)).toThrow(/released more often/);
    expect(() => new BlockPool(0)).toThrow(RangeError);
  });
});

describe('DcEngine', () => {
  it('prefills in budget-sized chunks, then decodes one token per step, at the calibrated step times', () => {
    const dc = new DcEngine(1, config());
    dc.arrive(request(1, range(0, 3000), 3), 5);
    const out = dc.advance(60_000);
    const chunk1 = stepMs(CAL, { tokens: 2048, prefillPairs: prefillPairs(0, 2048), decodeContextTokens: 0 });
    const chunk2 = stepMs(CAL, { tokens: 952, prefillPairs: prefillPairs(2048, 952), decodeContextTokens: 0 });
    const first = 5 + chunk1 + chunk2;
    expect(of(out, 'firstToken')).toEqual([{ kind: 'firstToken', id: 1, rank: 0, atMs: first, cachedTokens: 0 }]);
    const decode1 = stepMs(CAL, { tokens: 1, prefillPairs: 0, decodeContextTokens: 3000 });
    const decode2 = stepMs(CAL, { tokens: 1, prefillPairs: 0, decodeContextTokens: 3001 });
    expect(of(out, 'finished')).toEqual([{ kind: 'finished', id: 1, rank: 0, atMs: first + decode1 + decode2, preemptions: 0 }]);
    // Stored as each chunk completes: 128 full blocks after the first, 59 more after the second.
    expect(of(out, 'kv').map((k) => [k.atMs, k.stored.map((r) => r.hashes.length)])).toEqual([
      [5 + chunk1, [128]],
      [first, [59]],
    ]);
    expect(dc.inflight).toBe(0);
  });

  it('reuses a cached prefix (whole blocks, never the last prompt token) and publishes only the new blocks', () => {
    const dc = new DcEngine(1, config());
    const prompt = range(0, 320); // 20 blocks exactly
    dc.arrive(request(1, prompt, 2), 0);
    dc.advance(10_000);
    dc.arrive(request(2, [...prompt, ...range(5000, 100)], 2), 10_000);
    dc.arrive(request(3, prompt, 2), 10_000);
    const out = dc.advance(20_000);
    const cached = Object.fromEntries(of(out, 'firstToken').map((f) => [f.id, f.cachedTokens]));
    expect(cached).toEqual({ 2: 320, 3: 304 }); // request 3 recomputes its last block to produce a token
    const stored = of(out, 'kv').flatMap((k) => k.stored);
    expect(stored[0].parent).not.toBeNull(); // request 2's new blocks hang off the cached prefix
    expect(stored.reduce((n, r) => n + r.hashes.length, 0)).toBe(6); // 100 new tokens → 6 full blocks
  });

  it('makes a block reusable only once the step that computed it has ended', () => {
    const dc = new DcEngine(1, config({ maxBatchedTokens: 2048 }));
    const prompt = range(0, 3000);
    dc.arrive(request(1, prompt, 1), 0);
    dc.advance(1); // request 1's first chunk (2048 tokens) is in flight
    dc.arrive(request(2, prompt, 1), 1);
    const out = dc.advance(60_000);
    const hits = Object.fromEntries(of(out, 'firstToken').map((f) => [f.id, f.cachedTokens]));
    // Request 2 joins the second step beside request 1's last chunk: only the 128 blocks of the
    // first chunk are computed then, not the 59 the second step is computing.
    expect(hits).toEqual({ 1: 0, 2: 2048 });
  });

  it('caches the answer: a next turn that repeats it reuses the decode blocks', () => {
    const dc = new DcEngine(1, config());
    const first = request(1, range(0, 200), 40, 9_000);
    dc.arrive(first, 0);
    dc.advance(10_000);
    const history = Array.from(first.tokens); // prompt + answer: 240 tokens, 239 computed (14 full blocks)
    dc.arrive(request(2, [...history, ...range(7000, 30)], 2), 10_000);
    const out = dc.advance(20_000);
    // The prompt alone fills 12 blocks; blocks 12 and 13 hold answer tokens.
    expect(of(out, 'firstToken')[0].cachedTokens).toBe(14 * BS);
  });

  it('preempts under KV pressure, counts the recomputation, and still finishes every request', () => {
    // 60 blocks: three 300-token prompts (19 blocks each) fit, their decodes do not.
    const dc = new DcEngine(1, config({ capacityBlocks: 60 }));
    for (let i = 0; i < 3; i++) dc.arrive(request(i, range(i * 10_000, 300), 40), 0);
    const out = dc.advance(600_000);
    const finished = of(out, 'finished');
    expect(finished.map((f) => f.id).sort()).toEqual([0, 1, 2]);
    expect(finished.reduce((n, f) => n + f.preemptions, 0)).toBeGreaterThan(0);
    expect(dc.gauges(0)).toEqual({ running: 0, waiting: 0, kvCacheUsage: 0 });
    // Eviction reports only hashes that were stored before.
    const stored = new Set(of(out, 'kv').flatMap((k) => k.stored.flatMap((r) => r.hashes)));
    expect(of(out, 'kv').flatMap((k) => k.removed).every((h) => stored.has(h))).toBe(true);
  });

  it('sends a request to the rank holding its prefix, and spreads cold ones by pending work', () => {
    const dc = new DcEngine(2, config());
    const prompt = range(0, 1600);
    dc.arrive(request(1, prompt, 1), 0); // rank 0 (tie → lowest index)
    dc.arrive(request(2, range(50_000, 1600), 1), 0); // rank 1: rank 0 has 1600 tokens queued
    const first = dc.advance(10_000);
    expect(of(first, 'firstToken').map((f) => [f.id, f.rank])).toEqual([
      [1, 0],
      [2, 1],
    ]);
    dc.arrive(request(3, [...prompt, 1, 2, 3], 1), 10_000);
    expect(of(dc.advance(20_000), 'firstToken')).toEqual([expect.objectContaining({ id: 3, rank: 0, cachedTokens: 1600 })]);
  });

  it('keeps time monotonic', () => {
    const dc = new DcEngine(1, config());
    dc.advance(100);
    expect(() => dc.arrive(request(1, [1, 2], 1), 99)).toThrow(RangeError);
    expect(() => dc.advance(50)).toThrow(RangeError);
    expect(() => new DcEngine(0, config())).toThrow(RangeError);
  });
});
