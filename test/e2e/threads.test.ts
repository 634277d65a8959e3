// Ingest threads end to end: a relay whose engine workers are sharded over two ingest threads; one
// thread dies of an uncaught error under load. Its sources are reset and counted, the thread is
// started again, the engine's replay from 0 refills the replica, and the other thread's worker
// never notices.
import { threadOf } from '../../src/ingest/threads/shard';
import { waitFor } from '../support/waitFor';
import { BS, E2e, endpointConfig, expectedHashes, metricValue, relayConfig, tokenRange, workerConfig } from './harness';

const THREADS = 2;
const VICTIM = 7;
/** A worker the shard hash puts on the other thread. */
const OTHER = [8, 9, 10, 11, 12, 13].find((id) => threadOf(BigInt(id), THREADS) !== threadOf(BigInt(VICTIM), THREADS))!;

let run: E2e;
beforeEach(() => (run = new E2e()));
afterEach(() => run.close());

test('an ingest thread that dies: its worker is reset and counted, the thread restarts, replay refills the replica; the other thread goes on', async () => {
  const victim = await run.engine();
  const other = await run.engine();
  const relay = await run.start(relayConfig([endpointConfig([workerConfig(VICTIM, victim), workerConfig(OTHER, other)])], { limits: { ingestThreads: THREADS } }));
  const pool = await run.poolKey();
  const chain = (from: number) => {
    const tokens = tokenRange(from, 4 * BS);
    return { tokens, hashes: expectedHashes(tokens) };
  };
  const a = chain(100);
  const b = chain(900);
  // Two blocks of each chain before the death, two after.
  for (const [engine, c] of [[victim, a], [other, b]] as const) {
    await engine.publish([{ type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: c.tokens.slice(0, 2 * BS), blockSize: BS }]);
  }
  await run.awaitHeld(pool, [...a.hashes.slice(0, 2), ...b.hashes.slice(0, 2)], 'the blocks before the death');

  relay.producer.kvSources.ingestThreads!.crash(BigInt(VICTIM));
  // Published once the restarted thread's connection asked for its replay (a live message read
  // before the subscriber saw its handshake would start the stream there, without a replay).
  await waitFor(async () => metricValue(await run.metricsText(), 'kv_dc_relay_ingest_replays_total', `worker="${VICTIM}",dp_rank="0"`) === 2, 'the restarted thread\'s replay request', 30_000, 50);
  for (const [engine, c] of [[victim, a], [other, b]] as const) {
    await engine.publish([{ type: 'BlockStored', blockHashes: [3n, 4n], parentBlockHash: 2n, tokenIds: c.tokens.slice(2 * BS), blockSize: BS }]);
  }
  // The replay from 0 brings the first blocks back, so the children find their parents.
  await run.awaitHeld(pool, [...a.hashes, ...b.hashes], 'every block after the restart');
  expect(run.depth('llama', a.tokens)).toBe(4);
  expect(run.depth('llama', b.tokens)).toBe(4);

  // The threads post their counters a few ms after they change (throttled), not with each hand-off.
  await waitFor(async () => metricValue(await run.metricsText(), 'kv_dc_relay_ingest_events_total', `worker="${VICTIM}",dp_rank="0"`) >= 3, 'the restarted thread\'s counters', 30_000, 50);
  const metrics = await run.metricsText();
  expect(metricValue(metrics, 'kv_dc_relay_ingest_thread_restarts_total', '')).toBe(1);
  expect(metricValue(metrics, 'kv_dc_relay_ingest_resets_total', `worker="${VICTIM}",dp_rank="0"`)).toBe(1);
  expect(metricValue(metrics, 'kv_dc_relay_ingest_resets_total', `worker="${OTHER}",dp_rank="0"`)).toBe(0);
  // Counted over both incarnations of the thread: 2 live batches, then the replay's 2 and nothing lost.
  expect(metricValue(metrics, 'kv_dc_relay_ingest_events_total', `worker="${VICTIM}",dp_rank="0"`)).toBe(1 + 2);
  expect(metricValue(metrics, 'kv_dc_relay_ingest_events_total', `worker="${OTHER}",dp_rank="0"`)).toBe(2);
});
