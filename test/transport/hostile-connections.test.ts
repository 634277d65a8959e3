// Connection slots are not for the taking before authentication (src/transport/admission.ts): raw
// sockets that send only the HTTP/2 preface, from one source or from several, must not lock out a
// health check; a source holds at most maxConnectionsPerIp; a quarter of the slots stays for
// sources that made an authorized call; a connection that starts no call (or does not finish its
// TLS handshake) within connectionFirstCallMs is closed. Loopback sources 127.0.0.2-127.0.0.9 stand
// for other hosts (Linux routes all of 127/8 to lo); the health checker connects from 127.0.0.1.
import * as fs from 'fs';
import * as net from 'net';
import * as tls from 'tls';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { clientChannel, readClientTlsFiles } from '../../src/security/client-tls';
import { startRelayServer, type RelayServer } from '../../src/transport/server';
import { getRelayInfo, makeClient } from '../../src/wire/service';
import { CertificateFactory } from '../support/certificates';
import { TestSource } from '../support/test-source';
import { waitFor } from '../support/waitFor';
import { MARKER, RELAY, startTestRelay, type TestRelay } from './helpers';

const PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';
const CHECK_MS = 5_000;

let relay: TestRelay | undefined;
let tlsServer: RelayServer | undefined;
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await relay?.close();
  await tlsServer?.shutdown();
  relay = tlsServer = undefined;
});

type HealthClient = grpc.Client & { check(req: { service: string }, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: { status: string }) => void): void };

/** One health check on a connection of its own (from 127.0.0.1): 'SERVING' or the gRPC error code's name. */
async function healthCheck(address: string): Promise<string> {
  const Client = grpc.makeGenericClientConstructor(healthService, 'Health');
  const client = new Client(address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as HealthClient;
  try {
    return await new Promise<string>((resolve) =>
      client.check({ service: '' }, { deadline: Date.now() + CHECK_MS }, (e, r) => resolve(e ? grpc.status[e.code] : r!.status)),
    );
  } finally {
    client.close();
  }
}

/** A TCP connection from `localAddress` that sends only `bytes`; resolves once connected. */
async function rawSocket(port: number, localAddress: string, bytes = PREFACE): Promise<net.Socket> {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress });
  sockets.push(socket);
  socket.on('error', () => undefined).resume();
  await new Promise((resolve) => socket.once('connect', resolve));
  if (bytes) socket.write(bytes);
  return socket;
}

const closed = (s: net.Socket): Promise<void> => new Promise((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())));
const refusals = (server: RelayServer): number => Object.values(server.connectionStats().refusedTotal).reduce((a, b) => a + b, 0);

test('16 preface-only sockets from one source with maxConnections 16: it keeps 1/8 of the slots, a new health checker still gets in', async () => {
  relay = await startTestRelay({ limits: { maxConnections: 16 }, timing: { connectionFirstCallMs: 60_000 } });
  const { server } = relay;
  for (let i = 0; i < 16; i++) await rawSocket(server.port, '127.0.0.2');
  await waitFor(() => server.connectionStats().pending + refusals(server) === 16, 'every attempt decided');
  expect(server.connectionStats()).toMatchObject({ pending: 2, refusedTotal: { per_ip: 14, total: 0, reserved: 0 } });
  // A source never seen before (the checker) is admitted: the attacker holds 2 of the 12 unreserved slots.
  expect(await healthCheck(server.address)).toBe('SERVING');
});

test('preface-only sockets from several sources fill only the unreserved slots; a known health checker still gets in, a new source does not', async () => {
  relay = await startTestRelay({ limits: { maxConnections: 16, maxConnectionsPerIp: 4 }, timing: { connectionFirstCallMs: 60_000 } });
  const { server } = relay;
  // The checker has made a call before the attack (a probe runs periodically), on a connection since closed.
  expect(await healthCheck(server.address)).toBe('SERVING');
  await waitFor(() => server.connections === 0, 'the checker’s connection to close');

  // 4 sources x 4 sockets: 12 (16 less the 4 reserved) are held, the rest refused.
  for (let i = 0; i < 16; i++) await rawSocket(server.port, `127.0.0.${2 + (i % 4)}`);
  await waitFor(() => server.connectionStats().pending + refusals(server) === 16, 'every attempt decided');
  expect(server.connectionStats()).toMatchObject({ pending: 12, refusedTotal: { reserved: 4, per_ip: 0, total: 0 } });
  // Boundary: one more new source is refused; the known checker takes a reserved slot.
  const newcomer = await rawSocket(server.port, '127.0.0.9');
  await closed(newcomer);
  expect(server.connectionStats().refusedTotal.reserved).toBe(5);
  expect(await healthCheck(server.address)).toBe('SERVING');
});

