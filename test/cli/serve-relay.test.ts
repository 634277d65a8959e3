// A relay started as `serve` starts it (config file, producer, gRPC listener, metrics, watch), fed
// by a simulated vLLM engine over ZMQ and read by a real gRPC client.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Writable } from 'stream';
import { startRelay, type RunningRelay } from '../../src/server';
import { createLogger, silentLogger } from '../../src/log';
import type { PoolFeed } from '../../src/publication/source';
import { decodeFrame, filterContains, saltSeed, sequenceHashes, SnapshotAssembly, type DecodedDelta } from '../../src/native';
import { SimulatedEngine } from '../../src/sim';
import { DataStatus, FilterUpdateKind, ServingReadinessState, WorkerRole } from '../../src/wire/enums';
import { makeClient, type KvEventRelayClient } from '../../src/wire/service';
import type { FilterUpdate, KvPoolCatalogUpdate, KvPoolLoadUpdate, ServingLoadUpdate, ServingReadinessUpdate } from '../../src/wire/types';
import { BS, endpointConfig, relayConfig, workerConfig, type EndpointOptions } from '../support/relay-config';
import { waitFor } from '../support/waitFor';
import { MAX_MESSAGE, StreamReader, subscriber } from '../transport/helpers';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-serve-'));
let engine: SimulatedEngine | undefined;
let relay: RunningRelay | undefined;
let client: KvEventRelayClient | undefined;
afterEach(async () => {
  client?.close();
  await relay?.shutdown();
  await engine?.stop();
  client = relay = engine = undefined;
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const SEED = 0x5deece66d1b54a33n;

function configText(e: SimulatedEngine, aliases: string[] = [], endpoint: EndpointOptions = {}): string {
  const worker = workerConfig(7, e, { health: true, metrics: true });
  return JSON.stringify(
    relayConfig([endpointConfig([worker], { model: { aliases }, ...endpoint })], {
      dcId: 'dc-a',
      expectedUniqueBlocks: 1024,
      timing: { publicationThreshold: 1, loadWindowMs: 100, healthProbeMs: 100 },
    }),
  );
}

/** Whether the pool's current image (taken through the attach barrier) holds `hash`. */
async function poolHolds(feed: PoolFeed | undefined, hash: bigint): Promise<boolean> {
  return feed !== undefined && filterContains((await feed.attach({ delta() {}, retired() {}, fenced() {} })).words, hash, SEED);
}

/** `prepare` sets the engine up before the relay's first scrape of it. */
async function boot(file: string, prepare: (e: SimulatedEngine) => void = () => {}): Promise<{ catalog: StreamReader<KvPoolCatalogUpdate> }> {
  engine = await new SimulatedEngine({ modelName: 'llama' }).start();
  prepare(engine);
  fs.writeFileSync(file, configText(engine));
  relay = await startRelay({ configFile: file, logger: silentLogger });
  client = makeClient(relay.address, { channelOptions: { 'grpc.max_receive_message_length': MAX_MESSAGE } });
  const catalog = new StreamReader<KvPoolCatalogUpdate>(client.watchKvPoolCatalog(subscriber()));
  return { catalog };
}

test('catalog, snapshot and deltas of engine KV events over gRPC; /metrics and /healthz', async () => {
  const { catalog } = await boot(path.join(dir, 'relay.json'));
  const first = await catalog.next();
  expect(first.revision).toBe(1n);
  expect(first.relay).toEqual(relay!.relay);
  const [pool] = first.snapshot!.pools;
  expect(pool.registrations[0].canonicalModelId).toBe('llama');

  // Blocks the engine published before anyone subscribed are in the snapshot (replay from 0 too).
  await engine!.waitForSubscribers();
  const t1 = Array.from({ length: 8 }, (_, i) => i + 1);
  await engine!.publish([{ type: 'BlockStored', blockHashes: [1001n, 1002n], parentBlockHash: null, tokenIds: t1, blockSize: BS }]);
  const expected1 = [...sequenceHashes(Uint32Array.from(t1), BS, false, saltSeed(null, null))];
  const feed = relay!.producer.pool(pool.producer!.poolId!)!;
  await waitFor(() => poolHolds(feed, expected1[1]), 'the engine batch to reach the pool', 2000, 10);

  const stream = new StreamReader<FilterUpdate>(client!.subscribeKvPool({ ...subscriber(), expectedProducer: pool.producer }));
  const chunk = await stream.next();
  expect(chunk.kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
  expect(chunk.producer).toEqual(pool.producer);
  const snap = new SnapshotAssembly(pool.producer!.ckfFormat!).absorb(chunk.payload)!;
  const words = new BigUint64Array(Number(pool.producer!.ckfFormat!.bucketCount));
  snap.buckets.forEach((b, i) => (words[b] = snap.values[i]));
  for (const h of expected1) expect(filterContains(words, h, SEED)).toBe(true);

  // A live child block arrives as the next delta, continuing the snapshot's sequence.
  const t2 = [...t1, 9, 10, 11, 12];
  await engine!.publish([{ type: 'BlockStored', blockHashes: [1003n], parentBlockHash: 1002n, tokenIds: t2.slice(8), blockSize: BS }]);
  const delta = await stream.next();
  expect(delta.kind).toBe(FilterUpdateKind.DELTA);
  expect(delta.baseSequence).toBe(chunk.sequence);
  expect(delta.sequence).toBe(chunk.sequence + 1n);
  const d = decodeFrame(pool.producer!.ckfFormat!, delta.payload) as DecodedDelta;
  d.buckets.forEach((b, i) => (words[b] = d.values[i]));
  const expected2 = [...sequenceHashes(Uint32Array.from(t2), BS, false, saltSeed(null, null))];
  expect(filterContains(words, expected2[2], SEED)).toBe(true);

  const metrics = await (await fetch(`http://${relay!.metricsAddress}/metrics`)).text();
  expect(metrics).toContain('kv_dc_relay_catalog_pool_count 1');
  expect(metrics).toMatch(/kv_dc_relay_ingest_events_total\{worker="7",dp_rank="0"\} [1-9]/);
  expect(metrics).toContain('kv_dc_relay_serving_topology_count{state="ready"}');
  expect(metrics).toContain('kv_dc_relay_subscribers{stream="pool"} 1');
  expect(metrics).toContain('kv_dc_relay_requested_publication_hub_count 1');
  expect(metrics).toContain('kv_dc_relay_ready_publication_hub_count 1');
  expect((await fetch(`http://${relay!.metricsAddress}/healthz`)).status).toBe(200);
  stream.cancel();
});

test('readiness, pool load and serving load streams from health and metrics of the engine', async () => {
  // Gauges set after the start raced the first scrape: a window observed the rank with usage 0.
  const { catalog } = await boot(path.join(dir, 'views.json'), (e) => e.setGauges(0, { kvCacheUsage: 0.5 }));
  const [pool] = (await catalog.next()).snapshot!.pools;

  const readiness = new StreamReader<ServingReadinessUpdate>(client!.subscribeServingReadiness(subscriber()));
  let r = await readiness.next();
  // Before the engine's /health first answers the entry is UNKNOWN; then READY.
  while (r.entries[0]?.state !== ServingReadinessState.READY) r = await readiness.next();
  expect(r.entries).toHaveLength(1);
  expect(r.entries[0]).toMatchObject({ namespace: 'prod', canonicalModelId: 'llama', presentRoles: [WorkerRole.AGGREGATED], missingRoles: [] });
  expect(r.entries[0].members[0].poolId).toEqual(pool.producer!.poolId);

  const load = new StreamReader<KvPoolLoadUpdate>(client!.subscribeKvPoolLoad(subscriber()));
  let l = await load.next();
  while (l.pools[0]?.kvObservedRanks !== 1) l = await load.next();
  expect(l.windowMs).toBe(100n);
  expect(l.pools[0]).toEqual({ producer: pool.producer, kvUsedBlocks: 50n, totalKvBlocks: 100n, kvObservedRanks: 1, kvExpectedRanks: 1 });

  const serving = new StreamReader<ServingLoadUpdate>(client!.subscribeServingLoad(subscriber()));
  let sl = await serving.next();
  while (sl.pools.length === 0) sl = await serving.next();
  expect(sl.pools[0].producer).toEqual(pool.producer);
  expect(sl.pools[0].load!.status).toBe(DataStatus.UNAVAILABLE);
  expect(sl.models.map((m) => [m.namespace, m.canonicalModelId, m.deployment!.servingPools])).toEqual([['prod', 'llama', [pool.producer!.poolId]]]);
  for (const s of [readiness, load, serving]) s.cancel();
});

test('hot reload: an atomic rename applies within 2 s; an invalid file keeps the running state', async () => {
  const file = path.join(dir, 'reload.json');
  const { catalog } = await boot(file);
  const first = await catalog.next();
  const tmp = path.join(dir, '.reload.json.tmp');
  fs.writeFileSync(tmp, configText(engine!, ['chat']));
  const t0 = Date.now();
  fs.renameSync(tmp, file);
  const second = await catalog.next(2000);
  expect(Date.now() - t0).toBeLessThan(2000);
  expect(second.revision).toBe(2n);
  expect(second.snapshot!.pools[0].registrations[0].aliases).toEqual(['chat']);
  expect(second.snapshot!.pools[0].producer).toEqual(first.snapshot!.pools[0].producer);

  fs.writeFileSync(file, '{"dcId": "dc-a", "endpoints": [{"bogus": 1}]}');
  await new Promise((r) => setTimeout(r, 400));
  expect(catalog.buffered).toBe(0);
  expect(relay!.producer.catalog().revision).toBe(2n);

  // In-place write of a valid file: the pool is withdrawn (no endpoints).
  fs.writeFileSync(file, JSON.stringify({ dcId: 'dc-a', bind: '127.0.0.1:0' }));
  const third = await catalog.next(2000);
  expect(third.snapshot!.pools).toEqual([]);
});

test('an identity change replaces the pool and the engine replay fills the new generation', async () => {
  const file = path.join(dir, 'identity.json');
  const { catalog } = await boot(file);
  const old = (await catalog.next()).snapshot!.pools[0];
  await engine!.waitForSubscribers();
  const toks = [5, 6, 7, 8];
  await engine!.publish([{ type: 'BlockStored', blockHashes: [77n], parentBlockHash: null, tokenIds: toks, blockSize: BS }]);
  const [hash] = sequenceHashes(Uint32Array.from(toks), BS, false, saltSeed(null, null));
  await waitFor(() => poolHolds(relay!.producer.pool(old.producer!.poolId!), hash), 'the engine batch to reach the pool', 2000, 10);

  fs.writeFileSync(file, configText(engine!, [], { indexerIdentity: { semantics: { weights: 'revision-b' } } }));
  const next = await catalog.next(2000);
  const [pool] = next.snapshot!.pools;
  expect(pool.producer!.poolId).not.toEqual(old.producer!.poolId);
  expect(pool.producer!.layoutGeneration).toBe(old.producer!.layoutGeneration + 1n);
  await waitFor(() => poolHolds(relay!.producer.pool(pool.producer!.poolId!), hash), 'the replay to fill the new pool', 2000, 10);
});

test('bind mode: the relay binds the SUB and an engine dials in', async () => {
  const file = path.join(dir, 'bind.json');
  const worker = { id: 7, kvEvents: { endpoint: 'tcp://127.0.0.1:0', mode: 'bind', allowedPeers: ['127.0.0.1'] } };
  fs.writeFileSync(file, JSON.stringify(relayConfig([endpointConfig([worker])], { dcId: 'dc-a', metricsBind: undefined, expectedUniqueBlocks: 1024 })));
  relay = await startRelay({ configFile: file, logger: silentLogger });
  const [sub] = relay.producer.ingestEndpoints(7n);
  expect(sub).toMatch(/^tcp:\/\/127\.0\.0\.1:[1-9]\d*$/);
  engine = await new SimulatedEngine({ mode: 'connect', connectTo: sub, replay: false, http: false }).start();
  await engine.waitForSubscribers();
  const toks = [9, 8, 7, 6];
  await engine.publish([{ type: 'BlockStored', blockHashes: [1n], parentBlockHash: null, tokenIds: toks, blockSize: BS }]);
  const [hash] = sequenceHashes(Uint32Array.from(toks), BS, false, saltSeed(null, null));
  const feed = relay.producer.pool(relay.producer.catalog().snapshot.pools[0].producer!.poolId!)!;
  // A slow joiner misses early messages; publish again until one lands (as a real engine would).
  await waitFor(async () => {
    if (await poolHolds(feed, hash)) return true;
    await engine!.publish([{ type: 'BlockStored', blockHashes: [1n], parentBlockHash: null, tokenIds: toks, blockSize: BS }]);
    return false;
  }, 'the engine batch to reach the pool', 2000, 10);
});

test('a transport failure (the pool-load plane cannot sample) is logged and resolves failed; the transport has stopped', async () => {
  engine = await new SimulatedEngine({ modelName: 'llama' }).start();
  const file = path.join(dir, 'fatal.json');
  fs.writeFileSync(file, configText(engine));
  const lines: string[] = [];
  const logger = createLogger({ destination: new Writable({ write: (chunk, _enc, done) => done(void lines.push(String(chunk))) }) });
  relay = await startRelay({ configFile: file, logger });
  // Fault injection into the real producer: its next load window cannot be built.
  relay.producer.poolLoad = () => {
    throw new Error('aggregate sender dropped');
  };
  const err = (await relay.failed) as Error;
  expect(err.message).toBe('aggregate sender dropped');
  expect(relay.server.serving).toBe(false);
  expect(lines.map((l) => JSON.parse(l) as { msg: string; err?: string })).toContainEqual(expect.objectContaining({ msg: 'transport failed', err: 'aggregate sender dropped' }));
});

test('shutdown ends the catalog stream cleanly and closes the metrics listener', async () => {
  const { catalog } = await boot(path.join(dir, 'shutdown.json'));
  await catalog.next();
  const metricsAddress = relay!.metricsAddress!;
  const done = relay!.shutdown();
  const end = await catalog.end();
  expect(end.code).toBe(0);
  await done;
  await expect(fetch(`http://${metricsAddress}/healthz`)).rejects.toThrow();
});
