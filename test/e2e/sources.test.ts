// Engine source ordering end to end: sequence gaps recovered by the engine's replay service, gaps
// it cannot cover (the source is reset and rebuilt from later live events), and an engine restart.
// Each step is checked in the consumer's replica and in the relay's /metrics ingest counters.
import type { SimulatedEngineOptions } from '../../src/sim';
import { BS, E2e, endpointConfig, expectedHashes, metricValue, relayConfig, tokenRange, workerConfig } from './harness';

const W7 = 'worker="7",dp_rank="0"';

let run: E2e;
beforeEach(() => (run = new E2e()));
afterEach(() => run.close());

// vLLM's replay reply layouts ([topic, seq, payload] since PR #45177, [seq, payload] before), and a
// second data-parallel rank, whose PUB and replay ports are offset from rank 0's.
test.each<[string, SimulatedEngineOptions, number]>([
  ['topic replies, rank 0', { replayLayout: 'topic' }, 0],
  ['legacy replies, rank 1 of 2', { replayLayout: 'legacy', dpSize: 2 }, 1],
])('a batch dropped on the live stream is replayed by the engine and reaches the replica (%s)', async (_, options, rank) => {
  const engine = await run.engine(options);
  await run.start(relayConfig([endpointConfig([workerConfig(7, engine)])]));
  const pool = await run.poolKey();
  const src = `worker="7",dp_rank="${rank}"`;

  const prompt = tokenRange(100, 3 * BS);
  const hashes = expectedHashes(prompt);
  await engine.publish([{ type: 'BlockStored', blockHashes: [1n], parentBlockHash: null, tokenIds: prompt.slice(0, BS), blockSize: BS }], { rank });
  await run.awaitHeld(pool, hashes.slice(0, 1), 'the root block');
  const before = await run.metricsText();

  // Block 2 is lost on the wire; block 3 (its child) arrives live and reveals the gap.
  await engine.publish([{ type: 'BlockStored', blockHashes: [2n], parentBlockHash: 1n, tokenIds: prompt.slice(BS, 2 * BS), blockSize: BS }], { rank, dropLive: true });
  await engine.publish([{ type: 'BlockStored', blockHashes: [3n], parentBlockHash: 2n, tokenIds: prompt.slice(2 * BS), blockSize: BS }], { rank });
  await run.awaitHeld(pool, hashes, 'the dropped block and its child');
  expect(run.depth('llama', prompt)).toBe(3);

  const after = await run.metricsText();
  const delta = (name: string): number => metricValue(after, name, src) - metricValue(before, name, src);
  expect(delta('kv_dc_relay_ingest_gaps_total')).toBe(1);
  expect(delta('kv_dc_relay_ingest_replays_total')).toBe(1);
  expect(metricValue(after, 'kv_dc_relay_ingest_resets_total', src)).toBe(0);
});

/** Stores `old`, jumps the sequence, stores `fresh` (a root) and `child` (its child) live. */
async function gapScenario(replay: boolean): Promise<void> {
  const engine = await run.engine({ replay, bufferSteps: 4 });
  await run.start(relayConfig([endpointConfig([workerConfig(7, engine, { replay })])]));
  const pool = await run.poolKey();

  const old = tokenRange(100, 2 * BS);
  await engine.publish([{ type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: old, blockSize: BS }]);
  await run.awaitHeld(pool, expectedHashes(old), 'the blocks before the gap');

  // Batches the relay never sees and the engine no longer buffers.
  engine.skip(10);
  const fresh = tokenRange(900, 2 * BS);
  const hashes = expectedHashes(fresh);
  await engine.publish([{ type: 'BlockStored', blockHashes: [9n], parentBlockHash: null, tokenIds: fresh.slice(0, BS), blockSize: BS }]);
  await run.awaitHeld(pool, hashes.slice(0, 1), 'the first block after the gap');
  await run.awaitGone(pool, expectedHashes(old), 'the blocks of the reset source');

  // Later live events rebuild the source: a child of the post-gap block finds its parent.
  await engine.publish([{ type: 'BlockStored', blockHashes: [10n], parentBlockHash: 9n, tokenIds: fresh.slice(BS), blockSize: BS }]);
  await run.awaitHeld(pool, hashes, 'the rebuilt chain');
  expect(run.depth('llama', fresh)).toBe(2);
  expect(run.depth('llama', old)).toBe(0);

  const metrics = await run.metricsText();
  expect(metricValue(metrics, 'kv_dc_relay_ingest_gaps_total', W7)).toBe(1);
  expect(metricValue(metrics, 'kv_dc_relay_ingest_resets_total', W7)).toBe(1);
}

