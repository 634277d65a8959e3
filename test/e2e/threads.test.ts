// Ingest threads end to end: two pools, placed by load on the two ingest threads, each applied on its
// thread, which also runs its workers' subscriptions; one thread dies of an uncaught error under
// load. Its pool's generation ends as fenced and is replaced by a new one (the consumer re-snapshots
// it), the thread is started again, the engine's replay from 0 refills the new generation, and the
// pool on the other thread never notices. Then a pool whose worker ids shard to both threads: all of
// its subscriptions run on the pool's thread (none hands bursts across), so the death of the thread
// that runs any of them is the death of the pool's thread alone (fenced, replaced, every worker
// replayed into the new one), and the other thread's pool never notices.
import { threadOf } from '../../src/ingest/threads/shard';
import { waitFor } from '../support/waitFor';
import { BS, E2e, endpointConfig, expectedHashes, metricValue, relayConfig, tokenRange, workerConfig } from './harness';

const VICTIM = 7;
const OTHER = 8;

let run: E2e;
beforeEach(() => (run = new E2e()));
afterEach(() => run.close());

test('an ingest thread that dies: its pool is replaced by a new generation, its worker replays into it; the pool on the other thread goes on', async () => {
  const victim = await run.engine();
  const other = await run.engine();
  const relay = await run.start(
    relayConfig([endpointConfig([workerConfig(VICTIM, victim)], { component: 'a' }), endpointConfig([workerConfig(OTHER, other)], { component: 'b', model: { name: 'mistral' } })], {
      limits: { ingestThreads: 2 },
    }),
  );
  const poolA = await run.poolKey('a');
  const poolB = await run.poolKey('b');
  const generationOf = (component: string): bigint | undefined =>
    run.client.catalog()?.pools.find((p) => p.descriptor.servingEndpoint?.component === component)?.descriptor.producer?.layoutGeneration;
  const before = { a: generationOf('a'), b: generationOf('b') };
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
  await run.awaitHeld(poolA, a.hashes.slice(0, 2), 'the blocks of a before the death');
  await run.awaitHeld(poolB, b.hashes.slice(0, 2), 'the blocks of b before the death');

  // Placed by load, the two pools sit on different threads: the victim's thread holds only pool a.
  relay.producer.kvSources.ingestThreads!.crash(BigInt(VICTIM));
  // Pool a's new generation is in the catalog; b's is the one it was.
  await waitFor(() => generationOf('a') !== undefined && generationOf('a') !== before.a, 'a new generation of pool a', 30_000, 50);
  expect(generationOf('b')).toBe(before.b);
  const newA = await run.poolKey('a');
  // Published once the restarted thread's connection asked for its replay (a live message read
  // before the subscriber saw its handshake would start the stream there, without a replay).
  await waitFor(async () => metricValue(await run.metricsText(), 'kv_dc_relay_ingest_replays_total', `worker="${VICTIM}",dp_rank="0"`) >= 1, 'the new subscription\'s replay request', 30_000, 50);
  for (const [engine, c] of [[victim, a], [other, b]] as const) {
    await engine.publish([{ type: 'BlockStored', blockHashes: [3n, 4n], parentBlockHash: 2n, tokenIds: c.tokens.slice(2 * BS), blockSize: BS }]);
  }
  // The replay from 0 brings the first blocks back into the new generation, so the children find their parents.
  await run.awaitHeld(newA, a.hashes, 'every block of a in its new generation');
  await run.awaitHeld(poolB, b.hashes, 'every block of b');
  expect(run.depth('llama', a.tokens)).toBe(4);
  expect(run.depth('mistral', b.tokens)).toBe(4);

  const metrics = await run.metricsText();
  expect(metricValue(metrics, 'kv_dc_relay_ingest_thread_restarts_total', '')).toBe(1);
  expect(metricValue(metrics, 'kv_dc_relay_terminal_publication_failures_total', '')).toBe(1);
  // The other pool's worker was neither reset nor replayed again.
  expect(metricValue(metrics, 'kv_dc_relay_ingest_resets_total', `worker="${OTHER}",dp_rank="0"`)).toBe(0);
  expect(metricValue(metrics, 'kv_dc_relay_ingest_events_total', `worker="${OTHER}",dp_rank="0"`)).toBe(2);
  // The victim's new subscription replayed both of its batches and took the live one after them.
  await waitFor(async () => metricValue(await run.metricsText(), 'kv_dc_relay_ingest_events_total', `worker="${VICTIM}",dp_rank="0"`) === 2, 'the replayed and live batches of a', 30_000, 50);
});

