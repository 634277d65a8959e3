// Error reasons crossing the gRPC boundary (wire-contract.md §4, §5, §12.2, §12.3): status code and
// `kv-relay-error-reason` trailer for every row the server emits before or during streaming.
import { status } from '@grpc/grpc-js';
import { RelayErrorReason } from '../../src/wire/enums';
import { getRelayInfo } from '../../src/wire/service';
import type { ProducerIdentity } from '../../src/wire/types';
import { relayErrorReason } from '../../src/wire/errors';
import { testProducer } from '../support/test-source';
import { MARKER, StreamReader, startTestRelay, subscriber, type EndStatus, type TestRelay } from './helpers';
import { waitFor } from '../support/waitFor';

let relay: TestRelay;
afterEach(async () => relay?.close());

const producer = testProducer({ bucketCount: 16 });

function poolEnd(expectedProducer: ProducerIdentity | undefined, id = 'consumer-a', marker = MARKER): Promise<EndStatus> {
  return new StreamReader(relay.client.subscribeKvPool({ subscriberId: id, contractMarker: marker, expectedProducer })).end();
}

function mutate(f: (p: ProducerIdentity) => void): ProducerIdentity {
  const p = structuredClone(producer);
  f(p);
  return p;
}

beforeEach(async () => {
  relay = await startTestRelay();
  relay.source.attachPool(producer);
});

test('GetRelayInfo with marker 0 fails with FAILED_PRECONDITION + CONTRACT_MISMATCH', async () => {
  const err = await getRelayInfo(relay.client, { contractMarker: 0 }).catch((e) => e);
  expect(err.code).toBe(status.FAILED_PRECONDITION);
  expect(relayErrorReason(err)).toBe(RelayErrorReason.CONTRACT_MISMATCH);
});

test('every streaming RPC checks the marker first (before subscriber_id)', async () => {
  const bad = { subscriberId: '', contractMarker: 0x4b565230 };
  const ends = await Promise.all([
    new StreamReader(relay.client.watchKvPoolCatalog(bad)).end(),
    new StreamReader(relay.client.subscribeKvPool({ ...bad })).end(),
    new StreamReader(relay.client.subscribeServingReadiness(bad)).end(),
    new StreamReader(relay.client.subscribeKvPoolLoad(bad)).end(),
    new StreamReader(relay.client.subscribeServingLoad(bad)).end(),
  ]);
  for (const end of ends) {
    expect(end.code).toBe(status.FAILED_PRECONDITION);
    expect(end.reason).toBe(RelayErrorReason.CONTRACT_MISMATCH);
    expect(end.details).toBe('unsupported Relay v1 wire contract');
  }
});

test.each([
  ['empty', ''],
  ['129 bytes', 'x'.repeat(129)],
  ['a newline', 'consumer\nspoof'],
  ['NUL', 'a\u0000b'],
  ['DEL', 'a\u007fb'],
  ['C1 control', 'a\u0085b'],
  ['multi-byte over 128 bytes', 'é'.repeat(65)],
])('subscriber_id with %s is INVALID_REQUEST on every stream', async (_name, id) => {
  const ends = await Promise.all([
    new StreamReader(relay.client.watchKvPoolCatalog(subscriber(id))).end(),
    poolEnd(producer, id),
    new StreamReader(relay.client.subscribeServingReadiness(subscriber(id))).end(),
    new StreamReader(relay.client.subscribeKvPoolLoad(subscriber(id))).end(),
    new StreamReader(relay.client.subscribeServingLoad(subscriber(id))).end(),
  ]);
  for (const end of ends) {
    expect(end.code).toBe(status.INVALID_ARGUMENT);
    expect(end.reason).toBe(RelayErrorReason.INVALID_REQUEST);
  }
});

test('subscriber_id of exactly 128 bytes (and a reused id) is accepted', async () => {
  const id = 'y'.repeat(128);
  const a = new StreamReader(relay.client.watchKvPoolCatalog(subscriber(id)));
  const b = new StreamReader(relay.client.watchKvPoolCatalog(subscriber(id)));
  expect((await a.next()).revision).toBe(1n);
  expect((await b.next()).revision).toBe(1n);
  expect(a.ended).toBeUndefined();
  const pool = new StreamReader(relay.client.subscribeKvPool({ ...subscriber('consumer-a'), expectedProducer: producer }));
  expect((await pool.next()).sequence).toBe(0n);
});