test('a gap beyond the engine replay buffer resets the source, which later live events rebuild', async () => {
  await gapScenario(true);
});

test('a gap without a replay endpoint resets the source, which later live events rebuild', async () => {
  await gapScenario(false);
});

test('an engine restart (sequence back to 0) drops its old blocks and applies the new ones', async () => {
  const engine = await run.engine();
  await run.start(relayConfig([endpointConfig([workerConfig(7, engine)])]));
  const pool = await run.poolKey();

  const old = tokenRange(100, 3 * BS);
  await engine.publish([{ type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: old.slice(0, 2 * BS), blockSize: BS }]);
  await engine.publish([{ type: 'BlockStored', blockHashes: [3n], parentBlockHash: 2n, tokenIds: old.slice(2 * BS), blockSize: BS }]);
  await run.awaitHeld(pool, expectedHashes(old), 'the blocks before the restart');

  engine.restart();
  expect(engine.nextSequence()).toBe(0n);
  // The restarted engine reuses its block ids for other content. Sequences 0, 1, 2 on the same
  // connection make the restart plausible (one lower message alone would be dropped as a stray).
  const fresh = tokenRange(700, 3 * BS);
  await engine.publish([{ type: 'BlockStored', blockHashes: [1n], parentBlockHash: null, tokenIds: fresh.slice(0, BS), blockSize: BS }]);
  await engine.publish([{ type: 'BlockStored', blockHashes: [2n], parentBlockHash: 1n, tokenIds: fresh.slice(BS, 2 * BS), blockSize: BS }]);
  await engine.publish([{ type: 'BlockStored', blockHashes: [3n], parentBlockHash: 2n, tokenIds: fresh.slice(2 * BS), blockSize: BS }]);
  await run.awaitHeld(pool, expectedHashes(fresh), 'the blocks after the restart');
  await run.awaitGone(pool, expectedHashes(old), 'the blocks of the previous engine process');
  expect(run.depth('llama', old)).toBe(0);
  expect(run.depth('llama', fresh)).toBe(3);
  expect(metricValue(await run.metricsText(), 'kv_dc_relay_ingest_resets_total', W7)).toBe(1);
});

test('an engine process restarted on the same ports: the lost connection resets the source, replay from 0 fills it', async () => {
  const before = await run.engine();
  await run.start(relayConfig([endpointConfig([workerConfig(7, before)])]));
  const pool = await run.poolKey();
  const old = tokenRange(100, 2 * BS);
  await before.publish([{ type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: old, blockSize: BS }]);
  await run.awaitHeld(pool, expectedHashes(old), 'the blocks of the first process');

  await before.stop();
  const port = (endpoint: string | undefined): number => Number(/:(\d+)$/.exec(endpoint ?? '')![1]);
  const after = await run.engine({ port: port(before.pubEndpoint), replayPort: port(before.replayEndpoint) });
  // Published before the relay reconnects: only the replay from 0 can deliver it.
  const fresh = tokenRange(700, BS);
  await after.publish([{ type: 'BlockStored', blockHashes: [1n], parentBlockHash: null, tokenIds: fresh, blockSize: BS }]);
  await run.awaitHeld(pool, expectedHashes(fresh), 'the block of the new process');
  await run.awaitGone(pool, expectedHashes(old), 'the blocks of the first process');
  expect(metricValue(await run.metricsText(), 'kv_dc_relay_ingest_resets_total', W7)).toBe(1);
});
