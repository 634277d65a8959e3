// Filter contents end to end: engine KV events over ZMQ → relay (decode, canonical hashing, pool
// state, publication) → gRPC → a consumer's replica, checked against hashes computed from the spec.
import { BS, E2e, endpointConfig, expectedHashes, relayConfig, tokenRange, workerConfig } from './harness';
import type { SimulatedEngineOptions } from '../../src/sim';
import { waitFor } from '../support/waitFor';

let run: E2e;
beforeEach(() => (run = new E2e()));
afterEach(() => run.close());

// vLLM's event encodings: tagged arrays (before PR #42892) and tagged maps, hashes as u64, as the
// signed i64 some engines send, and as 32-byte digests.
test.each<[string, SimulatedEngineOptions]>([
  ['array events, u64 hashes', { events: 'array', hashes: 'uint' }],
  ['map events in a map envelope, i64 hashes', { events: 'map', envelope: 'map', hashes: 'int' }],
  ['map events, bytes hashes', { events: 'map', hashes: 'bytes' }],
])('stored chains with parents (%s): the replica holds every prefix hash and query depth matches', async (_, options) => {
  const engine = await run.engine(options);
  await run.start(relayConfig([endpointConfig([workerConfig(7, engine)])]));
  const pool = await run.poolKey();
  // Engine ids above 2^63, so the signed encoding is negative.
  const [a, b, c, d] = [0xf000_0000_0000_0011n, 0xf000_0000_0000_0012n, 0xf000_0000_0000_0013n, 0xf000_0000_0000_0014n];

  // A 6-block prompt stored as a root event of 2 blocks, then two child events chained by parent.
  const prompt = tokenRange(100, 6 * BS + 1);
  await engine.publish([{ type: 'BlockStored', blockHashes: [a, b], parentBlockHash: null, tokenIds: prompt.slice(0, 2 * BS), blockSize: BS }]);
  await engine.publish([{ type: 'BlockStored', blockHashes: [c], parentBlockHash: b, tokenIds: prompt.slice(2 * BS, 3 * BS), blockSize: BS }]);
  await engine.publish([{ type: 'BlockStored', blockHashes: [d], parentBlockHash: c, tokenIds: prompt.slice(3 * BS, 4 * BS), blockSize: BS }]);

  const hashes = expectedHashes(prompt);
  expect(hashes).toHaveLength(6);
  await run.awaitHeld(pool, hashes.slice(0, 4), 'the 4 stored prefix hashes');
  // Blocks the engine never stored are not in the filter.
  expect(hashes.slice(4).map((h) => run.holds(pool, h))).toEqual([false, false]);
  expect(run.depth('llama', prompt)).toBe(4);
  // A prompt that diverges inside block 3 matches only the first 2 blocks.
  const diverged = [...prompt.slice(0, 2 * BS), 9999, ...prompt.slice(2 * BS + 1)];
  expect(run.depth('llama', diverged)).toBe(2);
});

test('LoRA salt: the same tokens with and without lora_name are different hashes', async () => {
  const engine = await run.engine();
  const adapters = [{ name: 'tenant-a', servedModel: 'llama-tenant-a', workers: [7] }];
  await run.start(relayConfig([endpointConfig([workerConfig(7, engine)], { adapters })]));
  const pool = await run.poolKey();

  const prompt = tokenRange(500, 3 * BS);
  const base = expectedHashes(prompt);
  const salted = expectedHashes(prompt, 'tenant-a');
  expect(salted.some((h) => base.includes(h))).toBe(false);

  // Only the LoRA request's blocks are stored (3 blocks); the base model stores just block 0.
  await engine.publish([{ type: 'BlockStored', blockHashes: [21n, 22n, 23n], parentBlockHash: null, tokenIds: prompt, blockSize: BS, loraName: 'tenant-a' }]);
  await engine.publish([{ type: 'BlockStored', blockHashes: [31n], parentBlockHash: null, tokenIds: prompt.slice(0, BS), blockSize: BS }]);
  await run.awaitHeld(pool, [...salted, base[0]], 'the salted chain and the base root');
  expect(run.holds(pool, base[1])).toBe(false);
  expect(run.holds(pool, base[2])).toBe(false);

  expect(run.depth('llama', prompt, 'tenant-a')).toBe(3);
  expect(run.depth('llama-tenant-a', prompt)).toBe(3);
  expect(run.depth('llama', prompt)).toBe(1);
});

