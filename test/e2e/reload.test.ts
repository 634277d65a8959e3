// Hot reload. An identity change (sourcePath, kvBlockSize) withdraws the old pool generation: its
// open stream ends UNAVAILABLE with the PUBLICATION_UNAVAILABLE trailer and never shows the new
// producer, the catalog lists the new producer, and a consumer resubscribes and gets the engine's
// blocks again. A worker change keeps the producer and only adds or withdraws that worker's blocks.
import type * as grpc from '@grpc/grpc-js';
import { FilterUpdateKind } from '../../src/wire/enums';
import { producerKey } from '../../src/wire/producer-key';
import { makeClient } from '../../src/wire/service';
import type { FilterUpdate, ProducerIdentity } from '../../src/wire/types';
import type { CatalogPool } from '../../src/client';
import { MAX_MESSAGE, subscriber } from '../transport/helpers';
import { waitFor } from '../support/waitFor';
import { BS, DEADLINE_MS, E2e, endpointConfig, expectedHashes, relayConfig, tokenRange, within, workerConfig } from './harness';

const STATUS_UNAVAILABLE = 14;
const REASON_TRAILER = 'kv-relay-error-reason';

let run: E2e;
beforeEach(() => (run = new E2e()));
afterEach(() => run.close());

/** A raw subscriber of one pool generation, past its snapshot. */
async function openPoolStream(producer: ProducerIdentity): Promise<{ retired(): Promise<void> }> {
  const raw = makeClient(run.relay.address, { channelOptions: { 'grpc.max_receive_message_length': MAX_MESSAGE } });
  const call = raw.subscribeKvPool({ ...subscriber('e2e-raw'), expectedProducer: producer });
  const seen: FilterUpdate[] = [];
  call.on('data', (m: FilterUpdate) => seen.push(m));
  const ended = new Promise<grpc.ServiceError>((resolve, reject) => {
    call.on('error', resolve);
    call.on('end', () => reject(new Error('the old stream ended without an error status')));
  });
  await waitFor(() => seen.length > 0, 'the generation snapshot', DEADLINE_MS);
  expect(seen[0].kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
  return {
    /** The stream ends UNAVAILABLE + PUBLICATION_UNAVAILABLE and never showed another producer. */
    async retired() {
      try {
        const err = await within(ended, 'the old stream to end');
        expect(err.code).toBe(STATUS_UNAVAILABLE);
        expect(err.metadata.get(REASON_TRAILER)).toEqual(['RELAY_ERROR_REASON_PUBLICATION_UNAVAILABLE']);
        expect(seen.every((m) => producerKey(m.producer!) === producerKey(producer))).toBe(true);
      } finally {
        raw.close();
      }
    },
  };
}

/** The catalog's single pool once it is no longer `oldKey`, with an installed replica. */
async function awaitReplacement(oldKey: string): Promise<CatalogPool> {
  await waitFor(
    () => run.client.catalog()?.pools.length === 1 && run.client.catalog()!.pools[0].poolKey !== oldKey,
    'the new pool in the catalog',
    DEADLINE_MS,
  );
  const current = run.client.catalog()!.pools[0];
  expect(await run.poolKey()).toBe(current.poolKey);
  return current;
}

test('an identity change in the config swaps the generation; old streams end, the client resubscribes', async () => {
  const engine = await run.engine();
  const config = (sourcePath: string): Record<string, unknown> =>
    relayConfig([endpointConfig([workerConfig(7, engine)], { model: { sourcePath } })]);
  await run.start(config('meta/llama-a'));
  const oldKey = await run.poolKey();
  const old = run.client.catalog()!.pools[0].descriptor.producer!;

  const prompt = tokenRange(100, 2 * BS);
  await engine.publish([{ type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: prompt, blockSize: BS }]);
  await run.awaitHeld(oldKey, expectedHashes(prompt), 'the blocks in the first generation');

  const stream = await openPoolStream(old);
  const installed: string[] = [];
  run.client.on('replicaInstalled', (e) => installed.push(e.producerKey));
  run.rewrite(config('meta/llama-b'));

  await stream.retired();
  // The catalog lists only the new producer; the client follows it and replay fills the new pool.
  const current = await awaitReplacement(oldKey);
  expect(current.descriptor.producer!.layoutGeneration).toBeGreaterThan(old.layoutGeneration);
  const newKey = current.poolKey;
  expect(installed).toContain(current.producerKey);
  expect(run.client.replica(oldKey)).toBeUndefined();
  await run.awaitHeld(newKey, expectedHashes(prompt), 'the blocks in the new generation');
  expect(run.depth('llama', prompt)).toBe(2);

  // Live events keep flowing into the new generation.
  const more = tokenRange(100, 3 * BS);
  await engine.publish([{ type: 'BlockStored', blockHashes: [3n], parentBlockHash: 2n, tokenIds: more.slice(2 * BS), blockSize: BS }]);
  await waitFor(() => run.depth('llama', more) === 3, 'a live block in the new generation', DEADLINE_MS);
});

test('a kvBlockSize change swaps the generation; the new one hashes with the new block size', async () => {
  const engine = await run.engine();
  const config = (kvBlockSize: number): Record<string, unknown> => relayConfig([endpointConfig([workerConfig(7, engine)], { model: { kvBlockSize } })]);
  await run.start(config(BS));
  const oldKey = await run.poolKey();
  const small = tokenRange(100, 2 * BS);
  await engine.publish([{ type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: small, blockSize: BS }]);
  await run.awaitHeld(oldKey, expectedHashes(small), 'the blocks at the old block size');
  const stream = await openPoolStream(run.client.catalog()!.pools[0].descriptor.producer!);

  run.rewrite(config(2 * BS));
  await stream.retired();
  const current = await awaitReplacement(oldKey);
  expect(current.descriptor.querySemantics!.kvBlockSize).toBe(2 * BS);

  // The engine, now at the new block size, stores a 2-block prompt; its replayed old-size event is dropped.
  const large = tokenRange(500, 4 * BS);
  await engine.publish([{ type: 'BlockStored', blockHashes: [3n, 4n], parentBlockHash: null, tokenIds: large, blockSize: 2 * BS }]);
  await run.awaitHeld(current.poolKey, expectedHashes(large, null, 2 * BS), 'the blocks at the new block size');
  expect(expectedHashes(small).map((h) => run.holds(current.poolKey, h))).toEqual([false, false]);
  expect(run.depth('llama', large)).toBe(2);
  const dropped = (await run.metricsText()).split('\n').filter((l) => l.startsWith('kv_dc_relay_pool_events_dropped_block_size_total{'));
  expect(dropped.map((l) => Number(l.slice(l.lastIndexOf(' ') + 1))).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1);
});

test('a worker added by a reload joins the same producer; a worker removed takes its blocks with it', async () => {
  const e7 = await run.engine();
  const e8 = await run.engine();
  const config = (workers: Record<string, unknown>[]): Record<string, unknown> => relayConfig([endpointConfig(workers)]);
  await run.start(config([workerConfig(7, e7)]), [e7]);
  const pool = await run.poolKey();
  const producer = run.client.catalog()!.pools[0].producerKey;
  const revision = run.client.catalog()!.revision;

  const t7 = tokenRange(100, BS);
  const t8 = tokenRange(800, 2 * BS);
  await e7.publish([{ type: 'BlockStored', blockHashes: [1n], parentBlockHash: null, tokenIds: t7, blockSize: BS }]);
  // Published before worker 8 is configured: the relay's replay from 0 recovers it.
  await e8.publish([{ type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: t8, blockSize: BS }]);
  await run.awaitHeld(pool, expectedHashes(t7), 'worker 7 block');

  run.rewrite(config([workerConfig(7, e7), workerConfig(8, e8)]));
  await run.awaitHeld(pool, expectedHashes(t8), 'worker 8 blocks once it is configured');
  expect(run.client.catalog()!.revision).toBeGreaterThan(revision);
  expect(run.client.catalog()!.pools[0].producerKey).toBe(producer);

  run.rewrite(config([workerConfig(7, e7)]));
  await run.awaitGone(pool, expectedHashes(t8), 'worker 8 blocks once it is removed');
  expect(run.holds(pool, expectedHashes(t7)[0])).toBe(true);
  expect(run.client.catalog()!.pools[0].producerKey).toBe(producer);
});
