// Conformance (wire-contract.md §12.2): plaintext GetRelayInfo, every RPC surface, contiguous CBI1
// deltas after the snapshot, catalog heartbeat (option), replacement generations.
import { SnapshotAssembly, decodeFrame } from '../../src/native';
import { FilterUpdateKind, RelayErrorReason, ServingReadinessState, WorkerRole, DataStatus } from '../../src/wire/enums';
import { getRelayInfo } from '../../src/wire/service';
import type { FilterUpdate, KvPoolCatalogUpdate, ProducerIdentity } from '../../src/wire/types';
import { testProducer } from '../support/test-source';
import { MARKER, RELAY, StreamReader, startTestRelay, subscriber, type TestRelay } from './helpers';

let relay: TestRelay;
afterEach(async () => relay?.close());

function subscribePool(r: TestRelay, producer: ProducerIdentity, id = 'consumer-a'): StreamReader<FilterUpdate> {
  return new StreamReader(r.client.subscribeKvPool({ ...subscriber(id), expectedProducer: producer }));
}

async function receiveSnapshot(reader: StreamReader<FilterUpdate>, producer: ProducerIdentity): Promise<{ sequence: bigint; words: BigUint64Array }> {
  const format = producer.ckfFormat!;
  const assembly = new SnapshotAssembly(format);
  const words = new BigUint64Array(Number(format.bucketCount));
  for (;;) {
    const frame = await reader.next();
    expect(frame.kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
    expect(frame.producer).toEqual(producer);
    expect(frame.baseSequence).toBe(frame.sequence);
    const done = assembly.absorb(frame.payload);
    if (done) {
      expect(done.epoch).toBe(frame.sequence);
      done.buckets.forEach((b, i) => (words[b] = done.values[i]));
      return { sequence: frame.sequence, words };
    }
  }
}

test('plaintext GetRelayInfo returns protocol 1, the relay identity and the KVR1 marker', async () => {
  relay = await startTestRelay();
  const info = await getRelayInfo(relay.client, { contractMarker: MARKER });
  expect(info).toEqual({ protocolVersion: 1, relay: RELAY, contractMarker: 0x4b565231 });
});

test('serves catalog, pool snapshot + contiguous delta, readiness, load and serving load', async () => {
  relay = await startTestRelay({ timing: { loadWindowMs: 10 } });
  const producer = testProducer({ bucketCount: 16 });
  const feed = relay.source.attachPool(producer);
  relay.source.setReadiness([
    {
      namespace: 'dynamo',
      canonicalModelId: 'llama',
      state: ServingReadinessState.READY,
      presentRoles: [WorkerRole.LEGACY],
      missingRoles: [],
      members: [{ endpoint: { namespace: 'dynamo', component: 'backend', endpoint: 'generate' }, roles: [WorkerRole.LEGACY], poolId: producer.poolId }],
      duplicateRoleEndpoints: [],
      legacyFallbackActive: true,
      adapters: [],
    },
  ]);
  relay.source.poolLoadState = { pools: [{ producer, kvUsedBlocks: 40n, totalKvBlocks: 100n, kvObservedRanks: 1, kvExpectedRanks: 1 }] };

  const catalog = new StreamReader<KvPoolCatalogUpdate>(relay.client.watchKvPoolCatalog(subscriber()));
  const first = await catalog.next();
  expect(first.protocolVersion).toBe(1);
  expect(first.contractMarker).toBe(MARKER);
  expect(first.relay).toEqual(RELAY);
  expect(first.revision).toBe(1n);
  expect(first.snapshot!.pools).toHaveLength(1);
  expect(first.snapshot!.pools[0].registrations[0]).toMatchObject({ canonicalModelId: 'llama', aliases: ['chat'] });
  expect(first.snapshot!.pools[0].poolRoles).toEqual([WorkerRole.LEGACY]);
  expect(first.snapshot!.pools[0].querySemantics!.kvBlockSize).toBe(64);

  const pool = subscribePool(relay, producer);
  const snapshot = await receiveSnapshot(pool, producer);
  expect(snapshot.sequence).toBe(0n);
  expect(snapshot.words.every((w) => w === 0n)).toBe(true);

  const readiness = new StreamReader(relay.client.subscribeServingReadiness(subscriber()));
  const r = await readiness.next();
  expect(r.revision).toBe(2n);
  expect(r.entries).toHaveLength(1);
  expect(r.entries[0]).toMatchObject({ canonicalModelId: 'llama', state: ServingReadinessState.READY, legacyFallbackActive: true });
  expect(r.entries[0].members[0].roles).toEqual([WorkerRole.LEGACY]);
  expect(r.entries[0].members[0].poolId).toEqual(producer.poolId);

  const load = new StreamReader(relay.client.subscribeKvPoolLoad(subscriber()));
  const l = await load.next();
  const loaded = l.pools.length > 0 ? l : await load.next();
  expect(loaded.pools).toHaveLength(1);
  expect(loaded.pools[0].producer).toEqual(producer);
  expect(loaded.pools[0].kvUsedBlocks).toBe(40n);
  expect(loaded.pools[0].totalKvBlocks).toBe(100n);

  feed.publish([[3, 0xabcdn]]);
  const delta = await pool.next();
  expect(delta.kind).toBe(FilterUpdateKind.DELTA);
  expect(delta.baseSequence).toBe(0n);
  expect(delta.sequence).toBe(1n);
  const decoded = decodeFrame(producer.ckfFormat!, delta.payload);
  expect(decoded.kind).toBe('delta');
  if (decoded.kind === 'delta') {
    expect(decoded.header.epoch).toBe(delta.sequence);
    expect(decoded.baseEpoch).toBe(delta.baseSequence);
    expect([...decoded.values]).toEqual([0xabcdn]);
  }
  expect(delta.sendTsUs).toBeGreaterThan(BigInt(Date.now() - 60_000) * 1000n);
});

test('catalog heartbeat (option) re-sends the same revision, snapshot and relay', async () => {
  relay = await startTestRelay({ timing: { catalogHeartbeatMs: 10 } });
  relay.source.attachPool(testProducer());
  const catalog = new StreamReader<KvPoolCatalogUpdate>(relay.client.watchKvPoolCatalog(subscriber()));
  const [a, b] = await catalog.take(2);
  expect(b).toEqual(a);
});

test('without the option the catalog is sent only on change, latest wins', async () => {
  relay = await startTestRelay({ timing: { catalogHeartbeatMs: 0 } });
  const catalog = new StreamReader<KvPoolCatalogUpdate>(relay.client.watchKvPoolCatalog(subscriber()));
  const empty = await catalog.next();
  expect(empty.revision).toBe(0n);
  expect(empty.snapshot?.pools ?? []).toEqual([]);
  relay.source.attachPool(testProducer({ pool: 1 }));
  relay.source.attachPool(testProducer({ pool: 2 }));
  let last = await catalog.next();
  while (last.revision < 2n) last = await catalog.next();
  expect(last.revision).toBe(2n);
  expect(last.snapshot!.pools).toHaveLength(2);
  await expect(catalog.next(100)).rejects.toThrow(/timed out/);
});

test('readiness is re-sent every heartbeat interval with the same revision', async () => {
  relay = await startTestRelay({ timing: { readinessHeartbeatMs: 20 } });
  const readiness = new StreamReader(relay.client.subscribeServingReadiness(subscriber()));
  const [a, b, c] = await readiness.take(3);
  expect(a.revision).toBe(1n);
  expect(b).toEqual(a);
  expect(c).toEqual(a);
  relay.source.setReadiness([]);
  let next = await readiness.next();
  while (next.revision === 1n) next = await readiness.next();
  expect(next.revision).toBe(2n);
});

test('replacement generation rejects a stale subscribe and needs a new snapshot; the old stream ends', async () => {
  relay = await startTestRelay();
  const old = testProducer({ layoutGeneration: 1n });
  const oldFeed = relay.source.attachPool(old);
  const oldStream = subscribePool(relay, old);
  await receiveSnapshot(oldStream, old);
  oldFeed.publish([[1, 7n]]);
  await oldStream.next();

  const replacement = testProducer({ layoutGeneration: 2n });
  relay.source.attachPool(replacement);
  const catalog = new StreamReader<KvPoolCatalogUpdate>(relay.client.watchKvPoolCatalog(subscriber()));
  const listed = (await catalog.next()).snapshot!.pools[0].producer!;
  expect(listed).toEqual(replacement);
  expect(listed).not.toEqual(old);

  const stale = await subscribePool(relay, old, 'stale').end();
  expect(stale.code).toBe(9); // FAILED_PRECONDITION
  expect(stale.reason).toBe(RelayErrorReason.PRODUCER_CHANGED);

  const fresh = subscribePool(relay, replacement, 'fresh');
  const snapshot = await receiveSnapshot(fresh, replacement);
  expect(snapshot.sequence).toBe(0n);
  expect(snapshot.words.every((w) => w === 0n)).toBe(true);

  const ended = await oldStream.end();
  expect(ended.code).toBe(14); // UNAVAILABLE
  expect(ended.reason).toBe(RelayErrorReason.PUBLICATION_UNAVAILABLE);
  expect(oldStream.buffered).toBe(0);
});

test('serving load: window 0 is empty, later windows grow window_sequence and carry the aggregate', async () => {
  relay = await startTestRelay({ timing: { loadWindowMs: 10 } });
  const marker0 = await new StreamReader(relay.client.subscribeServingLoad({ subscriberId: 'x', contractMarker: 0 })).end();
  expect(marker0.reason).toBe(RelayErrorReason.CONTRACT_MISMATCH);
  const empty = await new StreamReader(relay.client.subscribeServingLoad({ subscriberId: '', contractMarker: MARKER })).end();
  expect(empty.reason).toBe(RelayErrorReason.INVALID_REQUEST);

  const stream = new StreamReader(relay.client.subscribeServingLoad(subscriber()));
  const first = await stream.next();
  expect(first.pools).toEqual([]);
  expect(first.models).toEqual([]);
  const producer = testProducer();
  relay.source.servingLoadState = {
    pools: [{ producer, load: { tokens: {}, status: DataStatus.UNAVAILABLE, sourceObservedMs: 0n }, deployment: { liveWorkers: 1n } }],
    models: [],
  };
  let later = await stream.next();
  while (later.pools.length === 0) later = await stream.next();
  expect(later.windowSequence).toBeGreaterThan(first.windowSequence);
  expect(later.windowMs).toBe(10n);
  expect(later.pools[0].producer).toEqual(producer);
  expect(later.pools[0].load!.status).toBe(DataStatus.UNAVAILABLE);
  expect(later.pools[0].load!.tokens?.activeDecodeBlocks).toBeUndefined();
  expect(later.pools[0].deployment!.liveWorkers).toBe(1n);
  expect(later.pools[0].deployment!.maxConcurrency).toBeUndefined();
  const seqs = [later.windowSequence];
  for (let i = 0; i < 3; i += 1) seqs.push((await stream.next()).windowSequence);
  for (let i = 1; i < seqs.length; i += 1) expect(seqs[i]).toBe(seqs[i - 1] + 1n);
});
