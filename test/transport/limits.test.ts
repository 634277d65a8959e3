// Per-stream-type permits (wire-contract.md §5.1 step 4, §12.2, §12.3): try-acquire, RESOURCE_LIMIT
// when full, released when the stream ends for any reason.
import { status } from '@grpc/grpc-js';
import { FilterUpdateKind, RelayErrorReason } from '../../src/wire/enums';
import { testProducer } from '../support/test-source';
import { StreamReader, startTestRelay, subscriber, type TestRelay } from './helpers';
import { waitFor } from '../support/waitFor';

let relay: TestRelay;
afterEach(async () => relay?.close());

const producer = testProducer();

test('max_pool_streams_total = 1: the 2nd subscribe is RESOURCE_EXHAUSTED, a retry after dropping the 1st succeeds', async () => {
  relay = await startTestRelay({ limits: { maxPoolStreamsTotal: 1 } });
  relay.source.attachPool(producer);
  const open = () => new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  const first = open();
  await first.next();
  const second = await open().end();
  expect(second.code).toBe(status.RESOURCE_EXHAUSTED);
  expect(second.reason).toBe(RelayErrorReason.RESOURCE_LIMIT);
  expect(second.details).toBe('Relay total pool stream limit 1 reached');
  first.cancel();
  let retry = open();
  await waitFor(async () => {
    retry = open();
    return retry.opened();
  }, 'a retry admitted after the cancel');
  const chunk = await retry.next();
  expect(chunk.kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
  expect(chunk.producer).toEqual(producer);
});

test('total pool stream limit 65: the 66th is rejected with its message, freeing one admits another', async () => {
  relay = await startTestRelay({ limits: { maxPoolStreamsTotal: 65, maxSubscribersPerPool: 100 } });
  relay.source.attachPool(producer);
  const open = () => new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  const streams = Array.from({ length: 65 }, open);
  for (const s of streams) expect((await s.next()).kind).toBe(FilterUpdateKind.SNAPSHOT_CHUNK);
  const rejected = await open().end();
  expect(rejected.code).toBe(status.RESOURCE_EXHAUSTED);
  expect(rejected.details).toBe('Relay total pool stream limit 65 reached');
  streams[0].cancel();
  await waitFor(async () => {
    const s = open();
    return s.opened();
  }, 'a stream admitted after one closed');
});

test('a pool stream rejected before admission (POOL_NOT_FOUND) does not hold a permit', async () => {
  relay = await startTestRelay({ limits: { maxPoolStreamsTotal: 1 } });
  relay.source.attachPool(producer);
  const missing = testProducer({ pool: 9 });
  for (let i = 0; i < 3; i += 1) {
    const end = await new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: missing })).end();
    expect(end.reason).toBe(RelayErrorReason.POOL_NOT_FOUND);
  }
  const ok = new StreamReader(relay.client.subscribeKvPool({ ...subscriber(), expectedProducer: producer }));
  expect(await ok.opened()).toBe(true);
});

test.each([
  ['catalog stream', 'maxCatalogSubscribers', (r: TestRelay) => r.client.watchKvPoolCatalog(subscriber())],
  ['readiness stream', 'maxReadinessSubscribers', (r: TestRelay) => r.client.subscribeServingReadiness(subscriber())],
  ['load stream', 'maxLoadSubscribers', (r: TestRelay) => r.client.subscribeKvPoolLoad(subscriber())],
  ['serving-load stream', 'maxServingLoadSubscribers', (r: TestRelay) => r.client.subscribeServingLoad(subscriber())],
] as const)('%s limit: RESOURCE_LIMIT when full, released on cancel', async (name, knob, open) => {
  relay = await startTestRelay({ limits: { [knob]: 2 } });
  const a = new StreamReader(open(relay));
  const b = new StreamReader(open(relay));
  expect(await a.opened()).toBe(true);
  expect(await b.opened()).toBe(true);
  const c = await new StreamReader(open(relay)).end();
  expect(c.code).toBe(status.RESOURCE_EXHAUSTED);
  expect(c.reason).toBe(RelayErrorReason.RESOURCE_LIMIT);
  expect(c.details).toBe(`Relay ${name} limit 2 reached`);
  a.cancel();
  await waitFor(async () => new StreamReader(open(relay)).opened(), 'a stream admitted after the cancel');
});

test('serving load has an independent subscriber limit: a pool-load stream is still admitted', async () => {
  relay = await startTestRelay({ limits: { maxServingLoadSubscribers: 1 } });
  const first = new StreamReader(relay.client.subscribeServingLoad(subscriber()));
  expect(await first.opened()).toBe(true);
  const second = await new StreamReader(relay.client.subscribeServingLoad(subscriber())).end();
  expect(second.code).toBe(status.RESOURCE_EXHAUSTED);
  expect(second.reason).toBe(RelayErrorReason.RESOURCE_LIMIT);
  const poolLoad = new StreamReader(relay.client.subscribeKvPoolLoad(subscriber()));
  expect(await poolLoad.opened()).toBe(true);
});
