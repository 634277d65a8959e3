// An Eagle endpoint end to end: a simulated engine stores chains with Eagle bigram token_ids, the relay
// (hashFormat eagle) hashes them with Eagle windows, and the consumer's replica over gRPC holds exactly
// the Eagle canonical hashes, computed here independently (hashing-ckf-cbi1.md §1.3, §1.5): windows of
// kvBlockSize + 1 tokens with stride kvBlockSize, chained like standard blocks (expected.test.ts checks
// those against the golden vectors).
import { BS, E2e, endpointConfig, expectedHashes, relayConfig, tokenRange, workerConfig } from './harness';

/** Eagle canonical sequence hashes of the complete windows of `tokens`. */
function eagleHashes(tokens: readonly number[], bs = BS, lora?: string | null): bigint[] {
  return expectedHashes(tokens, lora, bs, undefined, true);
}

describe('an Eagle endpoint', () => {
  let run: E2e;
  beforeEach(() => (run = new E2e()));
  afterEach(() => run.close());

  it('publishes Eagle canonical hashes of stored chains, and the client query matches the full depth', async () => {
    const engine = await run.engine();
    await run.start(relayConfig([endpointConfig([workerConfig(1, engine)], { model: { hashFormat: 'eagle' } })]));
    const pool = await run.poolKey();
    const descriptor = run.client.catalog()!.pools.find((p) => p.poolKey === pool)!.descriptor;
    expect(descriptor.querySemantics).toMatchObject({ kvBlockSize: BS, hashFormat: 2 });

    // A 4-block Eagle prompt (4 * BS + 1 tokens) stored as two events: blocks 0-1, then 2-3 chained
    // to block 1. Each event carries its windows: 2 * BS + 1 tokens, overlapping the parent's by one.
    const prompt = tokenRange(500, 4 * BS + 1);
    await engine.publish([
      { type: 'BlockStored', blockHashes: [101n, 102n], parentBlockHash: null, tokenIds: prompt.slice(0, 2 * BS + 1), bigramTokens: true, blockSize: BS },
    ]);
    await engine.publish([
      { type: 'BlockStored', blockHashes: [103n, 104n], parentBlockHash: 102n, tokenIds: prompt.slice(2 * BS), bigramTokens: true, blockSize: BS },
    ]);
    const eagle = eagleHashes(prompt);
    expect(eagle).toHaveLength(4);
    await run.awaitHeld(pool, eagle, 'the Eagle chain in the replica');

    // The same tokens under standard windows are a different hash space.
    const standard = expectedHashes(prompt);
    expect(standard).toHaveLength(4);
    expect(standard.some((h) => eagle.includes(h))).toBe(false);
    expect(standard.filter((h) => run.holds(pool, h))).toEqual([]);

    const result = run.client.query({ model: 'llama', tokens: prompt });
    expect(result.kind).toBe('ok');
    if (result.kind !== 'ok') return;
    expect(result.pools).toHaveLength(1);
    expect(result.pools[0]).toMatchObject({ hashFormat: 'eagle', queryBlocks: 4, replica: 'ready', matchedBlocks: 4, matchedTokens: 4 * BS });
    // A query that diverges inside block 2 matches the two blocks before it; one token short of the
    // last window leaves three complete Eagle blocks.
    const diverged = [...prompt];
    diverged[2 * BS + 2] += 1000;
    expect(run.depth('llama', diverged)).toBe(2);
    expect(run.depth('llama', prompt.slice(0, 4 * BS))).toBe(3);
  });
});
