// The simulated engine: its workload is reproducible and consistent, and what a subscriber rebuilds
// from its events is exactly what its caches hold; /health and /metrics answer as vLLM's do.
import { SimulatedEngine } from '../../src/sim/engine';
import { Workload } from '../../src/sim/workload';
import { connectHarness, type Harness } from '../support/ingest-harness';
import type { RecordedBatch } from '../support/recording-sink';
import { waitFor } from '../support/waitFor';

let h: Harness | undefined;
let engine: SimulatedEngine | undefined;
afterEach(async () => {
  await h?.close();
  await engine?.stop();
  h = undefined;
  engine = undefined;
});

/** Applies batches to per-rank block sets; lists every violation of the lineage rules a producer relies on. */
function rebuild(batches: RecordedBatch[]): { ranks: Map<number, Set<bigint>>; violations: string[] } {
  const ranks = new Map<number, Set<bigint>>();
  const violations: string[] = [];
  for (const b of batches) {
    const blocks = ranks.get(b.source.dpRank) ?? new Set<bigint>();
    ranks.set(b.source.dpRank, blocks);
    for (const e of b.events) {
      if (e.kind === 'stored') {
        if (e.parentHash !== null && !blocks.has(e.parentHash)) violations.push(`seq ${b.sequence}: unknown parent`);
        // Every block complete (the decoder keeps only blocks with all their tokens).
        if (e.tokensHashes.length !== e.blockHashes.length) violations.push(`seq ${b.sequence}: token count`);
        for (const hash of e.blockHashes) {
          if (blocks.has(hash)) violations.push(`seq ${b.sequence}: stored twice`);
          blocks.add(hash);
        }
      } else if (e.kind === 'removed') {
        for (const hash of e.blockHashes) if (!blocks.delete(hash)) violations.push(`seq ${b.sequence}: unknown removal`);
      } else {
        blocks.clear();
      }
    }
  }
  return { ranks, violations };
}

describe('workload', () => {
  it('is reproducible from its seed', () => {
    // Compared as JSON text: deep equality over thousands of token arrays is slow in jest.
    const run = (seed: number) => {
      const w = new Workload([0, 1], { seed, capacityBlocks: 80, loraNames: [null, 'a'] });
      return JSON.stringify(Array.from({ length: 200 }, () => w.step()), (_k, v) => (typeof v === 'bigint' ? String(v) : v));
    };
    expect(run(5)).toBe(run(5));
    expect(run(5)).not.toBe(run(6));
  });

  it('shares prefixes, evicts under capacity and stays within it', () => {
    const w = new Workload([0], { seed: 3, capacityBlocks: 60, systemPrompts: 2, conversations: 8 });
    let reusedParents = 0;
    let evictions = 0;
    for (let i = 0; i < 400; i++) {
      for (const e of w.step().events) {
        if (e.type === 'BlockStored' && e.parentBlockHash != null) reusedParents += 1;
        if (e.type === 'BlockRemoved') evictions += e.blockHashes.length;
      }
      expect(w.resident(0).length).toBeLessThanOrEqual(60);
    }
    expect(reusedParents).toBeGreaterThan(100);
    expect(evictions).toBeGreaterThan(100);
  });

  it('rejects a capacity that cannot hold a conversation', () => {
    expect(() => new Workload([0], { capacityBlocks: 10, maxConversationBlocks: 48 })).toThrow(RangeError);
  });
});

describe('over ZMQ', () => {
  it.each([['array'], ['map']] as const)('a subscriber rebuilds exactly the resident blocks of every rank (%s events)', async (events) => {
    h = await connectHarness({ dpSize: 2, events, workload: { seed: 11, capacityBlocks: 70, loraNames: [null, 'tenant-a'] } }, { kvBlockSize: 16 });
    await h.engine.step(300);
    const last = [0, 1].map((r) => h!.engine.nextSequence(r) - 1n);
    await waitFor(() => [0, 1].every((r, i) => h!.sink.sequences(r).at(-1) === last[i]), 'every published batch');
    expect(h.sink.resets).toEqual([]);
    const { ranks, violations } = rebuild(h.sink.batches);
    expect(violations).toEqual([]);
    for (const r of [0, 1]) expect([...ranks.get(r)!].sort()).toEqual(h.engine.workload.resident(r).sort());
  });
});

describe('HTTP', () => {
  it('serves /health with a settable status and vLLM /metrics per rank', async () => {
    engine = await new SimulatedEngine({ dpSize: 2, dpStartRank: 4, workload: { capacityBlocks: 100 } }).start();
    expect((await fetch(`${engine.httpUrl}/health`)).status).toBe(200);
    engine.setHealthStatus(503);
    expect((await fetch(`${engine.httpUrl}/health`)).status).toBe(503);
    await engine.step(20);
    engine.setGauges(5, { kvCacheUsage: 0.5, running: 3 });
    const text = await (await fetch(`${engine.httpUrl}/metrics`)).text();
    const usage = (rank: number) => Number(new RegExp(`^vllm:kv_cache_usage_perc\\{engine="${rank}",model_name="sim-model"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(usage(4)).toBeCloseTo(engine.workload.usage(4), 10);
    expect(usage(4)).toBeGreaterThan(0);
    expect(usage(5)).toBe(0.5);
    expect(text).toMatch(/^vllm:num_requests_running\{engine="5",model_name="sim-model"\} 3$/m);
    expect(text).toContain('# TYPE vllm:kv_cache_usage_perc gauge');
    expect((await fetch(`${engine.httpUrl}/nope`)).status).toBe(404);
  });
});
