// A batch the relay itself dropped (a full pool mailbox) loses that source's history in the relay
// only: the engine still has it. The source is reset, and the relay asks the engine's replay
// endpoint for everything from 0, as on a first connect, so the replica holds the engine's blocks
// again without waiting for the engine to store them anew.
import { ACTOR_MAILBOX_CAPACITY } from '../../src/config/defaults';
import { packEngineBatch } from '../support/packed';
import { metricSum } from '../support/relay-process';
import { waitFor } from '../support/waitFor';
import { BS, E2e, endpointConfig, expectedHashes, relayConfig, tokenRange, workerConfig } from './harness';

const WORKER = 7;

let run: E2e;
beforeEach(() => (run = new E2e()));
afterEach(() => run.close());

test.each([0, 2])('a full pool mailbox resets the source and the engine replays it from 0 (ingest threads %i)', async (ingestThreads) => {
  const engine = await run.engine();
  const relay = await run.start(relayConfig([endpointConfig([workerConfig(WORKER, engine)])], { limits: { ingestThreads } }));
  const pool = await run.poolKey();
  const tokens = tokenRange(100, 4 * BS);
  const held = expectedHashes(tokens);
  await engine.publish([{ type: 'BlockStored', blockHashes: [1n, 2n, 3n, 4n], parentBlockHash: null, tokenIds: tokens, blockSize: BS }]);
  await run.awaitHeld(pool, held, 'the engine\'s blocks');

  // More batches of the worker's source in one turn than the pool's mailbox takes: the last ones are
  // dropped and the source reset (these stand for a burst the pool could not keep up with).
  const junk = tokenRange(50_000, BS);
  for (let i = 0; i <= ACTOR_MAILBOX_CAPACITY + 1; i++) {
    relay.producer.events(packEngineBatch(BigInt(WORKER), [{ type: 'BlockStored', blockHashes: [BigInt(1_000 + i)], parentBlockHash: null, tokenIds: junk, blockSize: BS }], { kvBlockSize: BS, sequence: BigInt(i) }));
  }
  const metric = async (name: string): Promise<number> => metricSum(await run.metricsText(), name, `worker="${WORKER}",dp_rank="0"`);
  await waitFor(async () => (await metric('kv_dc_relay_ingest_overflows_total')) === 2, 'the overflows counted for the source', 30_000, 50);
  expect(metricSum(await run.metricsText(), 'kv_dc_relay_pool_mailbox_overflows_total')).toBe(2);

  // The engine's replay from 0 brings its blocks back; what the pool dropped is gone.
  await waitFor(async () => (await metric('kv_dc_relay_ingest_replays_total')) >= 2, 'the replay from 0 after the overflow', 30_000, 50);
  await run.awaitHeld(pool, held, 'the engine\'s blocks refilled by the replay');
  await run.awaitGone(pool, expectedHashes(junk), 'the batches of the reset source');
  // Later batches follow on the refilled source.
  const more = tokenRange(100 + 4 * BS, BS);
  await engine.publish([{ type: 'BlockStored', blockHashes: [5n], parentBlockHash: 4n, tokenIds: more, blockSize: BS }]);
  await run.awaitHeld(pool, expectedHashes([...tokens, ...more]), 'a child of the refilled blocks');
  expect(run.depth('llama', [...tokens, ...more])).toBe(5);
});