test.each<[string, ProducerIdentity | undefined, number, number]>([
  ['no expected_producer', undefined, status.INVALID_ARGUMENT, RelayErrorReason.INVALID_REQUEST],
  ['no pool_id', mutate((p) => delete p.poolId), status.INVALID_ARGUMENT, RelayErrorReason.INVALID_REQUEST],
  ['identity_version 0', mutate((p) => (p.poolId!.identityVersion = 0)), status.INVALID_ARGUMENT, RelayErrorReason.INVALID_REQUEST],
  ['identity_version + 1', mutate((p) => (p.poolId!.identityVersion = 2)), status.FAILED_PRECONDITION, RelayErrorReason.UNSUPPORTED_FEATURE],
  ['a 15-byte digest', mutate((p) => (p.poolId!.indexerDomain!.cacheSemantics!.digest = new Uint8Array(15))), status.INVALID_ARGUMENT, RelayErrorReason.INVALID_REQUEST],
  ['identity source 0', mutate((p) => (p.poolId!.indexerDomain!.routingScope!.source = 0)), status.INVALID_ARGUMENT, RelayErrorReason.INVALID_REQUEST],
  ['an unknown identity source', mutate((p) => (p.poolId!.indexerDomain!.routingScope!.source = 9)), status.FAILED_PRECONDITION, RelayErrorReason.UNSUPPORTED_FEATURE],
  ['layout_generation 0', mutate((p) => (p.layoutGeneration = 0n)), status.INVALID_ARGUMENT, RelayErrorReason.INVALID_REQUEST],
  ['no ckf_format', mutate((p) => delete p.ckfFormat), status.INVALID_ARGUMENT, RelayErrorReason.INVALID_REQUEST],
  ['CKF format version 2', mutate((p) => (p.ckfFormat!.formatVersion = 2)), status.FAILED_PRECONDITION, RelayErrorReason.UNSUPPORTED_FEATURE],
  ['bucket count 2^25', mutate((p) => (p.ckfFormat!.bucketCount = 1n << 25n)), status.FAILED_PRECONDITION, RelayErrorReason.UNSUPPORTED_FEATURE],
  ['bucket count 3', mutate((p) => (p.ckfFormat!.bucketCount = 3n)), status.INVALID_ARGUMENT, RelayErrorReason.INVALID_REQUEST],
  ['dc_id + 1', mutate((p) => (p.poolId!.dcId += 1n)), status.NOT_FOUND, RelayErrorReason.POOL_NOT_FOUND],
  ['another incarnation', mutate((p) => (p.producerIncarnation += 1n)), status.FAILED_PRECONDITION, RelayErrorReason.PRODUCER_CHANGED],
  ['another layout generation', mutate((p) => (p.layoutGeneration = 7n)), status.FAILED_PRECONDITION, RelayErrorReason.PRODUCER_CHANGED],
  ['another CKF seed', mutate((p) => (p.ckfFormat!.seed = 1n)), status.FAILED_PRECONDITION, RelayErrorReason.PRODUCER_CHANGED],
])('SubscribeKvPool with %s', async (_name, expected, code, reason) => {
  const end = await poolEnd(expected);
  expect(end.code).toBe(code);
  expect(end.reason).toBe(reason);
  // The correct producer still works afterwards.
  const ok = new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  expect((await ok.next()).producer).toEqual(producer);
});

test('a fenced generation ends its streams with FAILED_PRECONDITION + INVALID_PUBLICATION', async () => {
  const feed = relay.source.pool(producer.poolId!) as ReturnType<typeof relay.source.attachPool>;
  const stream = new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  await stream.next();
  feed.fence('lease changed');
  const end = await stream.end();
  expect(end.code).toBe(status.FAILED_PRECONDITION);
  expect(end.reason).toBe(RelayErrorReason.INVALID_PUBLICATION);
});

