// A long-running consumer given its TLS files (tls.caFile/certFile/keyFile) picks up a rotated client
// certificate on its next connection, without a restart: rotated to a subject the relay's allow-list
// refuses, its next connection is refused; rotated back to a listed one, it is served again. Real
// TLS on loopback through a TCP proxy whose reset forces the next connection; openssl certificates.
import * as fs from 'fs';
import * as grpc from '@grpc/grpc-js';
import { RelayClient } from '../../src/client/relay-client';
import { ShardedRelayClient } from '../../src/client/shards';
import type { ClientErrorEvent } from '../../src/client/stream-events';
import { clientTlsFromFlags } from '../../src/client/tls-flags';
import { clientChannel } from '../../src/security/client-tls';
import { startRelayServer, type RelayServer } from '../../src/transport/server';
import { CertificateFactory, type CertFiles } from '../support/certificates';
import { TcpProxy } from '../support/tcp-proxy';
import { TestSource } from '../support/test-source';
import { waitFor } from '../support/waitFor';
import { RELAY } from '../transport/helpers';

const certs = new CertificateFactory();
const ca = certs.ca('ca');
const relayCert = certs.server('relay', ca);
const routerA = certs.client('router-a', ca);
const routerB = certs.client('router-b', ca);
const routerA2 = certs.client('router-a-renewed', ca, '/CN=router-a');

let server: RelayServer | undefined;
let proxy: TcpProxy | undefined;
let consumer: { close(): void } | undefined;
afterEach(async () => {
  consumer?.close();
  await proxy?.close();
  await server?.shutdown();
  consumer = proxy = server = undefined;
});
afterAll(() => certs.remove());

/** Each file replaced atomically, one after the other, as most rotation tools do. */
function install(from: CertFiles, to: CertFiles): void {
  for (const [src, dst] of [[from.cert, to.cert], [from.key, to.key]]) {
    fs.copyFileSync(src, `${dst}.tmp`);
    fs.renameSync(`${dst}.tmp`, dst);
  }
}

interface Consumer {
  catalog(): unknown;
  on(event: 'error', listener: (e: ClientErrorEvent) => void): unknown;
  start(): void;
  close(): void;
}

const makers: [string, (address: string, options: ConstructorParameters<typeof RelayClient>[1]) => Consumer][] = [
  ['RelayClient', (address, options) => new RelayClient(address, options)],
  ['ShardedRelayClient', (address, options) => new ShardedRelayClient([address], options)],
];

describe.each(makers)('%s with certificate files', (_name, make) => {
  it('its next connection presents the rotated certificate: refused when the allow-list does not list it, served again when it does', async () => {
    server = await startRelayServer({
      source: new TestSource(),
      bind: '127.0.0.1:0',
      relay: RELAY,
      tls: { cert: relayCert.cert, key: relayCert.key, ca: ca.cert, requireClientCert: true, allowedSubjects: ['router-a'] },
    });
    proxy = await new TcpProxy({ host: '127.0.0.1', port: server.port }).start();
    const live = { cert: `${certs.dir}/live-${_name}.pem`, key: `${certs.dir}/live-${_name}-key.pem` };
    install(routerA, live);
    const client = make(proxy.endpoint, {
      subscriberId: 'router',
      tls: { caFile: ca.cert, certFile: live.cert, keyFile: live.key },
      backoff: { initialMs: 20, maxMs: 200 },
    });
    consumer = client;
    const errors: ClientErrorEvent[] = [];
    client.on('error', (e) => errors.push(e));
    client.start();
    await waitFor(() => client.catalog() !== undefined, 'the catalog over the first connection', 15_000);
    expect(errors.filter((e) => e.code === grpc.status.PERMISSION_DENIED)).toEqual([]);

    // The open connection keeps its certificate; each reset makes the client connect again, and
    // once its files were polled (every second) that connection presents router-b.
    install(routerB, live);
    const denied = (): ClientErrorEvent | undefined => errors.find((e) => e.code === grpc.status.PERMISSION_DENIED);
    await waitFor(() => denied() !== undefined || (proxy!.reset(), false), 'a call refused for router-b', 20_000, 300);
    expect(denied()!.message).toContain('CN=router-b');
    await waitFor(() => client.catalog() === undefined, 'the catalog dropped once its stream is refused', 15_000);

    install(routerA2, live);
    await waitFor(() => client.catalog() !== undefined || (proxy!.reset(), false), 'the catalog again with the renewed router-a certificate', 20_000, 300);
  }, 90_000);
});

describe('client certificate files', () => {
  it('are checked at once: a missing file or a key of another certificate is an error naming the file', () => {
    expect(() => clientChannel({ caFile: `${certs.dir}/missing.pem` })).toThrow(`tls.ca ${certs.dir}/missing.pem: cannot read: ENOENT`);
    expect(() => clientChannel({ caFile: ca.cert, certFile: routerA.cert, keyFile: routerB.key })).toThrow(/tls\.key .*does not match the certificate/);
    expect(() => clientChannel({ caFile: ca.cert, certFile: routerA.cert })).toThrow(TypeError);
    expect(() => clientChannel({ ca: fs.readFileSync(ca.cert), caFile: ca.cert })).toThrow(TypeError);
    // The CLIs' flags name the file by its flag.
    expect(() => clientTlsFromFlags({ 'tls-ca': `${certs.dir}/missing.pem` })).toThrow(`--tls-ca ${certs.dir}/missing.pem: cannot read: ENOENT`);
    expect(clientTlsFromFlags({ 'tls-ca': ca.cert, 'tls-cert': routerA.cert, 'tls-key': routerA.key })).toEqual({ caFile: ca.cert, certFile: routerA.cert, keyFile: routerA.key, servername: undefined });
  });
});
