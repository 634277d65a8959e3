// The Producer as a RelaySource over real parts: native pool state, real HTTP health and metrics
// endpoints, and batches delivered through its ingest sink.
import * as http from 'http';
import type { AddressInfo } from 'net';
import { parseConfigText } from '../../src/config/load';
import type { RelayConfig } from '../../src/config/schema';
import { ckfBucketCount, filterContains, poolStateMemory, resetPoolStatePeak, saltSeed, sequenceHashes } from '../../src/native';
import { Producer } from '../../src/producer/producer';
import type { CatalogState, DeltaFrame, PoolListener, ReadinessState } from '../../src/publication/source';
import { silentLogger } from '../../src/log';
import { DataStatus, KvQueryHashFormat, ServingReadinessState, WorkerRole } from '../../src/wire/enums';
import type { KvPoolDescriptor } from '../../src/wire/types';
import { poolIdDisplay } from '../../src/identity';
import { waitFor, waitForValue } from '../support/waitFor';
import { packEngineBatch } from '../support/packed';
import { ACTOR_MAILBOX_CAPACITY } from '../../src/config/defaults';
import type { SourceStats } from '../../src/ingest/types';

const relay = { drtInstanceId: 5n, relayIncarnation: 77n };
const producers: Producer[] = [];
const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(producers.splice(0).map((p) => p.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

// Nothing listens on port 9: the subscriber keeps dialing in the background, which is all we need.
const kv = { endpoint: 'tcp://127.0.0.1:9' };
const endpoint = (patch: object = {}) => ({
  namespace: 'prod',
  component: 'backend',
  endpoint: 'generate',
  model: { name: 'llama', kvBlockSize: 4 },
  workerType: 'aggregated',
  workers: [{ id: 7, kvEvents: kv, totalKvBlocks: 1000, maxNumSeqs: 8 }],
  ...patch,
});

function config(endpoints: object[], extra: object = {}): RelayConfig {
  return parseConfigText(
    JSON.stringify({ dcId: 'dc-a', expectedUniqueBlocks: 32, timing: { publicationThreshold: 1, healthProbeMs: 50, loadWindowMs: 50 }, endpoints, ...extra }),
    'test.json',
  );
}

async function start(cfg: RelayConfig): Promise<Producer> {
  const p = new Producer({ config: cfg, relay, logger: silentLogger });
  producers.push(p);
  await p.start();
  return p;
}

async function httpServer(handler: http.RequestListener): Promise<string> {
  const s = http.createServer(handler);
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

class Recorder implements PoolListener {
  deltas: DeltaFrame[] = [];
  retiredCalls = 0;
  fencedReasons: string[] = [];
  delta(f: DeltaFrame): void {
    this.deltas.push(f);
  }
  retired(): void {
    this.retiredCalls += 1;
  }
  fenced(reason: string): void {
    this.fencedReasons.push(reason);
  }
}

const only = (s: CatalogState): KvPoolDescriptor => {
  expect(s.snapshot.pools).toHaveLength(1);
  return s.snapshot.pools[0];
};

test('catalog: descriptor and producer identity of a configured pool', async () => {
  const p = await start(config([endpoint({ model: { name: 'llama', kvBlockSize: 4, aliases: ['chat'] }, adapters: [{ name: 'lora-a', servedModel: 'llama-a', workers: [7] }] })]));
  const state = p.catalog();
  expect(state.revision).toBe(1n);
  const d = only(state);
  expect(d.producer).toMatchObject({
    producerIncarnation: 77n,
    layoutGeneration: 1n,
    ckfFormat: { formatVersion: 1, seed: 0x5deece66d1b54a33n, bucketCount: BigInt(ckfBucketCount(32)), fingerprintBits: 16, slotsPerBucket: 4 },
  });
  expect(d.producer!.ckfFormat!.bucketCount).toBe(16n);
  expect(d.producer!.poolId!.identityVersion).toBe(1);
  expect(d.servingEndpoint).toEqual({ namespace: 'prod', component: 'backend', endpoint: 'generate' });
  expect(d.querySemantics).toEqual({ kvBlockSize: 4, hashFormat: KvQueryHashFormat.DYNAMO_STANDARD_V1 });
  expect(d.poolRoles).toEqual([WorkerRole.AGGREGATED]);
  expect(d.registrations.map((r) => r.canonicalModelId)).toEqual(['llama', 'llama-a']);
  expect(p.pool(d.producer!.poolId!)).toBeDefined();
});

test('engine batches reach the pool: an attached image holds the canonical hashes', async () => {
  const p = await start(config([endpoint()]));
  const d = only(p.catalog());
  const feed = p.pool(d.producer!.poolId!)!;
  const toks = Uint32Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
  p.events(packEngineBatch(7n, [{ type: 'BlockStored', blockHashes: [11n, 12n], parentBlockHash: null, tokenIds: toks, blockSize: 4 }], { kvBlockSize: 4 }));
  // A source of no pool is ignored.
  p.events(packEngineBatch(99n, [{ type: 'AllBlocksCleared' }], { kvBlockSize: 4 }));
  const img = await feed.attach(new Recorder());
  for (const h of sequenceHashes(toks, 4, false, saltSeed(null, null))) expect(filterContains(img.words, h, 0x5deece66d1b54a33n)).toBe(true);
  // Losing the source's history clears its blocks.
  p.reset({ workerId: 7n, dpRank: 0 }, 'restart');
  const after = await feed.attach(new Recorder());
  expect(after.words.every((w) => w === 0n)).toBe(true);
});

test('a batch dropped on a full pool mailbox shows in its source\'s ingest stats as an overflow and a reset', async () => {
  const p = await start(config([endpoint()]));
  const source = (): SourceStats | undefined => p.metrics().ingest.find((s) => s.source.workerId === 7n && s.source.dpRank === 0);
  // The subscription may run on an ingest thread: its stats arrive once it started.
  expect(await waitForValue(source, 'the source\'s ingest stats', 15_000)).toMatchObject({ overflows: 0, resets: 0 });
  const toks = Uint32Array.from([1, 2, 3, 4]);
  // One turn: nothing is applied before the loop yields, so the pool's mailbox fills.
  for (let i = 0; i <= ACTOR_MAILBOX_CAPACITY + 1; i++) {
    p.events(packEngineBatch(7n, [{ type: 'BlockStored', blockHashes: [BigInt(i + 1)], parentBlockHash: null, tokenIds: toks, blockSize: 4 }], { kvBlockSize: 4, sequence: BigInt(i) }));
  }
  // Counted where the pool is applied (on its ingest thread, if any).
  await waitForValue(() => p.metrics().pools[0].mailboxOverflows === 2 || undefined, 'the overflows counted by the pool', 15_000);
  // Counted by the source's subscription (on its ingest thread, if any), which also asks for a replay:
  // once, after the pool applied what it held (one reset for both drops; a replay asked for while
  // the mailbox was still full would be dropped too).
  expect(await waitForValue(() => (source()?.overflows === 2 ? source() : undefined), 'the overflows in the ingest stats', 15_000)).toMatchObject({ overflows: 2, resets: 1 });
  // Another worker's source is untouched.
  expect(p.metrics().ingest.filter((s) => s.source.workerId !== 7n).every((s) => s.overflows === 0)).toBe(true);
});

test('hot apply: metadata in place, identity change replaces, re-materialization gets a new generation', async () => {
  const p = await start(config([endpoint()]));
  const seen: CatalogState[] = [];
  p.onCatalog((s) => seen.push(s));
  const first = only(p.catalog());
  const feed1 = p.pool(first.producer!.poolId!)!;
  const rec = new Recorder();
  await feed1.attach(rec);

  // Aliases and a second worker: same producer, revision + 1.
  await p.applyConfig(config([endpoint({ model: { name: 'llama', kvBlockSize: 4, aliases: ['chat'] }, workers: [{ id: 7, kvEvents: kv }, { id: 8 }] })]));
  const updated = only(p.catalog());
  expect(p.catalog().revision).toBe(2n);
  expect(updated.producer).toEqual(first.producer);
  expect(updated.registrations[0].aliases).toEqual(['chat']);
  expect(rec.retiredCalls).toBe(0);
  expect(seen.map((s) => s.revision)).toEqual([2n]);

  // Block size is identity material: the old pool is withdrawn (its feed retires), a new one appears.
  await p.applyConfig(config([endpoint({ model: { name: 'llama', kvBlockSize: 8 } })]));
  const replaced = only(p.catalog());
  expect(p.catalog().revision).toBe(4n); // remove + add
  expect(poolIdDisplay(replaced.producer!.poolId!)).not.toBe(poolIdDisplay(first.producer!.poolId!));
  expect(replaced.producer!.layoutGeneration).toBe(2n);
  expect(rec.retiredCalls).toBe(1);
  expect(p.pool(first.producer!.poolId!)).toBeUndefined();

  // Dematerialize (no kvEvents) and materialize again: a new layout generation for the same pool id.
  await p.applyConfig(config([endpoint({ model: { name: 'llama', kvBlockSize: 8 }, workers: [{ id: 7 }] })]));
  expect(p.catalog().snapshot.pools).toEqual([]);
  await p.applyConfig(config([endpoint({ model: { name: 'llama', kvBlockSize: 8 } })]));
  const again = only(p.catalog());
  expect(again.producer!.poolId).toEqual(replaced.producer!.poolId);
  expect(again.producer!.layoutGeneration).toBe(3n);
  expect(p.catalog().revision).toBe(6n);

  // An identical config changes nothing.
  await p.applyConfig(config([endpoint({ model: { name: 'llama', kvBlockSize: 8 } })]));
  expect(p.catalog().revision).toBe(6n);
});

test('a fenced generation is replaced by a new layout generation of the same pool', async () => {
  const p = await start(config([endpoint()]));
  const first = only(p.catalog());
  const rec = new Recorder();
  await p.pool(first.producer!.poolId!)!.attach(rec);
  // A packed batch the native state refuses (an unknown event kind) fails the actor's command: the
  // generation fences itself.
  const bad = packEngineBatch(7n, [{ type: 'AllBlocksCleared' }], { kvBlockSize: 4 });
  p.events({ ...bad, meta: Uint32Array.from(bad.meta, (v, i) => (i === 0 ? 99 : v)) });
  const replaced = await waitForValue(() => {
    const d = p.catalog().snapshot.pools[0];
    return d && d.producer!.layoutGeneration !== first.producer!.layoutGeneration ? d : undefined;
  }, 'the replacement generation', 3000, 10);
  expect(rec.fencedReasons).toHaveLength(1);
  expect(replaced.producer!.poolId).toEqual(first.producer!.poolId);
  expect(replaced.producer!.layoutGeneration).toBe(2n);
  expect(p.catalog().revision).toBe(3n); // remove + add
  const feed = p.pool(first.producer!.poolId!)!;
  expect(feed.producer).toEqual(replaced.producer);
  expect((await feed.attach(new Recorder())).sequence).toBe(0n);
});

test('readiness follows static liveness and real health probes', async () => {
  let healthy = 200;
  const url = await httpServer((req, res) => res.writeHead(healthy).end());
  const p = await start(
    config([
      endpoint(),
      endpoint({ endpoint: 'probed', model: { name: 'mistral', kvBlockSize: 4 }, workers: [{ id: 9, kvEvents: kv, health: { url: `${url}/health` } }] }),
      endpoint({ endpoint: 'dead', model: { name: 'qwen', kvBlockSize: 4 }, workers: [{ id: 10, live: false }] }),
    ]),
  );
  const updates: ReadinessState[] = [];
  p.onReadiness((s) => updates.push(s));
  const stateOf = (model: string) => p.readiness().entries.find((e) => e.canonicalModelId === model)?.state;
  expect(stateOf('llama')).toBe(ServingReadinessState.READY);
  expect(stateOf('qwen')).toBe(ServingReadinessState.UNAVAILABLE);
  await waitFor(() => stateOf('mistral') === ServingReadinessState.READY, 'mistral READY', 3000, 10);
  const llama = p.readiness().entries.find((e) => e.canonicalModelId === 'llama')!;
  expect(llama.members[0].poolId).toEqual(p.catalog().snapshot.pools.find((d) => d.registrations[0].canonicalModelId === 'llama')!.producer!.poolId);
  expect(llama.presentRoles).toEqual([WorkerRole.AGGREGATED]);
  // The READY update may come before the listener (the probe can answer while start() runs).
  const before = updates.length;
  healthy = 503;
  await waitFor(() => stateOf('mistral') === ServingReadinessState.UNAVAILABLE, 'mistral UNAVAILABLE', 3000, 10);
  expect(updates.length).toBeGreaterThan(before);
  expect(updates[updates.length - 1].revision).toBe(p.readiness().revision);
});

test('an endpoint with its own prefill and decode workers: both roles declared, readiness per unit', async () => {
  let prefillHealthy = 200;
  const url = await httpServer((req, res) => res.writeHead(prefillHealthy).end());
  const p = await start(config([endpoint({
    workerType: 'decode',
    needs: [['prefill']],
    workers: [{ id: 7, kvEvents: kv }, { id: 8, workerType: 'prefill', health: { url: `${url}/health` } }],
  })]));
  expect(only(p.catalog()).poolRoles).toEqual([WorkerRole.PREFILL, WorkerRole.DECODE]);
  const entry = () => p.readiness().entries[0];
  await waitFor(() => entry().state === ServingReadinessState.READY, 'P/D READY', 3000, 10);
  expect(entry().presentRoles).toEqual([WorkerRole.PREFILL, WorkerRole.DECODE]);
  expect(entry().members[0].roles).toEqual([WorkerRole.PREFILL, WorkerRole.DECODE]);
  prefillHealthy = 503;
  await waitFor(() => entry().state === ServingReadinessState.UNAVAILABLE, 'P/D UNAVAILABLE', 3000, 10);
  expect(entry().missingRoles).toEqual([WorkerRole.PREFILL]);
});

test('pool load from a real vLLM metrics endpoint; serving load lists pools and models', async () => {
  const url = await httpServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/plain' }).end('vllm:kv_cache_usage_perc{engine="0",model_name="llama"} 0.25\n'),
  );
  const p = await start(config([endpoint({ workers: [{ id: 7, kvEvents: kv, totalKvBlocks: 1000, maxNumSeqs: 8, metrics: { url: `${url}/metrics` } }] })]));
  const load = await waitForValue(() => {
    const l = p.poolLoad().pools[0];
    return l.kvObservedRanks === 1 ? l : undefined;
  }, 'an observed load rank', 3000, 10);
  expect(load).toEqual({ producer: only(p.catalog()).producer, kvUsedBlocks: 250n, totalKvBlocks: 1000n, kvObservedRanks: 1, kvExpectedRanks: 1 });
  const serving = p.servingLoad();
  expect(serving.pools).toHaveLength(1);
  expect(serving.pools[0].load!.status).toBe(DataStatus.UNAVAILABLE);
  expect(serving.pools[0].deployment).toEqual({ liveWorkers: 1n, maxConcurrency: 8n });
  expect(serving.models.map((m) => [m.namespace, m.canonicalModelId])).toEqual([['prod', 'llama']]);
  expect(p.metrics().degradedLoadCoveragePoolCount).toBe(0);
});

test("load windows: the same states while nothing changed, new ones when a scraped usage or a worker's health changes", async () => {
  let usage = 0.25;
  let healthy = 200;
  let scrapes = 0;
  let probes = 0;
  const url = await httpServer((req, res) => {
    if (req.url === '/health') {
      probes += 1;
      res.writeHead(healthy).end();
      return;
    }
    scrapes += 1;
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`vllm:kv_cache_usage_perc{engine="0",model_name="llama"} ${usage}\n`);
  });
  const worker = { id: 7, kvEvents: kv, totalKvBlocks: 1000, maxNumSeqs: 8, metrics: { url: `${url}/metrics` }, health: { url: `${url}/health` } };
  const p = await start(config([endpoint({ workers: [worker] })]));
  const used = (blocks: bigint) => () => (p.poolLoad().pools[0].kvUsedBlocks === blocks ? p.poolLoad() : undefined);
  const load = await waitForValue(used(250n), 'usage 0.25 scraped', 3000, 10);
  const serving = await waitForValue(() => (p.servingLoad().pools[0].deployment?.liveWorkers === 1n ? p.servingLoad() : undefined), 'the worker live', 3000, 10);
  // Scrapes (every 50 ms) and health probes that answer the same change nothing: the very states again.
  const [scraped, probed] = [scrapes, probes];
  await waitFor(() => scrapes >= scraped + 3 && probes >= probed + 3, 'three more scrapes and probes', 3000, 10);
  expect(p.poolLoad()).toBe(load);
  expect(p.servingLoad()).toBe(serving);
  usage = 0.5;
  await waitForValue(used(500n), 'usage 0.5 scraped', 3000, 10);
  expect(p.servingLoad()).toBe(serving);
  healthy = 503;
  await waitFor(() => p.servingLoad().pools[0].deployment?.liveWorkers === 0n, 'the worker not live', 3000, 10);
  expect(p.poolLoad().pools[0].kvUsedBlocks).toBe(500n);
});

test('close retires every generation and empties catalog and readiness', async () => {
  const p = await start(config([endpoint()]));
  const feed = p.pool(only(p.catalog()).producer!.poolId!)!;
  const rec = new Recorder();
  await feed.attach(rec);
  const revision = p.catalog().revision;
  await p.close();
  expect(rec.retiredCalls).toBe(1);
  expect(p.catalog().snapshot.pools).toEqual([]);
  expect(p.catalog().revision).toBe(revision + 1n);
  expect(p.readiness().entries).toEqual([]);
});

test.each([0, 1])(
  'limits.reservePoolBlocks: the pool holds its reserved tables from creation, counted in its state bytes, a lineage table for each named source (ingestThreads %p)',
  async (ingestThreads) => {
    const blocks = 90_000;
    // Three (worker, rank) sources: each lineage table reserves a third.
    const eps = [endpoint({ workers: [{ id: 7, kvEvents: kv, dpSize: 2 }, { id: 8, kvEvents: { endpoint: 'tcp://127.0.0.1:10' } }] })];
    const plain = await start(config(eps, { limits: { ingestThreads } }));
    const reserved = await start(config(eps, { limits: { ingestThreads, reservePoolBlocks: blocks } }));
    const bytes = (p: Producer) => p.metrics().pools[0]?.stateBytes ?? 0;
    // Before any event: the owner table for every reserved block (~19.4 B each) and the three
    // sources' lineage tables (~24-31 B per entry).
    await waitFor(() => bytes(plain) > 0 && bytes(reserved) > bytes(plain), 'both pools materialized');
    const tables = bytes(reserved) - bytes(plain);
    expect(tables).toBeGreaterThanOrEqual((19 + 24) * blocks);
    expect(tables).toBeLessThan((21 + 32) * blocks);
    // A named source's first store maps no table (a few bytes at most).
    const before = bytes(reserved);
    const toks = Uint32Array.from([1, 2, 3, 4]);
    reserved.events(packEngineBatch(7n, [{ type: 'BlockStored', blockHashes: [11n], parentBlockHash: null, tokenIds: toks, blockSize: 4 }], { kvBlockSize: 4, dpRank: 1 }));
    await waitFor(() => reserved.metrics().pools[0].eventsApplied === 1, 'the store applied');
    expect(bytes(reserved) - before).toBeLessThan(4096);
  },
);

/**
 * A producer of one pool reserving 1 Mi blocks, its first generation attached, and the process's
 * pool-state peak restarted from what it holds now (this pool's tables and whatever states earlier
 * tests left to the garbage collector: `held`).
 */
async function reservedPool(ingestThreads: number) {
  const limits = { ingestThreads, reservePoolBlocks: 1 << 20 };
  const p = await start(config([endpoint()], { limits }));
  const first = only(p.catalog());
  const reservation = await waitForValue(() => p.metrics().pools[0]?.stateBytes || undefined, 'the reserved tables');
  const rec = new Recorder();
  await p.pool(first.producer!.poolId!)!.attach(rec);
  const held = poolStateMemory().liveBytes;
  resetPoolStatePeak();
  return { p, limits, first, reservation, rec, held };
}

/** The pool's next generation, once the catalog lists it. */
function replacementOf(p: Producer, first: KvPoolDescriptor, timeoutMs?: number): Promise<KvPoolDescriptor> {
  return waitForValue(() => {
    const d = p.catalog().snapshot.pools[0];
    return d && d.producer!.layoutGeneration !== first.producer!.layoutGeneration ? d : undefined;
  }, 'the replacement generation', timeoutMs);
}

/** `count` stores of 4096 new blocks each (one slice apiece) from worker 7. */
function backlog(count: number): ReturnType<typeof packEngineBatch>[] {
  const n = 4096;
  return Array.from({ length: count }, (_, b) => {
    const ids = Array.from({ length: n }, (_, i) => BigInt(1 + b * n + i));
    const tokens = Uint32Array.from({ length: 4 * n }, (_, i) => b * 4 * n + i);
    return packEngineBatch(7n, [{ type: 'BlockStored', blockHashes: ids, parentBlockHash: null, tokenIds: tokens, blockSize: 4 }], { kvBlockSize: 4 });
  });
}

test.each([0, 1])(
  'limits.reservePoolBlocks: a re-fenced pool\'s new generation reserves once the old one\'s tables are freed, never beside them (ingestThreads %p)',
  async (ingestThreads) => {
    const { p, first, reservation, rec, held } = await reservedPool(ingestThreads);
    // A large store, applied off the thread in a slice of its own, and behind it in the same inbox a
    // batch the native state refuses: the generation fences while the store's apply is in flight.
    const n = 50_000;
    const ids = Array.from({ length: n }, (_, i) => BigInt(i + 1));
    const big = packEngineBatch(7n, [{ type: 'BlockStored', blockHashes: ids, parentBlockHash: null, tokenIds: Uint32Array.from({ length: 4 * n }, (_, i) => i), blockSize: 4 }], { kvBlockSize: 4 });
    const bad = packEngineBatch(7n, [{ type: 'AllBlocksCleared' }], { kvBlockSize: 4 });
    p.events(big);
    p.events({ ...bad, meta: Uint32Array.from(bad.meta, (v, i) => (i === 0 ? 99 : v)) });
    const replaced = await replacementOf(p, first);
    // The old generation's listener heard its end; the new one starts empty, with its own reservation.
    expect(rec.fencedReasons).toHaveLength(1);
    const image = await p.pool(replaced.producer!.poolId!)!.attach(new Recorder());
    expect(image.sequence).toBe(0n);
    expect(image.words.every((w) => w === 0n)).toBe(true);
    expect(p.metrics().pools[0].stateBytes).toBe(reservation);
    // At no moment did the process's pool states hold both generations' tables.
    expect(poolStateMemory().peakBytes).toBeLessThan(held + reservation / 8);
    expect(poolStateMemory().liveBytes).toBeLessThan(held + reservation / 8);
  },
);

test.each([0, 1])(
  'limits.reservePoolBlocks: a pool withdrawn with a backlog and replaced by another: the new one reserves once the old one\'s tables are freed (ingestThreads %p)',
  async (ingestThreads) => {
    const { p, limits, first, reservation, rec, held } = await reservedPool(ingestThreads);
    // A backlog the old generation applies before it retires (retire() ends after its queued work).
    for (const batch of backlog(15)) p.events(batch);
    // Block size is identity material: the pool is withdrawn and another takes its place.
    await p.applyConfig(config([endpoint({ model: { name: 'llama', kvBlockSize: 8 } })], { limits }));
    const replaced = only(p.catalog());
    expect(poolIdDisplay(replaced.producer!.poolId!)).not.toBe(poolIdDisplay(first.producer!.poolId!));
    expect(rec.retiredCalls).toBe(1);
    const image = await p.pool(replaced.producer!.poolId!)!.attach(new Recorder());
    expect(image.words.every((w) => w === 0n)).toBe(true);
    expect(p.metrics().pools[0].stateBytes).toBe(reservation);
    expect(poolStateMemory().peakBytes).toBeLessThan(held + reservation / 8);
  },
);

test('limits.reservePoolBlocks: an ingest thread that dies frees its pools\' tables before their new generations reserve', async () => {
  const { p, first, reservation, rec, held } = await reservedPool(1);
  // With applies in flight: a thread that ends while one runs on a libuv worker must not take the
  // process with it (its settling threw into the torn-down environment and aborted it, 1 run in 6).
  for (const batch of backlog(8)) p.events(batch);
  p.kvSources.ingestThreads!.crash(7n);
  const replaced = await replacementOf(p, first, 15_000);
  expect(rec.fencedReasons).toEqual(['ingest thread died']);
  const image = await p.pool(replaced.producer!.poolId!)!.attach(new Recorder());
  expect(image.words.every((w) => w === 0n)).toBe(true);
  expect(poolStateMemory().peakBytes).toBeLessThan(held + reservation / 8);
  expect(poolStateMemory().liveBytes).toBeLessThan(held + reservation / 8);
});