/** Worker ids by the thread (of 2) they shard to: a pool of HOSTS and REMOTE, whose ids shard to both threads, and a bystander pool of BYSTANDER. */
const HOSTS = [1, 3];
const REMOTE = 2;
const BYSTANDER = 6;

for (const crashed of [HOSTS[0], REMOTE]) {
  test(`a pool whose worker ids shard to both threads applies every worker's bursts; the thread that runs worker ${crashed} dies: only that pool's generation is fenced and replaced, every worker replays into it`, async () => {
    expect(HOSTS.map((w) => threadOf(BigInt(w), 2))).toEqual([1, 1]);
    expect(threadOf(BigInt(REMOTE), 2)).toBe(0);
    expect(threadOf(BigInt(BYSTANDER), 2)).toBe(1);
    const engines = new Map<number, Awaited<ReturnType<E2e['engine']>>>();
    for (const w of [...HOSTS, REMOTE, BYSTANDER]) engines.set(w, await run.engine());
    const relay = await run.start(
      relayConfig(
        [
          endpointConfig([...HOSTS, REMOTE].map((w) => workerConfig(w, engines.get(w)!)), { component: 'a' }),
          endpointConfig([workerConfig(BYSTANDER, engines.get(BYSTANDER)!)], { component: 'b', model: { name: 'mistral' } }),
        ],
        { limits: { ingestThreads: 2 } },
      ),
    );
    const generationOf = (component: string): bigint | undefined =>
      run.client.catalog()?.pools.find((p) => p.descriptor.servingEndpoint?.component === component)?.descriptor.producer?.layoutGeneration;
    const chains = new Map([...engines.keys()].map((w, i) => {
      const tokens = tokenRange(1000 * (i + 1), 4 * BS);
      return [w, { tokens, hashes: expectedHashes(tokens) }] as const;
    }));
    for (const [w, engine] of engines) {
      await engine.publish([{ type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: chains.get(w)!.tokens.slice(0, 2 * BS), blockSize: BS }]);
    }
    const poolA = await run.poolKey('a');
    const poolB = await run.poolKey('b');
    const before = { a: generationOf('a'), b: generationOf('b') };
    for (const w of [...HOSTS, REMOTE]) await run.awaitHeld(poolA, chains.get(w)!.hashes.slice(0, 2), `worker ${w}'s blocks before the death`);
    await run.awaitHeld(poolB, chains.get(BYSTANDER)!.hashes.slice(0, 2), 'the bystander pool\'s blocks before the death');

    // Either worker's thread is the pool's (on the old placement, HOSTS[0]'s was the bystander's too).
    relay.producer.kvSources.ingestThreads!.crash(BigInt(crashed));
    await waitFor(() => generationOf('a') !== undefined && generationOf('a') !== before.a, 'a new generation of pool a', 30_000, 50);
    // Every worker of the pool resubscribes and replays from 0 (the new generation starts empty).
    await waitFor(
      async () => {
        const metrics = await run.metricsText();
        // A worker's series is absent while its subscription is down between the old and the new generation.
        const replays = (w: number) => (metrics.includes(`kv_dc_relay_ingest_replays_total{worker="${w}",dp_rank="0"}`) ? metricValue(metrics, 'kv_dc_relay_ingest_replays_total', `worker="${w}",dp_rank="0"`) : 0);
        return [...HOSTS, REMOTE].every((w) => replays(w) >= 1);
      },
      "the pool's workers' replay requests",
      30_000,
      50,
    );
    for (const [w, engine] of engines) {
      await engine.publish([{ type: 'BlockStored', blockHashes: [3n, 4n], parentBlockHash: 2n, tokenIds: chains.get(w)!.tokens.slice(2 * BS), blockSize: BS }]);
    }
    const newA = await run.poolKey('a');
    for (const w of [...HOSTS, REMOTE]) await run.awaitHeld(newA, chains.get(w)!.hashes, `every block of worker ${w} in the new generation`);
    await run.awaitHeld(poolB, chains.get(BYSTANDER)!.hashes, 'every block of the bystander pool');
    for (const w of [...HOSTS, REMOTE]) expect(run.depth('llama', chains.get(w)!.tokens)).toBe(4);

    const metrics = await run.metricsText();
    expect(metricValue(metrics, 'kv_dc_relay_ingest_thread_restarts_total', '')).toBe(1);
    // Only pool a's stream ended with the contract's terminal trailer: the bystander pool lived on the other thread and never noticed.
    expect(metricValue(metrics, 'kv_dc_relay_terminal_publication_failures_total', '')).toBe(1);
    expect(generationOf('b')).toBe(before.b);
    expect(metricValue(metrics, 'kv_dc_relay_ingest_resets_total', `worker="${BYSTANDER}",dp_rank="0"`)).toBe(0);
  });
}
