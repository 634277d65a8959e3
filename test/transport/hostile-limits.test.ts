// Transport bounds on what a peer may send or hold: a small request size, a cap on connections,
// a cap on concurrent HTTP/2 streams per connection, idle and callless connections closed
// (per-source limits and the reserved slots: hostile-connections.test.ts).
import * as http2 from 'http2';
import * as net from 'net';
import { status } from '@grpc/grpc-js';
import { MAX_CONCURRENT_STREAMS_PER_CONNECTION, MAX_REQUEST_BYTES } from '../../src/config/limits';
import { encodeMessage } from '../../src/wire/codec';
import { bytesCallEnd, bytesClient, startTestRelay, subscriber, type TestRelay } from './helpers';
import { RawSessions, rawCall } from './raw-client';
import { waitFor } from '../support/waitFor';

let relay: TestRelay;
const sessions = new RawSessions();
afterEach(async () => {
  sessions.destroyAll();
  await relay?.close();
});

const session = (): http2.ClientHttp2Session => sessions.connect(relay.server.address);

/** A catalog request padded with an unknown field (protobuf readers skip it) to exactly `size` bytes. */
function paddedRequest(size: number): Buffer {
  const valid = encodeMessage('WatchKvPoolCatalogRequest', subscriber());
  // Field 2047, wire type 2: tag varint fa 7f, then the length as a 3-byte varint.
  const padding = size - valid.length - 2 - 3;
  const len = Buffer.from([(padding & 0x7f) | 0x80, ((padding >> 7) & 0x7f) | 0x80, padding >> 14]);
  return Buffer.concat([valid, Buffer.from([0xfa, 0x7f]), len, Buffer.alloc(padding)]);
}

test('a request above the small receive limit is RESOURCE_EXHAUSTED on every method; one just below is read', async () => {
  relay = await startTestRelay();
  const client = bytesClient(relay.server.address);
  const big = paddedRequest(MAX_REQUEST_BYTES + 1);
  expect(big.length).toBe(MAX_REQUEST_BYTES + 1);
  for (const method of ['GetRelayInfo', 'WatchKvPoolCatalog', 'SubscribeKvPool', 'SubscribeServingReadiness', 'SubscribeKvPoolLoad', 'SubscribeServingLoad']) {
    const end = await bytesCallEnd(client, method, big);
    expect({ method, code: end.code }).toEqual({ method, code: status.RESOURCE_EXHAUSTED });
  }
  // Just within the limit the request reaches the service (and opens the stream).
  const fits = await bytesCallEnd(client, 'WatchKvPoolCatalog', paddedRequest(MAX_REQUEST_BYTES));
  expect(fits).toMatchObject({ code: status.OK, messages: 1 });
  client.close();
});

test('connections beyond maxConnections are closed on accept; a freed slot admits a new one', async () => {
  relay = await startTestRelay({ limits: { maxConnections: 4, maxConnectionsPerIp: 4 } });
  const catalog = (s: http2.ClientHttp2Session) => rawCall(s, 'WatchKvPoolCatalog', 'WatchKvPoolCatalogRequest', subscriber(), 'KvPoolCatalogUpdate');
  // One after the other: the first call makes this source known, so it may take the reserved slot too.
  const held: http2.ClientHttp2Session[] = [];
  for (let i = 0; i < 4; i++) {
    held.push(session());
    await catalog(held[i]).headers;
  }
  expect(relay.server.connections).toBe(4);

  const refused = session();
  const closed = new Promise<void>((resolve) => refused.once('close', () => resolve()));
  const call = catalog(refused);
  await closed;
  expect((await call.end()).code).toBeLessThan(0); // no status: the connection was closed unanswered
  expect(relay.server.connections).toBe(4);

  held[0].destroy();
  await waitFor(() => relay.server.connections === 3, 'the freed connection to be gone');
  await catalog(session()).headers;
  expect(relay.server.connections).toBe(4);
});

