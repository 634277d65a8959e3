// The multi-tenant request stream: reproducible, with the prefix reuse it is meant to have.
import { Rng } from '../../src/sim/rng';
import { MultiTenantWorkload, type WorkloadRequest } from '../../examples/global-router/sim/workload';
import { Zipf } from '../../examples/global-router/sim/zipf';

const take = (w: MultiTenantWorkload, n: number): WorkloadRequest[] => Array.from({ length: n }, () => w.next());

/** Length of the common prefix of two token arrays. */
function common(a: Uint32Array, b: Uint32Array): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

describe('Zipf', () => {
  it('draws rank k with probability ∝ 1/(k+1)^s', () => {
    const z = new Zipf(4, 1);
    const h = 1 + 1 / 2 + 1 / 3 + 1 / 4;
    expect([0, 1, 2, 3].map((k) => z.p(k))).toEqual([1 / h, 1 / 2 / h, 1 / 3 / h, 1 / 4 / h].map((p) => expect.closeTo(p, 12)));
    const rng = new Rng(1);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 20_000; i++) counts[z.sample(rng)]++;
    counts.forEach((c, k) => expect(c / 20_000).toBeCloseTo(z.p(k), 1));
  });

  it('rejects an empty or negative distribution', () => {
    expect(() => new Zipf(0, 1)).toThrow(RangeError);
    expect(() => new Zipf(3, -1)).toThrow(RangeError);
  });
});

describe('MultiTenantWorkload', () => {
  it('is the same stream for the same seed and another one for another seed', () => {
    const a = take(new MultiTenantWorkload({ seed: 3 }), 200);
    const b = take(new MultiTenantWorkload({ seed: 3 }), 200);
    const c = take(new MultiTenantWorkload({ seed: 4 }), 200);
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
  });

  it('starts every request of a tenant with its system prompt, and only that tenant’s', () => {
    const o = { seed: 5, systemPromptTokens: [300, 300] as [number, number] };
    const requests = take(new MultiTenantWorkload(o), 300);
    const byTenant = new Map<number, WorkloadRequest[]>();
    for (const r of requests) byTenant.set(r.tenant, [...(byTenant.get(r.tenant) ?? []), r]);
    const firsts = [...byTenant.values()].map((rs) => rs[0]);
    for (const rs of byTenant.values()) for (const r of rs) expect(common(r.tokens, rs[0].tokens)).toBeGreaterThanOrEqual(300);
    for (let i = 1; i < firsts.length; i++) expect(common(firsts[i].tokens, firsts[0].tokens)).toBeLessThan(300);
  });

  it('grows a chat turn by turn: each turn extends the previous prompt and its answer', () => {
    const w = new MultiTenantWorkload({ seed: 9, tenants: 1, mix: { chat: 1, rag: 0, oneShot: 0 }, chatsPerTenant: 1, continueChat: 1, maxTurns: 4 });
    const [t1, t2, t3, t4, next] = take(w, 5);
    for (const [prev, cur] of [[t1, t2], [t2, t3], [t3, t4]]) {
      expect(common(cur.tokens, prev.tokens)).toBe(prev.tokens.length);
      expect(cur.tokens.length).toBeGreaterThan(prev.tokens.length + prev.outputTokens);
    }
    // After maxTurns the chat ends; the next one shares only the system prompt.
    expect(common(next.tokens, t4.tokens)).toBeLessThan(t1.tokens.length);
  });

  it('reuses documents with Zipf popularity across RAG requests', () => {
    const w = new MultiTenantWorkload({ seed: 2, tenants: 1, mix: { chat: 0, rag: 1, oneShot: 0 }, systemPromptTokens: [64, 64], documentTokens: [500, 500] });
    const requests = take(w, 200);
    const docs = new Map<string, number>();
    for (const r of requests) {
      const key = r.tokens.subarray(64, 64 + 500).join(',');
      docs.set(key, (docs.get(key) ?? 0) + 1);
    }
    const counts = [...docs.values()].sort((a, b) => b - a);
    expect(counts.length).toBeGreaterThan(3);
    expect(counts[0]).toBeGreaterThan(3 * counts[counts.length - 1]);
  });

  it('replays as requests with Poisson arrivals at the rate, each chat turn repeating the last answer', () => {
    const w = new MultiTenantWorkload({ seed: 4, tenants: 1, mix: { chat: 1, rag: 0, oneShot: 0 }, chatsPerTenant: 1, continueChat: 1, maxTurns: 50 });
    const requests = w.requests(400, 20);
    const span = requests[requests.length - 1].arrivalMs / 1000;
    expect(400 / span).toBeGreaterThan(16);
    expect(400 / span).toBeLessThan(24);
    const [first, second] = requests;
    const tokens = (r: (typeof requests)[number]) => (r.prompt.kind === 'tokens' ? Array.from(r.prompt.tokens) : []);
    expect(tokens(second).slice(0, first.inputTokens + first.outputTokens)).toEqual([...tokens(first), ...Array.from(first.outputIds!)]);
  });

  it.each([
    { userTokens: [0, 10] as [number, number] },
    { answerTokens: [10, 5] as [number, number] },
    { mix: { chat: 0, rag: 0, oneShot: 0 } },
    { continueChat: 2 },
    { maxTurns: 0 },
  ])('rejects %j', (o) => {
    expect(() => new MultiTenantWorkload(o)).toThrow(RangeError);
  });
});
