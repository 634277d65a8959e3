// Shutdown (wire-contract.md §9, §12.2): health NOT_SERVING, every stream ends, every connection
// (idle TCP, HTTP/2 with unread streams) is force-closed, all within 5 s.
import * as grpc from '@grpc/grpc-js';
import * as net from 'net';
import { service as healthService } from 'grpc-health-check';
import { RELAY_SERVICE_NAME } from '../../src/wire/constants';
import type { FilterUpdate, KvPoolCatalogUpdate } from '../../src/wire/types';
import { testProducer } from '../support/test-source';
import { StreamReader, startTestRelay, subscriber, type TestRelay } from './helpers';
import { rawCall, rawSession } from './raw-client';

let relay: TestRelay;
afterEach(async () => relay?.close());

function healthClient(address: string): grpc.Client & Record<string, Function> {
  const Client = grpc.makeGenericClientConstructor(healthService, 'Health');
  return new Client(address, grpc.credentials.createInsecure()) as never;
}

test('shutdown force-closes an idle TCP connection and HTTP/2 connections with unread streams within 5 s', async () => {
  relay = await startTestRelay();
  const producer = testProducer({ bucketCount: 1 << 20 }); // 8 MiB of chunks: far more than a window
  relay.source.attachPool(producer);

  const [host, port] = [relay.server.address.split(':')[0], relay.server.port];
  const idle = net.connect(port, host);
  await new Promise((r) => idle.once('connect', r));
  const idleClosed = new Promise((r) => idle.once('close', r));
  idle.on('error', () => undefined);
  idle.resume(); // a paused socket would never notice the server closing it

  const session = rawSession(relay.server.address);
  const sessionClosed = new Promise((r) => session.once('close', r));
  const unreadCatalog = rawCall(session, 'WatchKvPoolCatalog', 'WatchKvPoolCatalogRequest', subscriber('c'), 'KvPoolCatalogUpdate');
  const unreadPool = rawCall(session, 'SubscribeKvPool', 'SubscribeKvPoolRequest', { ...subscriber('p'), expectedProducer: producer }, 'FilterUpdate');
  void unreadCatalog.end();
  void unreadPool.end();

  const health = healthClient(relay.server.address);
  const check = (service: string) =>
    new Promise<{ status: string }>((resolve, reject) => health.check({ service }, (e: Error | null, r: { status: string }) => (e ? reject(e) : resolve(r))));
  expect((await check(RELAY_SERVICE_NAME)).status).toBe('SERVING');
  const watch = health.watch({ service: RELAY_SERVICE_NAME }) as grpc.ClientReadableStream<{ status: string }>;
  const statuses: string[] = [];
  watch.on('data', (m: { status: string }) => statuses.push(m.status));
  watch.on('error', () => undefined);

  const reading = new StreamReader<KvPoolCatalogUpdate>(relay.client.watchKvPoolCatalog(subscriber('reader')));
  await reading.next();
  const others = [
    new StreamReader(relay.client.subscribeServingReadiness(subscriber('r'))),
    new StreamReader(relay.client.subscribeKvPoolLoad(subscriber('l'))),
    new StreamReader(relay.client.subscribeServingLoad(subscriber('s'))),
  ];
  for (const o of others) await o.next();
  const readingPool = new StreamReader<FilterUpdate>(relay.client.subscribeKvPool({ ...subscriber('pool-reader'), expectedProducer: producer }));
  await readingPool.next();
  await Promise.all([unreadCatalog.headers, unreadPool.headers]); // both streams are open, unread

  const started = Date.now();
  await relay.server.shutdown();
  await Promise.all([idleClosed, sessionClosed]);
  expect(Date.now() - started).toBeLessThan(5000);
  expect(relay.server.serving).toBe(false);
  expect(statuses).toEqual(['SERVING', 'NOT_SERVING']);
  // A client that kept reading saw its streams end cleanly.
  expect((await reading.end()).code).toBe(grpc.status.OK);
  for (const o of others) expect((await o.end()).code).toBe(grpc.status.OK);
  const poolEnd = await readingPool.end();
  expect([grpc.status.OK, grpc.status.UNAVAILABLE, grpc.status.CANCELLED]).toContain(poolEnd.code);
  health.close();
  idle.destroy();
});

test('new streams after shutdown cannot connect and shutdown is idempotent', async () => {
  relay = await startTestRelay();
  await Promise.all([relay.server.shutdown(), relay.server.shutdown()]);
  const end = await new StreamReader(relay.client.watchKvPoolCatalog(subscriber())).end();
  expect(end.code).toBe(grpc.status.UNAVAILABLE);
});