test(`one connection has at most ${MAX_CONCURRENT_STREAMS_PER_CONNECTION} streams open; the rest wait for a free one`, async () => {
  relay = await startTestRelay({ limits: { maxCatalogSubscribers: 1000 } });
  const s = session();
  await new Promise<void>((resolve) => s.once('remoteSettings', () => resolve()));
  expect(s.remoteSettings.maxConcurrentStreams).toBe(MAX_CONCURRENT_STREAMS_PER_CONNECTION);
  const extra = 5;
  const calls = Array.from({ length: MAX_CONCURRENT_STREAMS_PER_CONNECTION + extra }, () =>
    rawCall(s, 'WatchKvPoolCatalog', 'WatchKvPoolCatalogRequest', subscriber(), 'KvPoolCatalogUpdate'),
  );
  await Promise.all(calls.slice(0, MAX_CONCURRENT_STREAMS_PER_CONNECTION).map((c) => c.headers));
  await waitFor(() => relay.server.stats().subscribers.catalog === MAX_CONCURRENT_STREAMS_PER_CONNECTION, 'the admitted streams');
  // The client holds the rest back (the server would refuse them); closing streams lets them in.
  for (const c of calls.slice(0, extra)) c.stream.close();
  await Promise.all(calls.slice(MAX_CONCURRENT_STREAMS_PER_CONNECTION).map((c) => c.headers));
  await waitFor(() => relay.server.stats().subscribers.catalog === MAX_CONCURRENT_STREAMS_PER_CONNECTION, 'the waiting streams admitted');
});

test('a streamless connection is closed after connectionIdleMs; one with a stream is kept', async () => {
  relay = await startTestRelay({ timing: { connectionIdleMs: 300 } });
  const idle = session();
  const busy = session();
  await rawCall(busy, 'WatchKvPoolCatalog', 'WatchKvPoolCatalogRequest', subscriber(), 'KvPoolCatalogUpdate').headers;
  const idleClosed = new Promise<void>((resolve) => idle.once('close', () => resolve()));
  idle.ping(() => undefined); // the HTTP/2 session is up, it just never sends a request
  await idleClosed;
  await waitFor(() => relay.server.connections === 1, 'the idle connection to be gone');
  expect(busy.closed).toBe(false);
});

test('a connection that starts no call within connectionFirstCallMs is closed (silent, half a preface, an HTTP/2 session that only pings); a gRPC one is kept', async () => {
  relay = await startTestRelay({ timing: { connectionFirstCallMs: 300 } });
  const busy = session();
  await rawCall(busy, 'WatchKvPoolCatalog', 'WatchKvPoolCatalogRequest', subscriber(), 'KvPoolCatalogUpdate').headers;
  const [host, port] = [relay.server.address.split(':')[0], Number(relay.server.address.split(':')[1])];
  // Accepted after the gRPC connection, so their deadlines pass last: once they are gone, its has passed.
  const silent = net.connect(port, host);
  const halfPreface = net.connect(port, host, () => halfPreface.write('PRI * HTTP/2.0\r\n'));
  const pinging = session();
  pinging.ping(() => undefined); // a whole HTTP/2 session (preface, SETTINGS, PING), never a request
  const closed = (s: net.Socket) => new Promise<void>((resolve) => s.resume().once('close', () => resolve()));
  await Promise.all([closed(silent), closed(halfPreface), new Promise<void>((resolve) => pinging.once('close', () => resolve()))]);
  await waitFor(() => relay.server.connections === 1, 'the callless connections to be gone');
  expect(relay.server.connectionStats().firstCallTimeoutsTotal).toBe(3);
  expect(busy.closed).toBe(false);
  await rawCall(busy, 'WatchKvPoolCatalog', 'WatchKvPoolCatalogRequest', subscriber(), 'KvPoolCatalogUpdate').headers;
});