test('per-source boundary: maxConnectionsPerIp are kept, the next is refused, a closed one frees its place', async () => {
  relay = await startTestRelay({ limits: { maxConnectionsPerIp: 2 }, timing: { connectionFirstCallMs: 60_000 } });
  const { server } = relay;
  const [a] = [await rawSocket(server.port, '127.0.0.3'), await rawSocket(server.port, '127.0.0.3')];
  await waitFor(() => server.connectionStats().pending === 2, 'two admitted');
  await closed(await rawSocket(server.port, '127.0.0.3'));
  expect(server.connectionStats().refusedTotal.per_ip).toBe(1);
  // Another source is not affected.
  await rawSocket(server.port, '127.0.0.4');
  await waitFor(() => server.connectionStats().pending === 3, 'the other source admitted');
  a.destroy();
  await waitFor(() => server.connectionStats().pending === 2, 'the closed one gone');
  const again = await rawSocket(server.port, '127.0.0.3');
  await waitFor(() => server.connectionStats().pending === 3, 'a new one from the source admitted');
  expect(again.destroyed).toBe(false);
  expect(server.connectionStats().refusedTotal.per_ip).toBe(1);
});

test('TLS: a connection that does not finish its handshake, or finishes it and starts no call, is closed after connectionFirstCallMs; a real client is served', async () => {
  const certs = new CertificateFactory();
  try {
    const ca = certs.ca('ca');
    const relayCert = certs.server('relay', ca);
    tlsServer = await startRelayServer({
      source: new TestSource(),
      bind: '127.0.0.1:0',
      relay: RELAY,
      tls: { cert: relayCert.cert, key: relayCert.key, requireClientCert: false },
      options: { timing: { connectionFirstCallMs: 300 } },
    });
    const server = tlsServer;
    const { credentials, channelOptions } = clientChannel(readClientTlsFiles({ ca: ca.cert }));
    const client = makeClient(server.address, { credentials, channelOptions: { ...channelOptions, 'grpc.use_local_subchannel_pool': 1 } });
    try {
      await getRelayInfo(client, { contractMarker: MARKER }, { deadline: Date.now() + CHECK_MS });
      const silent = await rawSocket(server.port, '127.0.0.2', '');
      // A ClientHello's first bytes (a TLS record header and part of a handshake message), then nothing.
      const partialHello = await rawSocket(server.port, '127.0.0.2', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03');
      // A complete handshake, then no HTTP/2 at all.
      const tcp = net.connect({ port: server.port, host: '127.0.0.1', localAddress: '127.0.0.2' });
      const handshaken = tls.connect({ socket: tcp, ca: fs.readFileSync(ca.cert), ALPNProtocols: ['h2'], servername: 'localhost' });
      sockets.push(handshaken);
      handshaken.on('error', () => undefined).resume();
      await new Promise((resolve) => handshaken.once('secureConnect', resolve));
      await Promise.all([closed(silent), closed(partialHello), closed(handshaken)]);
      await waitFor(() => server.connectionStats().pending === 0, 'the server side of the three to close');
      expect(server.connectionStats()).toMatchObject({ firstCallTimeoutsTotal: 3, established: 1 });
      // The client that called keeps its connection and is still served.
      await getRelayInfo(client, { contractMarker: MARKER }, { deadline: Date.now() + CHECK_MS });
      expect(server.connectionStats().established).toBe(1);
    } finally {
      client.close();
    }
  } finally {
    certs.remove();
  }
});