test('a delta that does not continue the sequence is INVALID_PUBLICATION', async () => {
  const feed = relay.source.pool(producer.poolId!) as ReturnType<typeof relay.source.attachPool>;
  const stream = new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  await stream.next();
  feed.publishOutOfSequence();
  const end = await stream.end();
  expect(end.reason).toBe(RelayErrorReason.INVALID_PUBLICATION);
});

test('a retired generation ends its streams with UNAVAILABLE + PUBLICATION_UNAVAILABLE', async () => {
  const feed = relay.source.pool(producer.poolId!) as ReturnType<typeof relay.source.attachPool>;
  const stream = new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  await stream.next();
  feed.retire();
  const end = await stream.end();
  expect(end.code).toBe(status.UNAVAILABLE);
  expect(end.reason).toBe(RelayErrorReason.PUBLICATION_UNAVAILABLE);
});

test('a withdrawn pool ends its streams (PUBLICATION_UNAVAILABLE) and new subscribes get POOL_NOT_FOUND', async () => {
  const stream = new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  await stream.next();
  relay.source.withdrawPool(producer.poolId!);
  expect((await stream.end()).reason).toBe(RelayErrorReason.PUBLICATION_UNAVAILABLE);
  expect((await poolEnd(producer)).reason).toBe(RelayErrorReason.POOL_NOT_FOUND);
});

test('an oversized delta re-snapshots: existing subscribers are retired, a new one gets the new snapshot', async () => {
  const feed = relay.source.pool(producer.poolId!) as ReturnType<typeof relay.source.attachPool>;
  const stream = new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  await stream.next();
  feed.publish([[2, 5n]]);
  expect((await stream.next()).sequence).toBe(1n);
  feed.publishOversized(349_526);
  const end = await stream.end();
  expect(end.code).toBe(status.UNAVAILABLE);
  expect(end.reason).toBe(RelayErrorReason.PUBLICATION_UNAVAILABLE);
  const again = new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  const chunk = await again.next();
  expect(chunk.sequence).toBe(2n);
  feed.publish([[4, 9n]]);
  const delta = await again.next();
  expect([delta.baseSequence, delta.sequence]).toEqual([2n, 3n]);
});

test('the per-pool subscriber limit is RESOURCE_LIMIT and frees up when a stream ends', async () => {
  await relay.close();
  relay = await startTestRelay({ limits: { maxSubscribersPerPool: 2 } });
  relay.source.attachPool(producer);
  const open = () => new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  const a = open();
  const b = open();
  await a.next();
  await b.next();
  const c = await open().end();
  expect(c.code).toBe(status.RESOURCE_EXHAUSTED);
  expect(c.reason).toBe(RelayErrorReason.RESOURCE_LIMIT);
  a.cancel();
  await waitFor(async () => {
    const d = open();
    const ok = await d.opened();
    d.cancel();
    return ok;
  }, 'a stream admitted after the cancel');
});

test('the initialized-hub limit evicts an idle hub, and is RESOURCE_LIMIT while every hub is busy', async () => {
  await relay.close();
  relay = await startTestRelay({ limits: { maxInitializedPoolHubs: 1 } });
  const p1 = testProducer({ pool: 1 });
  const p2 = testProducer({ pool: 2 });
  const f1 = relay.source.attachPool(p1);
  relay.source.attachPool(p2);
  const s1 = new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: p1 }));
  await s1.next();
  const busy = await new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: p2 })).end();
  expect(busy.code).toBe(status.RESOURCE_EXHAUSTED);
  expect(busy.reason).toBe(RelayErrorReason.RESOURCE_LIMIT);
  s1.cancel();
  await waitFor(async () => {
    const s2 = new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: p2 }));
    const ok = await s2.opened();
    s2.cancel();
    return ok;
  }, 'the idle hub to be evicted for pool 2');
  expect(f1.attached).toBe(false); // the idle hub of pool 1 let go of its lease
});

test('a request over the 8 MiB message limit is a plain transport error without a reason trailer', async () => {
  const end = await new StreamReader(relay.client.watchKvPoolCatalog(subscriber('x'.repeat(8 * 1024 * 1024 + 10)))).end();
  expect(end.code).toBe(status.RESOURCE_EXHAUSTED);
  expect(end.reason).toBeUndefined();
});
