// The consumer's HTTP/2 receive window, seen from a real HTTP/2 server on loopback: what the client
// advertises per stream (its SETTINGS) and for the connection (its WINDOW_UPDATE). A busy pool's
// deltas are larger than node's 64 KiB default, which made a briefly late consumer hold the relay's
// sends back (BENCHMARKS.md 2026-12-07, latency-2).
import * as http2 from 'http2';
import type { AddressInfo } from 'net';
import { DEFAULT_CLIENT_FLOW_CONTROL_WINDOW_BYTES } from '../../src/config/defaults';
import type { RelayClient } from '../../src/client/relay-client';
import { waitFor } from '../support/waitFor';
import { testClient } from './helpers';

interface Seen {
  streamWindow?: number;
  connectionWindow?: number;
}

async function windowServer(): Promise<{ server: http2.Http2Server; address: string; seen: Seen }> {
  const seen: Seen = {};
  const server = http2.createServer();
  server.on('session', (session) => {
    session.on('remoteSettings', (settings) => (seen.streamWindow = settings.initialWindowSize));
    // The connection window the client opened: the server may send this much before it hears back.
    const sample = setInterval(() => {
      if (session.destroyed) return clearInterval(sample);
      seen.connectionWindow = session.state.remoteWindowSize;
    }, 5);
    session.on('close', () => clearInterval(sample));
  });
  server.on('stream', (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc' }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, address: `127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe('RelayClient HTTP/2 receive window', () => {
  let client: RelayClient | undefined;
  let server: http2.Http2Server | undefined;

  afterEach(async () => {
    client?.close();
    client = undefined;
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });

  it.each([
    ['the default', undefined, DEFAULT_CLIENT_FLOW_CONTROL_WINDOW_BYTES],
    ['a configured one', 1024 * 1024, 1024 * 1024],
  ])('advertises %s for each stream and for the connection', async (_name, option, expected) => {
    const s = await windowServer();
    server = s.server;
    client = testClient(s.address, option === undefined ? {} : { flowControlWindowBytes: option });
    client.start();
    await waitFor(() => s.seen.streamWindow !== undefined && s.seen.connectionWindow === expected, `client window ${expected}`);
    expect(s.seen.streamWindow).toBe(expected);
    expect(expected).toBeGreaterThan(65_535); // more than node's default, or the test shows nothing
  });

  it('rejects a window outside HTTP/2 bounds up front', () => {
    expect(() => testClient('127.0.0.1:1', { flowControlWindowBytes: 1000 })).toThrow(RangeError);
    expect(() => testClient('127.0.0.1:1', { flowControlWindowBytes: 2 ** 31 })).toThrow(RangeError);
    expect(() => testClient('127.0.0.1:1', { flowControlWindowBytes: 1_500_000.5 })).toThrow(RangeError);
  });
});