test('removals with shared owners: a block stays while any worker still holds it', async () => {
  const e7 = await run.engine();
  const e8 = await run.engine();
  await run.start(relayConfig([endpointConfig([workerConfig(7, e7), workerConfig(8, e8)])]));
  const pool = await run.poolKey();

  const prompt = tokenRange(1000, 2 * BS);
  const [h0, h1] = expectedHashes(prompt);
  // Both workers store the same prefix under their own engine ids.
  await e7.publish([{ type: 'BlockStored', blockHashes: [71n, 72n], parentBlockHash: null, tokenIds: prompt, blockSize: BS }]);
  await e8.publish([{ type: 'BlockStored', blockHashes: [81n, 82n], parentBlockHash: null, tokenIds: prompt, blockSize: BS }]);
  // A marker block stored after a batch shows that batch was applied (a shared store or a removal
  // that leaves an owner changes no bucket, so nothing else is observable).
  const marker7 = tokenRange(50_700, BS);
  const marker8 = tokenRange(50_800, BS);
  await e8.publish([{ type: 'BlockStored', blockHashes: [89n], parentBlockHash: null, tokenIds: marker8, blockSize: BS }]);
  await run.awaitHeld(pool, [h0, h1, ...expectedHashes(marker8)], 'the shared prefix and worker 8 marker');

  // Worker 7 removes, then stores its marker in the same batch.
  await e7.publish([
    { type: 'BlockRemoved', blockHashes: [72n, 71n] },
    { type: 'BlockStored', blockHashes: [79n], parentBlockHash: null, tokenIds: marker7, blockSize: BS },
  ]);
  await run.awaitHeld(pool, expectedHashes(marker7), 'worker 7 marker after its removal');
  expect([run.holds(pool, h0), run.holds(pool, h1)]).toEqual([true, true]);
  expect(run.depth('llama', prompt)).toBe(2);

  // Worker 8 removes too: no owner is left.
  await e8.publish([{ type: 'BlockRemoved', blockHashes: [82n, 81n] }]);
  await run.awaitGone(pool, [h0, h1], 'the prefix once both owners removed it');
  expect(run.depth('llama', prompt)).toBe(0);
  expect(run.holds(pool, expectedHashes(marker7)[0])).toBe(true);
});

test('AllBlocksCleared on one data-parallel rank leaves the other rank\'s blocks', async () => {
  const engine = await run.engine({ dpSize: 2 });
  await run.start(relayConfig([endpointConfig([workerConfig(7, engine)])]));
  const pool = await run.poolKey();

  const shared = tokenRange(2000, BS);
  const only1 = tokenRange(3000, 2 * BS);
  const only0 = tokenRange(4000, BS);
  const [hs] = expectedHashes(shared);
  const h1 = expectedHashes(only1);
  const [h0] = expectedHashes(only0);
  await engine.publish([{ type: 'BlockStored', blockHashes: [1n], parentBlockHash: null, tokenIds: shared, blockSize: BS }], { rank: 0 });
  await engine.publish([{ type: 'BlockStored', blockHashes: [2n], parentBlockHash: null, tokenIds: only0, blockSize: BS }], { rank: 0 });
  // Rank 1 uses the same engine id for its copy of the shared block: lineage is per (worker, rank).
  await engine.publish([{ type: 'BlockStored', blockHashes: [1n], parentBlockHash: null, tokenIds: shared, blockSize: BS }], { rank: 1 });
  await engine.publish([{ type: 'BlockStored', blockHashes: [3n, 4n], parentBlockHash: null, tokenIds: only1, blockSize: BS }], { rank: 1 });
  await run.awaitHeld(pool, [hs, h0, ...h1], 'both ranks\' blocks');

  await engine.publish([{ type: 'AllBlocksCleared' }], { rank: 1 });
  await run.awaitGone(pool, h1, 'rank 1\'s own blocks after its clear');
  expect([run.holds(pool, hs), run.holds(pool, h0)]).toEqual([true, true]);

  // Rank 1 keeps working after its clear; its engine ids start over.
  const again = tokenRange(6000, BS);
  await engine.publish([{ type: 'BlockStored', blockHashes: [3n], parentBlockHash: null, tokenIds: again, blockSize: BS }], { rank: 1 });
  await run.awaitHeld(pool, expectedHashes(again), 'a block rank 1 stores after its clear');
  await waitFor(() => run.depth('llama', [...only0, 1]) === 1, 'rank 0 block through the query path');
});
